import { resolve } from 'node:path';
import { assembleSchema } from '../config/assemble-schema.ts';
import { checkPluginSchemas } from '../config/plugin-schemas.ts';
import { ConfigLoadError } from '../config/format-issues.ts';
import { readConfigFile } from '../config/load-config.ts';
import { ValidatorCodeCache } from '../config/validator-cache.ts';
import { PluginRegistryError } from '../registry/registry.ts';
import { pluginLabel } from '../sdk/index.ts';
import { keepServingWithoutStdout, LogSink, outputWritten } from '../telemetry/logger.ts';
import { compactHeapSoon } from './compact-heap.ts';
import { createGateway } from './container.ts';
import { WorkerStartError, workerCountOf as countWorkers } from './worker-count.ts';
import type { ConfigInput } from './gateway.ts';
import { buildRegistry, configPluginList, placePluginError } from './build-registry.ts';
import { DEFAULT_INIT_FILE, launchCommand, writeStarterConfig } from './init.ts';
import { unknownArgument } from './unknown-argument.ts';
import { stopWhenNpmLauncherGoes } from './launcher-watch.ts';

/** What a distribution (the bin script, a trimmed bundle) hands the CLI. */
export interface Distribution {
  readonly preset: readonly unknown[];
  readonly knownKeys?: Iterable<string>;
  readonly version: string;
  /** The JSON Schema file shipped with the distribution, named in the header of `switchyard init`'s config. */
  readonly schemaFile?: string;
  /** The distribution's entry module, run by each worker thread when `config.workers` is above 1. */
  readonly entry?: string | URL;
}

const USAGE = `Usage: switchyard [options]
       switchyard schema [-f FILE]     print the JSON Schema of the installed plugins
       switchyard plugins [-f FILE]    list the installed plugins
       switchyard init [-f FILE] [--force]
                                       write a starter config (default ${DEFAULT_INIT_FILE})
       switchyard keys COMMAND ...     manage virtual keys (switchyard keys --help)

Options:
  -f, --file FILE      config file (YAML or JSON), watched and reloaded on change
  -c, --config TEXT    inline config (YAML or JSON)
      --validate-only  load and check the config, then exit (0 valid, 1 invalid)
      --force          init: overwrite an existing file
  -V, --version        print the version
  -h, --help           this text
`;

interface Args {
  command: 'run' | 'schema' | 'plugins' | 'init' | 'help' | 'version';
  file?: string;
  inline?: string;
  validateOnly: boolean;
  force: boolean;
}

/** Every word parseArgs takes (`keys` is dispatched before it), for the did-you-mean of an unknown one. */
const KNOWN_ARGS = ['schema', 'plugins', 'init', 'keys', '--force', '-f', '--file', '-c', '--config', '--validate-only', '-V', '--version', '-h', '--help'];

function parseArgs(argv: readonly string[]): Args | string {
  const args: Args = { command: 'run', validateOnly: false, force: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const value = (): string | undefined => argv[++i];
    // A second config would silently replace the first: the gateway runs one.
    const twice = (a === '-f' || a === '--file' || a.startsWith('--file=')) && args.file !== undefined ? a : (a === '-c' || a === '--config' || a.startsWith('--config=')) && args.inline !== undefined ? a : undefined;
    if (twice !== undefined) return `${twice.split('=')[0]} is given twice: the gateway runs one config`;
    if (a === 'schema' || a === 'plugins' || a === 'init') args.command = a;
    else if (a === '--force') args.force = true;
    else if (a === '-f' || a === '--file') args.file = value();
    else if (a.startsWith('--file=')) args.file = a.slice(7);
    else if (a === '-c' || a === '--config') args.inline = value();
    else if (a.startsWith('--config=')) args.inline = a.slice(9);
    else if (a === '--validate-only') args.validateOnly = true;
    else if (a === '-V' || a === '--version') args.command = 'version';
    else if (a === '-h' || a === '--help') args.command = 'help';
    else if (a === 'keys') return '`keys` is a command of its own and comes first: switchyard keys COMMAND [options]';
    else return unknownArgument(a, KNOWN_ARGS);
    if ((a === '-f' || a === '--file' || a === '-c' || a === '--config') && argv[i] === undefined) return `${a} needs a value`;
  }
  return args;
}

/** The config text of `input` (read once more by whoever serves it). */
function readInput(input: ConfigInput): Promise<string> {
  return 'file' in input ? readConfigFile(input.file) : Promise.resolve(input.text);
}

function workerCountOf(input: ConfigInput, text: string): number {
  return countWorkers('file' in input ? input.file : input.name, text);
}

