import * as nodeModule from 'node:module';
import { isMainThread } from 'node:worker_threads';

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
}

/**
 * V8's young generation, capped: each semi-space at most 4 MiB instead of growing to 16-64 MiB. Scavenges stay short
 * and the process keeps about 20 MiB less when idle (docs/perf.md). V8 reads the flag when it creates the heap only,
 * so without it the process re-executes itself in place with it (same PID). A flag given by the user wins.
 */
const SEMI_SPACE_FLAG = '--max-semi-space-size';
const SEMI_SPACE_MIB = 4;

/**
 * glibc's malloc gives threads that allocate their own arenas (up to 8 per CPU) and keeps what they freed: V8's
 * helper threads (concurrent compilation and GC) and libuv's pool held 30-40 MiB of RSS under load that way. Two
 * arenas (the main thread's and one the helpers share) keep it down (ADR 0041, docs/perf.md "Tails and memory,
 * session 5"). Set on the re-execution below, so glibc reads it at start; a value in the environment wins, and other
 * C libraries (musl) ignore it.
 */
const MALLOC_ARENA_MAX = '2';

/** The environment of the re-executed process: this one, with the arena cap unless already set. */
export function reexecEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return env.MALLOC_ARENA_MAX === undefined ? { ...env, MALLOC_ARENA_MAX } : env;
}

function hasSemiSpaceFlag(): boolean {
  const given = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)];
  return given.some((a) => a.startsWith(SEMI_SPACE_FLAG) || a.startsWith('--max_semi_space_size'));
}

/** Run the CLI of a distribution; sets `process.exitCode` and exits once output is flushed. */
export async function startDistribution(start: DistributionStart): Promise<void> {
  // A worker thread of a supervisor (`config.workers` > 1) runs this same entry: it serves, and nothing else.
  if (!isMainThread) {
    const [{ runWorker, workerDataOf }, loaded] = await Promise.all([import('./worker-main.ts'), start.load()]);
    const data = workerDataOf();
    if (data) return runWorker(loaded, data);
  }
  // V8 reads the semi-space flag only when it creates the heap: re-execute in place (same PID) with it.
  const proc = process as { execve?: (file: string, args: string[], env: NodeJS.ProcessEnv) => never };
  if (!hasSemiSpaceFlag() && typeof proc.execve === 'function') {
    try {
      proc.execve(process.execPath, [process.execPath, `${SEMI_SPACE_FLAG}=${SEMI_SPACE_MIB}`, ...process.execArgv, ...process.argv.slice(1)], reexecEnv(process.env));
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
  const [{ main }, { preset, knownKeys }] = await Promise.all([import('./cli.ts'), start.load()]);
  const code = await main(process.argv.slice(2), { preset, knownKeys, version: start.version, schemaFile: start.schemaFile, entry: process.argv[1] });
  process.exitCode = code;
  // Exit once shutdown has completed and stdout/stderr are flushed (a pipe is written asynchronously).
  let pending = 2;
  const done = (): void => {
    if (--pending === 0) setImmediate(() => process.exit(code));
  };
  process.stdout.write('', done);
  process.stderr.write('', done);
}
