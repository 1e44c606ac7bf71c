import type { Logger } from '../sdk/index.ts';
import { ConfigLoadError } from '../config/format-issues.ts';
import { NamedFileWatch } from '../config/named-files.ts';
import type { NamedFileStamps } from '../config/named-files.ts';
import { watchConfigFile } from '../config/watch-config.ts';
import type { MetricsRegistry } from '../telemetry/metrics.ts';

/** A config refused: the error as a reload logs it, its problems without their frames, how many more were counted. */
export interface Refusal {
  readonly error: string;
  readonly errors?: unknown[];
  readonly moreErrors?: number;
}

/** A worker's answer to `check` and `stage` (worker-protocol.ts): accepted, with the files it read, or refused. */
export type Staged = { readonly ok: true; readonly namedFiles?: NamedFileStamps } | ({ readonly ok: false } & Refusal);

/** What a failed load threw, as a refusal (structured, ADR 0025: each problem's file, line, col, path, code, message). */
export function refusalOf(err: unknown): Refusal {
  const errors = err instanceof ConfigLoadError ? err.issues.map(({ frame: _frame, ...issue }) => issue) : undefined;
  return { error: (err as Error)?.message ?? String(err), errors, ...(err instanceof ConfigLoadError && err.more > 0 ? { moreErrors: err.more } : {}) };
}

/** What a reload does in a gateway of one process or in the supervisor of several. */
export interface ReloadHost {
  readonly log: Logger;
  readonly metrics: MetricsRegistry;
  readonly configName: string;
  /** The config text now (ConfigLoadError when unreadable). */
  read(): Promise<string>;
  stopping(): boolean;
  /** The live config again, its files unchanged (SIGHUP): what could not listen is tried again. */
  unchanged(): Promise<void>;
  /** Compile and serve `text` (setting `live`): true once it serves, false when a stop dropped it, or why it was refused. */
  apply(text: string): Promise<boolean | Refusal>;
}

/**
 * The reload plumbing the gateway and the supervisor share: one reload at a time (one asked for meanwhile runs once
 * it ends), the config file and the files the live config read watched (ADR 0184), the live text with unchanged
 * files not compiled again, each outcome counted and a failure logged.
 */
export class ReloadQueue {
  /** The live config's text. */
  live: string | undefined;
  private readonly host: ReloadHost;
  private readonly file: string | undefined;
  private readonly namedFiles: NamedFileWatch;
  private current: Promise<boolean> | undefined;
  private again = false;
  private stopWatching: (() => void) | undefined;

  /** `file`: the config file to watch, with the files its configs read; undefined watches nothing. */
  constructor(host: ReloadHost, file: string | undefined) {
    this.host = host;
    this.file = file;
    this.namedFiles = new NamedFileWatch(file !== undefined ? () => void this.reload() : undefined);
  }

  /** Start watching the config file (after the first load). */
  watch(): void {
    if (this.file !== undefined) this.stopWatching ??= watchConfigFile(this.file, () => void this.reload());
  }

  /** The files the live config read, with their versions: watched, and looked at by a SIGHUP. */
  follow(stamps: NamedFileStamps): void {
    this.namedFiles.follow(stamps);
  }

  close(): void {
    this.stopWatching?.();
    this.stopWatching = undefined;
    this.namedFiles.close();
  }

  /** The step in progress, if any. */
  get running(): Promise<boolean> | undefined {
    return this.current;
  }

  /** Re-read the config (or take `text`) and apply it. Resolves true when it went live. */
  reload(text?: string): Promise<boolean> {
    if (this.current) {
      this.again = true;
      return this.current;
    }
    return this.run(() => this.attempt(text));
  }

  /** Run `step` as the queue's step now (none may be in progress); a reload asked for meanwhile runs after it. */
  run(step: () => Promise<boolean>): Promise<boolean> {
    const done = step().finally(() => {
      this.current = undefined;
      if (this.again) {
        this.again = false;
        void this.reload();
      }
    });
    this.current = done;
    return done;
  }

  private count(result: 'applied' | 'invalid' | 'unreadable'): void {
    this.host.metrics.counter('switchyard_config_reloads_total', 'Config reloads, by result (applied, invalid, unreadable).').inc({ result });
  }

  private async attempt(given?: string): Promise<boolean> {
    const h = this.host;
    if (h.stopping()) return false;
    let text: string;
    try {
      text = given ?? (await h.read());
    } catch (err) {
      this.count('unreadable');
      h.log.error('config reload failed: cannot read the file; keeping the last good config', { error: err as Error });
      return false;
    }
    // Only the live config with the files it read unchanged is not compiled again: a refused text is, when asked
    // again (SIGHUP), since what it lacked (a file it names, a port, a worker that died meanwhile) may be there now.
    if (text === this.live && !(await this.namedFiles.changed())) {
      await h.unchanged();
      return false;
    }
    const outcome = await h.apply(text);
    if (outcome === false) return false;
    if (outcome === true) {
      this.count('applied');
      return true;
    }
    this.count('invalid');
    const more = outcome.moreErrors ? { moreErrors: outcome.moreErrors } : {};
    h.log.error('config reload failed; keeping the last good config', { config: h.configName, errors: outcome.errors, ...more, error: outcome.error });
    return false;
  }
}
