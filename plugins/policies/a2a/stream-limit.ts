import { defineAttribute, jsonErrorReply, principal } from 'switchyard/sdk';
import type { Exchange, Reply } from 'switchyard/sdk';

/** Streams one client may hold open at once through one `a2a` policy, by default (ADR 0182). */
export const DEFAULT_MAX_STREAMS_PER_CLIENT = 100;

/** The calls answered by a stream that stays open while the task runs (v1.0 and v0.3 names, JSON-RPC and REST). */
const STREAM_METHODS: ReadonlySet<string> = new Set(['SendStreamingMessage', 'SubscribeToTask', 'message/stream', 'tasks/resubscribe']);

/** The client key a stream was counted under, released when the exchange ends (the log hook). */
const countedAttribute = defineAttribute<string>('a2a.streamClient');

/**
 * Open streams per client: the authenticated caller (the SDK's `principal`), else the client's address. An A2A
 * stream lasts as long as its task, up to the idle deadline between events, and holds an agent connection and a task
 * on the agent: without a bound one client could hold them all. Counted in this process, for this policy.
 */
export class StreamLimit {
  private readonly open = new Map<string, number>();
  private readonly max: number;

  constructor(max: number) {
    this.max = max;
  }

  /** Count a streaming call of `ex`; the 429 to answer when its client holds `max` streams already. */
  admit(ex: Exchange, method: string | undefined): Reply | undefined {
    if (method === undefined || !STREAM_METHODS.has(method) || ex.get(countedAttribute) !== undefined) return undefined;
    const who = ex.get(principal) ?? `address:${ex.sourceAddress}`;
    const held = this.open.get(who) ?? 0;
    if (held >= this.max) {
      return jsonErrorReply(429, 'too_many_streams', `too many open A2A streams for this client (at most ${this.max}); end one, or resubscribe to a task later`);
    }
    this.open.set(who, held + 1);
    ex.set(countedAttribute, who);
    return undefined;
  }

  /** The exchange ended: its stream, if counted, no longer is. */
  release(ex: Exchange): void {
    const who = ex.get(countedAttribute);
    if (who === undefined) return;
    const held = (this.open.get(who) ?? 1) - 1;
    if (held <= 0) this.open.delete(who);
    else this.open.set(who, held);
  }
}
