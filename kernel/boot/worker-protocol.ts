import type { MessagePort } from 'node:worker_threads';
import type { AdminUiConfig } from '../compile/snapshot.ts';
import type { KeptMessages } from '../resources/shared-events.ts';
import type { NamedFileStamps } from '../config/named-files.ts';

/** What a supervisor hands each worker thread it starts (as `workerData.switchyardWorker`). */
export interface WorkerData {
  readonly index: number;
  /** The last good config text, and the file it came from (for messages and relative plugin paths). */
  readonly text: string;
  readonly name: string;
  readonly base?: string;
  readonly arena: SharedArrayBuffer;
  readonly fetchPort: MessagePort;
  readonly processPort: MessagePort;
  /** The generation the workers serve (1 at start, one more per applied reload): a restarted worker's. */
  readonly generation: number;
  /** Names this supervisor's `SharedEvents` channels. */
  readonly scope: string;
  /** The `SharedEvents` messages the supervisor kept for workers that start later (kernel/resources/shared-events.ts). */
  readonly kept: KeptMessages;
  /** The supervisor watches the config file: each worker watches its listeners' certificate files (ADR 0138). */
  readonly watchFiles?: boolean;
}

export type Query = 'metrics' | 'configDump' | 'statics';

/** Supervisor to worker. */
export type ToWorker =
  /**
   * Compile a reload and hold it; `joins`: the config the other workers serve already (a restarted worker catching
   * up); `checked`: one worker's `check` passed it, so this one starts no check thread of its own on the same text.
   * Answered with a `Staged`.
   */
  | { readonly t: 'stage'; readonly id: number; readonly text: string; readonly joins?: boolean; readonly checked?: boolean }
  /** A reload's parse and schema check (off the worker's thread), asked of one worker for all; answered with a `Staged`. */
  | { readonly t: 'check'; readonly id: number; readonly text: string }
  | { readonly t: 'commit'; readonly id: number; readonly commit: boolean; readonly text: string }
  | { readonly t: 'query'; readonly id: number; readonly what: Query }
  /** Try the binds that could not listen again now (a SIGHUP with the config unchanged); answered when done. */
  | { readonly t: 'retryBinds'; readonly id: number }
  /** Compile a config as a reload would and drop it (the admin UI's validator); answered with a ValidationResult. */
  | { readonly t: 'validate'; readonly id: number; readonly text: string }
  /** A request to a plugin endpoint of the admin address (`CompileContext.adminRoute`); answered `{status, body}`. */
  | { readonly t: 'admin'; readonly id: number; readonly prefix: string; readonly method: string; readonly subpath: string; readonly query: string; readonly body: unknown }
  /** Start (`on`) or stop sending the live tail's batches (the admin UI's `/ui/api/tail`). */
  | { readonly t: 'tail'; readonly on: boolean }
  | { readonly t: 'stop' };

/** Worker to supervisor. */
export type FromWorker =
  | {
      readonly t: 'started';
      readonly addrs: { readonly adminAddr: string; readonly statsAddr: string; readonly readinessAddr: string };
      readonly drainTimeoutMs: number;
      readonly binds: readonly number[];
      /** What the supervisor acts on of the static block it started with (as the `statics` query answers). */
      readonly statics: WorkerStatics;
      /** Its readiness now; then a `readiness` message each time it changes. */
      readonly readiness: { readonly ready: boolean; readonly pending: string };
    }
  | { readonly t: 'failed'; readonly error: string; readonly invalidConfig: boolean }
  /** The worker's readiness, sent when it changes: the supervisor answers probes from it. */
  | { readonly t: 'readiness'; readonly ready: boolean; readonly pending: string }
  /** A batch of the live tail: finished requests' access-log fields, and how many more were left out (bounded batches). */
  | { readonly t: 'tail'; readonly events: readonly Record<string, unknown>[]; readonly dropped: number }
  | { readonly t: 'reply'; readonly id: number; readonly value: unknown };

/** The `workerData` key a worker thread of a supervisor is recognised by. */
export const WORKER_DATA_KEY = 'switchyardWorker';

/** A worker's answer to the `statics` query: what of its live config's static block the supervisor acts on. */
export interface WorkerStatics {
  /** `config.adminUi` (credentials included): the supervisor serves the UI and enforces them. */
  readonly adminUi: AdminUiConfig;
  readonly logging: { readonly level: 'debug' | 'info' | 'warn' | 'error'; readonly format: 'json' | 'text' };
  /** `restartOnlyKey`: a reload that changes it needs a restart. */
  readonly restartOnly: string;
  /** `config.drainTimeout` in ms: the supervisor's stop waits for the workers' drain that long (and 5 s more). */
  readonly drainTimeoutMs: number;
  /** The files the config read, with their versions: the supervisor watches them (ADR 0184). */
  readonly namedFiles: NamedFileStamps;
}