/** A plugin module that failed to load, shown at its `config.plugins` entry of the config given (-f or -c). */
async function placedPluginError(err: PluginRegistryError, args: Args): Promise<ConfigLoadError | undefined> {
  const input = configInput(args);
  if (err.module === undefined || !input) return undefined;
  try {
    return placePluginError(err, 'file' in input ? input.file : input.name, await readInput(input));
  } catch {
    return undefined; // the file is gone or unreadable since: the message without its place
  }
}

function configInput(args: Args): ConfigInput | undefined {
  if (args.inline !== undefined) return { name: '<inline>', text: args.inline };
  if (args.file !== undefined) return { file: resolve(args.file) };
  return undefined;
}

/**
 * One-shot output (`schema`, `plugins`, `keys`): a reader that stops early (`switchyard schema | head`) ends the command
 * quietly, as Unix tools do; another write failure (a full disk) is one line and exit 1, not a stack.
 */
function endQuietlyOnClosedPipe(): void {
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') process.stderr.write(`switchyard: cannot write the output: ${err.message}\n`);
    process.exit(err.code === 'EPIPE' ? 0 : 1);
  });
}

/** Set when a serving gateway stopped: the time by which its last log lines are given up (ADR 0132). */
let exitBy: number | undefined;

/** Exit with `code` once stdout and stderr are written; after a gateway stopped, at its deadline at the latest. */
export async function exitAfterOutput(code: number): Promise<void> {
  await outputWritten(exitBy);
  setImmediate(() => process.exit(code));
}

