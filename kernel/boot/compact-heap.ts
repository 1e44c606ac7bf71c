import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * One V8 "last resort" collection shortly after the gateway is ready (ADR 0042). Starting leaves the young
 * generation at its largest (two semi-spaces at their cap, docs/perf.md) and the old generation full of the garbage of
 * loading and compiling; V8's memory reducer does not run on an idle process, so that is what an idle gateway kept:
 * this collection gives back about 7 MiB (85 -> 77 MiB with the quickstart). Traffic regrows the young generation
 * up to the same cap, so the cap's effect under load is unchanged. It costs a full collection (2-3 passes, about
 * 90 ms of CPU on a loaded machine) that holds the event loop: it runs only once the loop has been idle for a
 * while (under 5% busy for the last check interval), so requests that follow the start are not held; a gateway busy
 * from the first moment never runs it (it gives up after MAX_CHECKS).
 *
 * `gc` exists only in a context made while `--expose-gc` is on: the flag is turned on for that one context and off
 * again, so neither the gateway's context nor a plugin's `vm` context gets a `gc` global.
 */
export function compactHeapSoon(delayMs = CHECK_INTERVAL_MS): void {
  let last = performance.eventLoopUtilization();
  let checks = 0;
  const check = (): void => {
    const now = performance.eventLoopUtilization();
    const busy = performance.eventLoopUtilization(now, last).utilization;
    last = now;
    if (busy > IDLE_UTILIZATION) {
      if (++checks < MAX_CHECKS) setTimeout(check, delayMs).unref();
      return;
    }
    try {
      setFlagsFromString('--expose-gc');
      const gc = runInNewContext('gc') as (options?: object) => void;
      setFlagsFromString('--no-expose-gc');
      // `last-resort` is V8's LowMemoryNotification: it also shrinks the young generation and frees empty pages. An
      // older V8 ignores the option and runs a plain full collection.
      gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
    } catch {
      // Only memory is at stake.
    }
  };
  setTimeout(check, delayMs).unref();
}

/** How often the loop's idleness is checked: short enough that an idle reading a second after ready sees the result. */
const CHECK_INTERVAL_MS = 250;
const IDLE_UTILIZATION = 0.05;
const MAX_CHECKS = 40;
