// What the CLI needs to know before it decides between one gateway and a supervisor of worker threads: kept apart
// from supervisor.ts so that a single-process start does not load the supervisor (worker_threads plumbing, shared
// cells and fetches, metrics merging).
import { resolveWorkerCount } from '../compile/static-config.ts';
import { parseConfigText } from '../config/load-config.ts';

/** The two names of the worker count (`config.workers`, `workerThreads`), as they appear in the text. */
const WORKER_KEYS = /\bworker(?:s|Threads)\b/;

/** How many workers a config asks for (`config.workers`, `workerThreads`); 1 when absent or not understood (the single-process load then reports the error with its position). */
export function workerCountOf(name: string, text: string, env: NodeJS.ProcessEnv = process.env): number {
  // A config that names neither key, and has no `${VAR}` (an unquoted expansion is re-read as YAML), runs one
  // worker: no parse here (the first, cold js-yaml parse is 20-40 ms of the start; the gateway parses it anyway).
  if (!WORKER_KEYS.test(text) && !text.includes('${')) return 1;
  try {
    const value = parseConfigText(name, text, env).value as { config?: Record<string, unknown> } | null;
    const raw = value?.config;
    if (!raw || typeof raw !== 'object') return 1;
    const n = resolveWorkerCount(raw as never);
    return Number.isInteger(n) && n >= 1 && n <= 64 ? n : 1;
  } catch {
    return 1;
  }
}

/** A worker that could not start: its error, and whether the config was to blame. */
export class WorkerStartError extends Error {
  readonly invalidConfig: boolean;
  constructor(message: string, invalidConfig: boolean) {
    super(message);
    this.invalidConfig = invalidConfig;
  }
}

