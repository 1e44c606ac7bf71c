#!/usr/bin/env node
// The switchyard CLI with the full distribution. The sources are TypeScript run by Node's type stripping;
// on Node versions where stripping is still behind a flag, re-run this script with the flag.
import { spawn } from 'node:child_process';
import * as nodeModule from 'node:module';

/**
 * V8's young generation, capped: each semi-space at most 4 MiB instead of growing to 16-64 MiB. Scavenges stay
 * short (about 0.5 ms instead of 16-20 ms under load) and the process keeps about 20 MiB less when idle and
 * about 100 MiB less after load, at the same CPU per request (docs/perf.md). V8 reads the flag when it creates
 * the heap only, so it must be on the command line: without it, this script re-executes itself in place with it
 * (same PID, about 25 ms). A `--max-semi-space-size` given in NODE_OPTIONS or on the command line wins.
 */
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
  if (!hasSemiSpaceFlag() && typeof process.execve === 'function') {
    try {
      process.execve(process.execPath, [process.execPath, `${SEMI_SPACE_FLAG}=${SEMI_SPACE_MIB}`, ...process.execArgv, ...process.argv.slice(1)], process.env);
    } catch {
      // execve is unavailable here (Windows, a worker): run with V8's default sizing.
    }
  }
  // Keep V8's compiled code and the stripped TypeScript on disk (os.tmpdir()/node-compile-cache, or
  // $NODE_COMPILE_CACHE), so later starts skip both: about 250 ms less to readiness (docs/perf.md).
  // NODE_DISABLE_COMPILE_CACHE=1 turns it off. Node < 22.1 has no such function.
  if (typeof nodeModule.enableCompileCache === 'function') {
    try {
      nodeModule.enableCompileCache();
    } catch {
      // An unwritable cache directory only costs the speed-up.
    }
  }
  const { readFileSync } = await import('node:fs');
  const { main } = await import('../kernel/boot/cli.ts');
  const { fullPreset } = await import('../plugins/presets/full.ts');
  const { FIRST_PARTY_KEYS } = await import('../plugins/presets/catalog.ts');
  const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  const code = await main(process.argv.slice(2), { preset: fullPreset, knownKeys: FIRST_PARTY_KEYS, version });
  process.exitCode = code;
  // A stopped gateway may leave timers of closed pools; exit once shutdown has completed and what was written to
  // stdout/stderr has been flushed (writes to a pipe are asynchronous: `schema | jq` would otherwise be cut short).
  let pending = 2;
  const done = () => {
    if (--pending === 0) setImmediate(() => process.exit(code));
  };
  process.stdout.write('', done);
  process.stderr.write('', done);
}
