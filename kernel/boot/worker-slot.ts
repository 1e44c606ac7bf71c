import { randomBytes } from 'node:crypto';
import type { Worker } from 'node:worker_threads';
import { parseConfigText } from '../config/load-config.ts';
import type { ToWorker } from './worker-protocol.ts';
import type { Logger } from '../sdk/index.ts';

/**
 * The environment of the worker threads. Without a configured session key each thread would draw its own random
 * one and a session sealed by one worker would not resume on another: the supervisor draws one for all of them.
 */
export function workerEnv(name: string, text: string): NodeJS.ProcessEnv {
  if (process.env.SESSION_KEY) return process.env;
  try {
    const value = parseConfigText(name, text, process.env).value as { config?: { session?: { key?: unknown } } } | null;
    if (value?.config?.session?.key) return process.env;
  } catch {
    // Not parseable: the workers report it.
  }
  return { ...process.env, SESSION_KEY: randomBytes(32).toString('hex') };
}

/** One worker thread as the supervisor sees it (kernel/boot/supervisor.ts); it outlives the threads it restarts. */
export interface Slot {
  readonly index: number;
  worker: Worker | undefined;
  started: boolean;
  /** The config text this worker runs. */
  text: string;
  startedAt: number;
  /** Quick crashes and failed restarts in a row (the restart backoff's exponent). */
  quickCrashes: number;
  /** A restart is scheduled or starting: its failure schedules another. */
  restarting: boolean;
  timer: NodeJS.Timeout | undefined;
  /** What the worker last reported of its readiness (`started`, then `readiness` messages): probes answer from it. */
  readiness: { ready: boolean; pending: string };
  /** Liveness pings left unanswered in a row, and whether one is out. */
  misses: number;
  pinging: boolean;
  /** The worker's last metrics text (from a scrape or a liveness ping): its counters are kept when it dies. */
  lastMetrics: string;
  readonly pending: Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>;
}

/** A fresh slot for worker `index`, to run `text`. */
export function newSlot(index: number, text: string): Slot {
  return { index, worker: undefined, started: false, text, readiness: { ready: false, pending: 'starting' }, startedAt: 0, quickCrashes: 0, restarting: false, timer: undefined, misses: 0, pinging: false, lastMetrics: '', pending: new Map() };
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** A question to a worker, without the id that pairs it with the answer. */
export type WorkerQuestion = DistributiveOmit<Extract<ToWorker, { id: number }>, 'id'>;

/** Ask the worker of `slot` (under the supervisor's unique `id`); rejects after `timeoutMs` or when it is not running. */
export function askWorker(slot: Slot, id: number, message: WorkerQuestion, timeoutMs: number): Promise<unknown> {
  const worker = slot.worker;
  if (!worker || !slot.started) return Promise.reject(new Error(`worker ${slot.index} is not running`));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      slot.pending.delete(id);
      reject(new Error(`worker ${slot.index} did not answer within ${timeoutMs} ms`));
    }, timeoutMs);
    slot.pending.set(id, {
      resolve: (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      reject: (e) => {
        clearTimeout(timer);
        reject(e);
      },
    });
    worker.postMessage({ ...message, id } as ToWorker);
  });
}

/**
 * The delay before restarting the worker of `slot`, counting this exit as one more quick crash unless the worker
 * served (`served`) at least `stableMs` (default 30 s): `initial`, doubled per quick crash or failed restart, up to `max`.
 */
export function restartDelay(slot: Slot, served: boolean, backoff: { readonly initial: number; readonly max: number; readonly stableMs?: number }): number {
  slot.quickCrashes = served && Date.now() - slot.startedAt >= (backoff.stableMs ?? 30_000) ? 0 : slot.quickCrashes + 1;
  return Math.min(backoff.max, backoff.initial * 2 ** Math.max(0, slot.quickCrashes - 1));
}

/**
 * Ping every running worker each `intervalMs` by asking for its metrics (`askMetrics`): answering proves its loop
 * turns, and if it dies later its counters up to this ping stay in the gateway's sum (not only those of the last
 * scrape). One that leaves `misses` pings in a row unanswered is terminated (its exit restarts it). Returns the timer.
 */
export function watchSlots(
  slots: readonly Slot[],
  liveness: { readonly intervalMs: number; readonly misses: number },
  askMetrics: (slot: Slot, timeoutMs: number) => Promise<unknown>,
  stopping: () => boolean,
  log: Logger,
): NodeJS.Timeout {
  const { intervalMs, misses } = liveness;
  const timer = setInterval(() => {
    for (const slot of slots) {
      const worker = slot.worker;
      if (!worker || !slot.started || slot.pinging) continue;
      slot.pinging = true;
      askMetrics(slot, intervalMs)
        .then(
          (text) => {
            slot.misses = 0;
            if (slot.worker === worker && typeof text === 'string') slot.lastMetrics = text;
          },
          () => {
            if (slot.worker !== worker || stopping()) return;
            if (++slot.misses < misses) return;
            log.error('worker does not answer; terminating it', { worker: slot.index, silentMs: misses * intervalMs });
            void worker.terminate();
          },
        )
        .finally(() => (slot.pinging = false));
    }
  }, intervalMs);
  timer.unref();
  return timer;
}
