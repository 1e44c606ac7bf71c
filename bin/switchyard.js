#!/usr/bin/env node
// The switchyard CLI with the full distribution. The sources are TypeScript run by Node's type stripping;
// on Node versions where stripping is still behind a flag, re-run this script with the flag.
import { spawn } from 'node:child_process';

// The semi-space cap of kernel/boot/dist-entry.ts, put on the command line of the re-run below.
const SEMI_SPACE_FLAG = '--max-semi-space-size';
const SEMI_SPACE_MIB = 4;

function hasSemiSpaceFlag() {
  const given = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)];
  return given.some((a) => a.startsWith(SEMI_SPACE_FLAG) || a.startsWith('--max_semi_space_size'));
}

if (!process.features.typescript) {
  const flags = ['--experimental-strip-types', '--disable-warning=ExperimentalWarning'];
  if (!hasSemiSpaceFlag()) flags.push(`${SEMI_SPACE_FLAG}=${SEMI_SPACE_MIB}`);
  const child = spawn(process.execPath, [...flags, ...process.argv.slice(1)], { stdio: 'inherit' });
  for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
} else {
  // The same start as a trimmed distribution's (kernel/boot/dist-entry.ts): semi-space re-exec, compile cache, exit
  // once output is flushed; here with the full preset.
  const { readFileSync } = await import('node:fs');
  const { startDistribution } = await import('../kernel/boot/dist-entry.ts');
  const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  await startDistribution({
    version,
    load: async () => {
      const [{ fullPreset }, { FIRST_PARTY_KEYS }] = await Promise.all([import('../plugins/presets/full.ts'), import('../plugins/presets/catalog.ts')]);
      return { preset: fullPreset, knownKeys: FIRST_PARTY_KEYS };
    },
  });
}
