import * as nodeModule from 'node:module';
import { readableFatalStacks } from '../telemetry/readable-stack.ts';
import { PASTE_CHECK_ARG, WORKER_THREAD_ARG } from './worker-mark.ts';

/**
 * How the CLI starts, for bin/switchyard.js (the full preset, from the sources) and for a trimmed distribution
 * (`npm run build:dist`, docs/adr/0012), whose generated entry calls this with the preset it was built for. Everything heavy (the CLI, the kernel, the preset) is loaded only after the process
 * is set up, through `load` and a dynamic import, so a re-execution (below) costs no module parsing.
 */
export interface DistributionStart {
  /** The version printed by `--version` and checked against plugins' peer ranges. */
  readonly version: string;
  /** Loads the preset and the names of every first-party plugin (so a left-out key is "not installed"). */
  readonly load: () => Promise<{ readonly preset: readonly unknown[]; readonly knownKeys: Iterable<string> }>;
  /** The distribution's JSON Schema file, named in the header of the config `switchyard init` writes. */
  readonly schemaFile?: string;
  /**
   * Node options the process must run with (bin/node-flags.js: the young-generation cap, ADR 0041). V8 reads them
   * only when it creates the heap, so a process started without one re-executes itself in place (same PID) with
   * them. A value the user gave for one wins.
   */
  readonly nodeFlags?: {
    /** The flags of the list that this process was not started with. */
    readonly missing: readonly string[];
    /** The environment of the re-execution (the arena cap of ADR 0041 unless the environment sets one). */
    readonly env: NodeJS.ProcessEnv;
  };
}

/** Run the CLI of a distribution; sets `process.exitCode` and exits once output is flushed. */
export async function startDistribution(start: DistributionStart): Promise<void> {
  // A worker thread of a supervisor (`config.workers` > 1) runs this same entry: it serves, and nothing else.
  // Recognised by its argument, not node:worker_threads' `isMainThread`: the main thread never loads that module.
  if (process.argv.includes(WORKER_THREAD_ARG)) {
    const [{ runWorker, workerDataOf }, loaded] = await Promise.all([import('./worker-main.ts'), start.load()]);
    const data = workerDataOf();
    if (data) return runWorker(loaded, data);
  }
  // A paste-check thread of the admin UI's validator (kernel/config/paste-check.ts) runs a bundle as its module: the
  // import checks what the thread was given and answers.
  if (process.argv.includes(PASTE_CHECK_ARG)) {
    await import('../config/paste-check.ts');
    return;
  }
  // An uncaught exception's stack, as Node prints it, names the TypeScript sources (ADR 0065).
  readableFatalStacks();
  // V8 reads its heap flags only when it creates the heap: re-execute in place (same PID) with the missing ones.
  const proc = process as { execve?: (file: string, args: string[], env: NodeJS.ProcessEnv) => never };
  const flags = start.nodeFlags;
  if (flags && flags.missing.length > 0 && typeof proc.execve === 'function') {
    try {
      proc.execve(process.execPath, [process.execPath, ...flags.missing, ...process.execArgv, ...process.argv.slice(1)], flags.env);
    } catch {
      // execve is unavailable here (Windows, a worker): run with V8's default sizing.
    }
  }
  // V8's compiled code of the bundle on disk: later starts skip compiling it. NODE_DISABLE_COMPILE_CACHE=1 turns
  // it off; Node < 22.1 has no such function.
  const enableCompileCache = (nodeModule as { enableCompileCache?: () => unknown }).enableCompileCache;
  if (typeof enableCompileCache === 'function') {
    try {
      enableCompileCache();
    } catch {
      // An unwritable cache directory only costs the speed-up.
    }
  }
  const [{ main, exitAfterOutput }, { preset, knownKeys }] = await Promise.all([import('./cli.ts'), start.load()]);
  const code = await main(process.argv.slice(2), { preset, knownKeys, version: start.version, schemaFile: start.schemaFile, entry: process.argv[1] });
  process.exitCode = code;
  // Exit once shutdown has completed and stdout/stderr are flushed (a pipe is written asynchronously); a stopped
  // gateway waits for them only until its deadline.
  await exitAfterOutput(code);
}