/** Run the CLI. Resolves with the exit code for commands that end; a running gateway resolves on shutdown. */
export async function main(argv: readonly string[], dist: Distribution): Promise<number> {
  if (argv[0] === 'keys') {
    // The commands other than serving load their modules when run (a start does not pay for them).
    endQuietlyOnClosedPipe(); // `switchyard keys list | head`
    const { KEYS_USAGE, keysMain } = await import('./keys-cli.ts');
    // Without a command it is a usage error (stderr, exit 2), said by keysMain as for any other; help asked for
    // anywhere (`keys create --help`) is help, not an unknown argument.
    if (argv.slice(1).some((a) => a === '--help' || a === '-h')) {
      process.stdout.write(KEYS_USAGE);
      return 0;
    }
    return keysMain(argv.slice(1), (s) => process.stdout.write(s), (s) => process.stderr.write(s));
  }
  const args = parseArgs(argv);
  if (typeof args === 'string') {
    process.stderr.write(`switchyard: ${args}\n\n${USAGE}`);
    return 2;
  }
  if (args.command === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  if (args.command === 'version') {
    process.stdout.write(`switchyard ${dist.version}\n`);
    return 0;
  }
  try {
    if (args.command === 'init') {
      const installed = new Set(dist.preset.map((p) => (p as { key?: unknown }).key).filter((k): k is string => typeof k === 'string'));
      const result = writeStarterConfig(args.file ?? DEFAULT_INIT_FILE, { force: args.force, schemaFile: dist.schemaFile, installed });
      if (!result.written) {
        process.stderr.write(`switchyard: ${result.file} exists; not overwritten (--force to replace it)\n`);
        return 1;
      }
      process.stdout.write(`wrote ${result.file}\nrun it: ${launchCommand()} -f ${args.file ?? DEFAULT_INIT_FILE}\n`);
      return 0;
    }
    if (args.command === 'schema' || args.command === 'plugins') {
      endQuietlyOnClosedPipe();
      const plugins = args.file ? configPluginList(args.file, await readConfigFile(args.file)) : [];
      const registry = await buildRegistry(dist.preset, plugins, args.file ? resolve(args.file) : undefined);
      if (args.command === 'schema') {
        const schema = assembleSchema(registry);
        checkPluginSchemas(registry, schema);
        process.stdout.write(`${JSON.stringify(schema, null, 2)}\n`);
      } else {
        const rows = registry.plugins().map(({ plugin, source }) => [
          pluginLabel(plugin),
          plugin.key,
          plugin.kind === 'slot' ? '' : (plugin.aliases ?? []).join(','),
          source.name,
          plugin.kind === 'slot' ? plugin.description : plugin.description,
        ]);
        const header = ['KIND', 'KEY', 'ALIASES', 'SOURCE', 'DESCRIPTION'];
        const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
        for (const row of [header, ...rows]) {
          process.stdout.write(`${row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ')}\n`);
        }
      }
      return 0;
    }
    if (args.inline !== undefined && args.file !== undefined) {
      process.stderr.write(`switchyard: -f FILE and -c TEXT are two configs: give one\n\n${USAGE}`);
      return 2;
    }
    const input = configInput(args);
    if (!input) {
      process.stderr.write(`switchyard: a config is required (-f FILE or -c TEXT)\n\n${USAGE}`);
      return 2;
    }
    // Validating prints only the verdict on stdout; warnings and lifecycle lines go to stderr.
    const sink = args.validateOnly ? new LogSink((chunk) => process.stderr.write(chunk)) : undefined;
    // A SIGHUP while starting (a reload sent as the service starts) would end the process (Node's default): it is
    // kept and acted on once the gateway is ready.
    let hupWhileStarting = false;
    const earlyHup = (): void => void (hupWhileStarting = true);
    // A SIGTERM (SIGINT) while starting would kill the process (Node's default), cutting what workers or binds already
    // serve: the stop is held until the start has settled (its waits are all bounded), then made as after it
    // (ADR 0139). A second signal still ends the process at once.
    let signalled = false;
    let stopRunning: (() => void) | undefined;
    const onSignal = (signal: NodeJS.Signals): void => {
      if (signalled) {
        process.stderr.write(`switchyard: second ${signal}, exiting now\n`);
        process.exit(1);
      }
      signalled = true;
      if (stopRunning) stopRunning();
      else process.stderr.write(`switchyard: ${signal} while starting; stopping once started\n`);
    };
    if (!args.validateOnly) {
      process.on('SIGTERM', onSignal);
      process.on('SIGINT', onSignal);
      process.on('SIGHUP', earlyHup);
      stopWhenNpmLauncherGoes(() => {
        if (signalled) return;
        process.stderr.write('switchyard: the npm process that started the gateway is gone; stopping\n');
        onSignal('SIGTERM');
      });
      keepServingWithoutStdout((err) => process.stderr.write(`switchyard: cannot write log lines to stdout (${err.code ?? err.message}): they are dropped from now on\n`));
    }
    const workers = dist.entry && !args.validateOnly ? workerCountOf(input, await readInput(input)) : 1;
    let running: { stop(): Promise<void>; reload(): Promise<boolean>; readonly drainTimeoutMs: number };
    if (workers > 1) {
      const { Supervisor } = await import('./supervisor.ts');
      const supervisor = new Supervisor({ entry: dist.entry!, config: input, count: workers, sink: new LogSink() });
      await supervisor.start();
      running = supervisor;
    } else {
      const validatorCache = ValidatorCodeCache.fromEnv();
      const gateway = createGateway({ preset: dist.preset, knownKeys: dist.knownKeys, config: input, validatorCache }, sink);
      if (args.validateOnly) {
        const text = await gateway.readText();
        const snapshot = await gateway.compile(text);
        snapshot.dispose();
        await gateway.stop();
        process.stdout.write('Configuration is valid!\n');
        return 0;
      }
      await gateway.start();
      compactHeapSoon();
      running = gateway;
    }
    return await new Promise<number>((done) => {
      // Signal handlers and the file watch do not keep Node's loop alive: a gateway serving no bind (a config without
      // binds, the admin listeners off) would end with the code 13 of an unsettled await. It runs until stopped, as
      // Envoy does, waiting for signals and for the file to name binds (ADR 0185).
      const alive = setInterval(() => undefined, 2 ** 31 - 1);
      stopRunning = (): void => {
        clearInterval(alive);
        const at = Date.now();
        // Log lines stdout has not taken are waited for until the drain deadline (at least a second after the
        // stop): a reader that stalls must not keep a stopped gateway from exiting (Envoy: drain, then exit).
        const stopped = (code: number): void => {
          exitBy = Math.max(at + running.drainTimeoutMs, Date.now() + 1000);
          done(code);
        };
        void running.stop().then(
          () => stopped(0),
          () => stopped(1),
        );
      };
      // SIGHUP (systemctl reload) re-reads the file, as the watcher does on a change; Node's default would exit.
      process.on('SIGHUP', () => {
        if ('file' in input) void running.reload();
      });
      process.off('SIGHUP', earlyHup);
      if (signalled) stopRunning();
      else if (hupWhileStarting && 'file' in input) void running.reload();
    });
  } catch (err) {
    if (err instanceof ConfigLoadError) {
      process.stderr.write(`switchyard: invalid config\n\n${err.message}\n`);
      return 1;
    }
    if (err instanceof WorkerStartError) {
      process.stderr.write(err.invalidConfig ? `switchyard: invalid config\n\n${err.message}\n` : `switchyard: ${err.message}\n`);
      return 1;
    }
    if (err instanceof PluginRegistryError) {
      const placed = await placedPluginError(err, args);
      if (placed) {
        process.stderr.write(`switchyard: invalid config\n\n${placed.message}\n`);
        return 1;
      }
      process.stderr.write(`switchyard: ${err.message} [${err.code}]\n`);
      return 1;
    }
    process.stderr.write(`switchyard: ${(err as Error)?.message ?? String(err)}\n`);
    return 1;
  }
}
