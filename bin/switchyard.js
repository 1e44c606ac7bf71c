#!/usr/bin/env node
// The switchyard CLI with the full distribution. In a clone it runs the TypeScript sources with Node's type
// stripping (docs/adr/0001); installed from the npm package, where the sources are not shipped, it runs the
// bundle built into build/bundle/ when the package was packed (docs/adr/0022, 0057).
import { existsSync, readFileSync } from 'node:fs';
import * as nodeModule from 'node:module';
import { fileURLToPath } from 'node:url';
import { nodeVersionProblem } from './check-node.js';
import { missingNodeFlags, withEnvDefaults } from './node-flags.js';

const { version, engines } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
// First, on any Node: an older one than `engines` fails later with errors that do not say why.
const problem = nodeVersionProblem(engines?.node);
if (problem) {
  process.stderr.write(`switchyard: ${problem}\n`);
  process.exit(1);
}

const fromSources = existsSync(new URL('../kernel/boot/dist-entry.ts', import.meta.url));

// The compile cache on before the first TypeScript module (dist-entry.ts): a warm start then takes its stripped code
// from the cache instead of loading Node's TypeScript stripper, in this process and in the re-executed one (about
// 15 MiB of idle RSS and 150 ms of CPU, docs/perf.md "Startup, session 4"). dist-entry.ts turns it on again for
// trimmed distributions; NODE_DISABLE_COMPILE_CACHE=1 still turns it off.
if (typeof nodeModule.enableCompileCache === 'function') {
  try {
    nodeModule.enableCompileCache();
  } catch {
    // An unwritable cache directory only costs the speed-up.
  }
}

// The Node options of bin/node-flags.js this process was not started with: the re-run below or dist-entry.ts's
// re-execution adds them, with the environment's defaults (ADR 0041, 0057).
const nodeFlags = { missing: missingNodeFlags(process.execArgv, process.env.NODE_OPTIONS), env: withEnvDefaults(process.env) };

if (fromSources && !process.features.typescript) {
  // Node 22.15-22.17: type stripping is behind a flag; re-run this script with it.
  const flags = ['--experimental-strip-types', '--disable-warning=ExperimentalWarning', ...nodeFlags.missing];
  // Imported here only: node:child_process (with net and dgram) is not needed on the usual path.
  const { spawn } = await import('node:child_process');
  const child = spawn(process.execPath, [...flags, ...process.argv.slice(1)], { stdio: 'inherit', env: nodeFlags.env });
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
} else {
  // The same start as a trimmed distribution's (kernel/boot/dist-entry.ts): re-execution with the missing Node
  // options, compile cache, exit once output is flushed; here with the full preset.
  // Literal specifiers (no computed paths), so that the import-boundary test and bundlers can follow them.
  const { startDistribution } = fromSources ? await import('../kernel/boot/dist-entry.ts') : await import('../build/bundle/kernel.boot.dist-entry.js');
  await startDistribution({
    version,
    nodeFlags,
    schemaFile: fileURLToPath(new URL('../schemas/switchyard.schema.json', import.meta.url)),
    load: async () => {
      const [{ fullPreset }, { FIRST_PARTY_KEYS }] = fromSources
        ? await Promise.all([import('../plugins/presets/full.ts'), import('../plugins/presets/catalog.ts')])
        : await Promise.all([import('../build/bundle/plugins.presets.full.js'), import('../build/bundle/plugins.presets.catalog.js')]);
      return { preset: fullPreset, knownKeys: FIRST_PARTY_KEYS };
    },
  });
}
