import type { RpcId } from './jsonrpc.ts';
import type { Call } from './responder.ts';

/** How long a cancellation that arrived before its request is kept, and how many are kept per session. */
const EARLY_CANCEL_MS = 2000;
const EARLY_CANCEL_MAX = 256;

/**
 * The client requests one session is serving: by JSON-RPC id, by progress token (progress notifications from the
 * targets find their call), and cancellations that overtook their request (two concurrent POSTs).
 */
export class ClientCalls {
  private readonly byId = new Map<RpcId, Call>();
  private readonly byProgress = new Map<unknown, Call>();
  private earlyCancels: Map<RpcId, number> | undefined;

  get size(): number {
    return this.byId.size;
  }

  has(id: RpcId): boolean {
    return this.byId.has(id);
  }

  get(id: RpcId): Call | undefined {
    return this.byId.get(id);
  }

  /** The call that asked for progress under `token`. */
  withProgress(token: unknown): Call | undefined {
    return this.byProgress.get(token);
  }

  values(): IterableIterator<Call> {
    return this.byId.values();
  }

  add(call: Call): void {
    this.byId.set(call.id, call);
  }

  /** The call asked for progress notifications under `token`. */
  trackProgress(call: Call, token: unknown): void {
    call.progressToken = token;
    this.byProgress.set(token, call);
  }

  remove(call: Call): void {
    if (this.byId.get(call.id) === call) this.byId.delete(call.id);
    if (call.progressToken !== undefined && this.byProgress.get(call.progressToken) === call) this.byProgress.delete(call.progressToken);
  }

  /** The newest open call with a streaming response that went to `target`: where its messages go. */
  latestStreaming(target: string): Call | undefined {
    let latest: Call | undefined;
    for (const c of this.byId.values()) if (!c.done && c.responder.streaming && c.targets(target)) latest = c;
    return latest;
  }

  /** Remember a cancellation of a request not seen yet, briefly; only the newest few are kept. */
  noteEarlyCancel(id: RpcId): void {
    const early = (this.earlyCancels ??= new Map());
    const now = Date.now();
    if (early.size >= EARLY_CANCEL_MAX) {
      for (const [k, until] of early) if (until <= now) early.delete(k);
      while (early.size >= EARLY_CANCEL_MAX) early.delete(early.keys().next().value!);
    }
    early.set(id, now + EARLY_CANCEL_MS);
  }

  /** Whether request `id` was cancelled (recently enough) before it arrived; the note is used up. */
  takeEarlyCancel(id: RpcId): boolean {
    const early = this.earlyCancels?.get(id);
    if (early === undefined) return false;
    this.earlyCancels!.delete(id);
    return early > Date.now();
  }
}
