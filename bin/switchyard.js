#!/usr/bin/env node
// The switchyard CLI with the full distribution. The sources are TypeScript run by Node's type stripping;
// on Node versions where stripping is still behind a flag, re-run this script with the flag.
import { spawn } from 'node:child_process';

if (!process.features.typescript) {
  const child = spawn(process.execPath, ['--experimental-strip-types', '--disable-warning=ExperimentalWarning', ...process.argv.slice(1)], { stdio: 'inherit' });
  for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
} else {
  const { readFileSync } = await import('node:fs');
  const { main } = await import('../kernel/boot/cli.ts');
  const { fullPreset } = await import('../plugins/presets/full.ts');
  const { FIRST_PARTY_KEYS } = await import('../plugins/presets/catalog.ts');
  const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  const code = await main(process.argv.slice(2), { preset: fullPreset, knownKeys: FIRST_PARTY_KEYS, version });
  process.exitCode = code;
  // A stopped gateway may leave timers of closed pools; exit once shutdown has completed.
  setImmediate(() => process.exit(code));
}
