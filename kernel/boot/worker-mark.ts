/**
 * The argument a supervisor appends to its worker threads' `process.argv` (kernel/boot/supervisor.ts), by which
 * the distribution's entry (dist-entry.ts) tells a worker from the main thread without loading node:worker_threads,
 * which a gateway without `config.workers` never needs (docs/perf.md "Memory, session 10b"). A user's argument
 * that happens to equal it costs only that load: the entry still checks `workerData` before serving as a worker.
 */
export const WORKER_THREAD_ARG = '--switchyard-worker-thread';

/** Defined beside the paste check (kernel/config may not import kernel/boot). */
export { PASTE_CHECK_ARG } from '../config/paste-check-arg.ts';
