// Binds of the live config that could not listen after a reload (a port still held by a process that has not
// exited yet) are tried again every BIND_RETRY_MS while that config is live, and at once on request (a SIGHUP
// with the file unchanged), so the gateway becomes ready by itself (ADR 0119).
import type { Snapshot } from '../compile/snapshot.ts';
import type { BindServers } from '../runtime/bind-servers.ts';
import type { Logger } from '../sdk/index.ts';

/** How often binds of the live config that could not listen are tried again. */
const BIND_RETRY_MS = 5_000;

export class BindRetry {
  private timer: NodeJS.Timeout | undefined;
  private readonly binds: BindServers;
  private readonly log: Logger;
  /** Whether `snapshot` is still the one to listen for (it is live and the gateway is not stopping). */
  private readonly current: (snapshot: Snapshot) => boolean;
  /** Told when the binds that could not listen do. */
  private readonly listened: () => void;

  constructor(binds: BindServers, log: Logger, current: (snapshot: Snapshot) => boolean, listened: () => void = () => undefined) {
    this.binds = binds;
    this.log = log;
    this.current = current;
    this.listened = listened;
  }

  /** Try again in BIND_RETRY_MS. */
  schedule(snapshot: Snapshot): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.now(snapshot), BIND_RETRY_MS);
    this.timer.unref();
  }

  /** One attempt at the binds of `snapshot` that are not listening; another is scheduled if some still cannot. */
  async now(snapshot: Snapshot): Promise<void> {
    clearTimeout(this.timer);
    if (!this.current(snapshot)) return;
    const ports = this.binds.pending(snapshot);
    if (ports.length === 0) return;
    try {
      await this.binds.apply(snapshot);
      this.log.info('binds that could not listen now do', { binds: ports.join(',') });
      // With workers, the supervisor's readiness hears of it now (ADR 0194).
      this.listened();
    } catch (err) {
      this.log.debug('binds still cannot listen', { error: err as Error });
      this.schedule(snapshot);
    }
  }

  stop(): void {
    clearTimeout(this.timer);
  }
}
