import type { Logger } from 'switchyard/sdk';
import type { TargetConn } from './target-conn.ts';

/** Resource subscriptions kept per session and target (each is replayed on a restart and may be sealed in the id). */
export const MAX_SUBSCRIPTIONS = 256;
/** Longest resource URI a client may subscribe to: the session keeps and replays each one (MAX_SUBSCRIPTIONS of them). */
export const MAX_SUBSCRIBED_URI = 2048;
/** Characters of subscribed resource URIs carried in a sealed session id (it travels in a header). */
export const SEALED_SUBSCRIPTIONS_MAX_CHARS = 2048;
/** A target with subscriptions that goes down is restarted without waiting for a request, this often at most. */
const EAGER_RESTARTS_PER_MINUTE = 5;
export const SUBSCRIPTION_METHODS: ReadonlySet<string> = new Set(['resources/subscribe', 'resources/unsubscribe']);

/**
 * The resource URIs one session's client subscribed to, per target (the target's own URIs). They are replayed when
 * a target is initialized afresh (a restart, or its first start after a resume), carried in the sealed session id,
 * and a target that holds some is restarted without waiting for a request when it goes down.
 */
export class Subscriptions {
  private readonly byTarget = new Map<string, Set<string>>();
  /** Eager restarts of targets with subscriptions: pending timer and recent start times, per target. */
  private readonly restarts = new Map<string, { timer: NodeJS.Timeout | undefined; times: number[] }>();
  private sealWarned = false;
  private readonly logger: Logger;
  /** The session ended: nothing is replayed or restarted any more. */
  private readonly closed: () => boolean;

  constructor(logger: Logger, closed: () => boolean) {
    this.logger = logger;
    this.closed = closed;
  }

  /** The URIs a sealed id carried for `target` (the session is resumed from it). */
  restore(target: string, uris: unknown): void {
    if (Array.isArray(uris) && uris.length > 0) this.byTarget.set(target, new Set(uris.filter((u) => typeof u === 'string')));
  }

  count(target: string): number {
    return this.byTarget.get(target)?.size ?? 0;
  }

  /** Whether one more subscription to `uri` on `target` is within MAX_SUBSCRIPTIONS (one held already is). */
  admits(target: string, uri: unknown): boolean {
    const uris = this.byTarget.get(target);
    return (uris?.size ?? 0) < MAX_SUBSCRIPTIONS || uris!.has(uri as string);
  }

  /** Remember a subscription the target accepted, or forget an unsubscribed one; true when the set changed. */
  note(method: string, target: string, uri: string): boolean {
    let uris = this.byTarget.get(target);
    const before = uris?.size ?? 0;
    if (method === 'resources/subscribe') {
      if (!uris) this.byTarget.set(target, (uris = new Set()));
      uris.add(uri);
    } else uris?.delete(uri);
    return (uris?.size ?? 0) !== before;
  }

  /** The client's subscriptions to one target (its own URIs). */
  of(target: string): readonly string[] {
    return [...(this.byTarget.get(target) ?? [])];
  }

  /** What a sealed id carries for `target`: its URIs, while `budget.chars` lasts (warned once when some are left out). */
  sealed(target: string, budget: { chars: number }): string[] | undefined {
    const uris = this.byTarget.get(target);
    if (!uris || uris.size === 0) return undefined;
    const kept: string[] = [];
    for (const uri of uris) {
      if (uri.length > budget.chars) break;
      budget.chars -= uri.length;
      kept.push(uri);
    }
    if (kept.length < uris.size && !this.sealWarned) {
      this.sealWarned = true;
      this.logger.warn('too many resource subscriptions to carry in the session id; another gateway resuming it will not replay the rest', { target, carried: kept.length, subscriptions: uris.size });
    }
    return kept.length > 0 ? kept : undefined;
  }

  /** A target was initialized afresh (a restart, or its first start here after a resume): subscribe again. */
  replay(conn: TargetConn): void {
    const uris = this.byTarget.get(conn.name);
    if (this.closed() || !uris || uris.size === 0) return;
    void this.replayAll(conn, [...uris]);
  }

  private async replayAll(conn: TargetConn, uris: string[]): Promise<void> {
    const failed: string[] = [];
    await Promise.all(
      uris.map((uri) =>
        conn.request('resources/subscribe', { uri }).then(
          (answer) => void (answer.error && failed.push(`${uri}: ${answer.error.message}`)),
          (err: Error) => void failed.push(`${uri}: ${err.message}`),
        ),
      ),
    );
    this.logger.info('replayed resource subscriptions to a restarted MCP target', { target: conn.name, subscriptions: uris.length, failed: failed.length });
    if (failed.length > 0) this.logger.warn('MCP target refused replayed resource subscriptions', { target: conn.name, errors: failed.slice(0, 5) });
  }

  /**
   * A target went down. With subscriptions, nobody may send a request that would restart it, so it is restarted
   * now (backing off: 250 ms doubling, at most EAGER_RESTARTS_PER_MINUTE a minute; past that the next request
   * restarts it, as for any target).
   */
  targetDown(conn: TargetConn): void {
    if (this.closed() || !this.byTarget.get(conn.name)?.size) return;
    let st = this.restarts.get(conn.name);
    if (!st) this.restarts.set(conn.name, (st = { timer: undefined, times: [] }));
    if (st.timer) return;
    const now = Date.now();
    st.times = st.times.filter((t) => now - t < 60_000);
    if (st.times.length >= EAGER_RESTARTS_PER_MINUTE) {
      this.logger.warn('MCP target with resource subscriptions keeps stopping; it restarts on the next request', { target: conn.name });
      return;
    }
    const state = st;
    state.timer = setTimeout(() => {
      state.timer = undefined;
      if (this.closed() || conn.state === 'ready' || conn.state === 'closed') return;
      state.times.push(Date.now());
      this.logger.info('restarting an MCP target that has resource subscriptions', { target: conn.name });
      conn.ready().catch((err: Error) => {
        this.logger.warn('could not restart an MCP target that has resource subscriptions', { target: conn.name, error: err.message });
        this.targetDown(conn);
      });
    }, 250 * 2 ** st.times.length);
    state.timer.unref?.();
  }

  /** After a resume from a sealed id: start the targets the client had subscriptions with, which replays them. */
  startSubscribed(conns: readonly TargetConn[]): void {
    for (const conn of conns) {
      if (!this.byTarget.get(conn.name)?.size) continue;
      conn.ready().catch((err: Error) => {
        this.logger.warn('could not start an MCP target to replay resource subscriptions', { target: conn.name, error: err.message });
        this.targetDown(conn);
      });
    }
  }

  dispose(): void {
    for (const st of this.restarts.values()) if (st.timer) clearTimeout(st.timer);
  }
}
