// The Node options and environment the CLI runs with: the one list (ADR 0041, 0057). Plain JavaScript with no
// imports, like check-node.js, so that the launcher reads it before anything else loads. bin/switchyard.js and a
// trimmed distribution's entry hand it to kernel/boot/dist-entry.ts, which re-executes the process in place with
// what is missing. Launch lines that give the flags up front (the Dockerfile's ENTRYPOINT and ENV, `npm start`) skip
// that second Node bootstrap; test/unit/node-flags.test.ts checks that they say the same as this file.

/**
 * - `--max-semi-space-size=2`: V8's young generation capped at 2 MiB semi-spaces (ADR 0041, 0089: 4 until session 11).
 *   Under load RSS is ~5 MiB lower than at 4, for more scavenges (up to twice as many) that each pause about as long
 *   (the survivors are the requests in flight) and promote no more. V8 rounds the cap up to a power of two, so 3 is
 *   4. V8 reads it only when it creates the heap: node's command line (or NODE_OPTIONS).
 * - `--no-maglev-destroy-on-background`: a finished Maglev compilation is freed by the thread that installs its code
 *   instead of by a task posted to V8's worker threads (ADR 0085). Under load those tasks wait behind the busy main
 *   thread on the gateway's core, and the waiting jobs' compiler zones (malloc) piled up to 10-13 MiB in the first
 *   seconds of load in half the starts; the holes they left stayed in RSS (docs/perf.md "Memory, session 10").
 */
export const NODE_FLAGS = ['--max-semi-space-size=2', '--no-maglev-destroy-on-background'];

/**
 * Set on the re-execution unless the environment has a value (the user's wins). Other C libraries (musl) ignore them.
 * - MALLOC_ARENA_MAX: glibc's malloc capped at one arena (ADR 0041, 0052): the free memory V8's helper threads leave
 *   in a second arena is ~6 MiB of RSS under load.
 * - MALLOC_MMAP_THRESHOLD_: allocations of 128 KiB and more always get their own mapping, returned when freed
 *   (ADR 0063). glibc's default starts there but raises the threshold to the size of each mapped block freed, so the
 *   multi-MiB zones of V8's optimizing compiler (undici's llhttp WebAssembly tiering up under load) move into the
 *   main heap and leave 5-12 MiB there that is never returned.
 */
export const NODE_ENV_DEFAULTS = { MALLOC_ARENA_MAX: '1', MALLOC_MMAP_THRESHOLD_: '131072' };

/**
 * The flags of NODE_FLAGS that neither node's command line (`execArgv`) nor NODE_OPTIONS gives, by name: a value the
 * user gave wins (`--max-semi-space-size=16`, or V8's `--max_semi_space_size 16`).
 * @param {readonly string[]} execArgv
 * @param {string | undefined} nodeOptions
 * @returns {string[]}
 */
export function missingNodeFlags(execArgv, nodeOptions) {
  const given = [...execArgv, ...(nodeOptions ?? '').split(/\s+/)].map(flagName);
  return NODE_FLAGS.filter((flag) => !given.includes(flagName(flag)));
}

/**
 * The environment of the re-executed process: `env` with NODE_ENV_DEFAULTS for the variables it does not set.
 * @param {NodeJS.ProcessEnv} env
 * @returns {NodeJS.ProcessEnv}
 */
export function withEnvDefaults(env) {
  const missing = Object.entries(NODE_ENV_DEFAULTS).filter(([name]) => env[name] === undefined);
  return missing.length === 0 ? env : { ...env, ...Object.fromEntries(missing) };
}

/**
 * `--max_semi_space_size=16` -> `--max-semi-space-size` (V8 takes either spelling); `--no-maglev-destroy-on-background`
 * and `--maglev-destroy-on-background` -> `--maglev-destroy-on-background` (a boolean the user turns either way wins).
 */
function flagName(arg) {
  return arg.split('=')[0].replaceAll('_', '-').replace(/^--no-/, '--');
}
