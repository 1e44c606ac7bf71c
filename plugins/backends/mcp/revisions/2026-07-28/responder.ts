import type { RpcId, RpcMessage } from '../../jsonrpc.ts';
import { RpcCode } from '../../jsonrpc.ts';
import { PostResponder } from '../../responder.ts';
import type { Responder } from '../../responder.ts';
import { SUBSCRIPTION_ID_META_KEY, logWanted, shapeResult } from './protocol.ts';

/** How long a 2026-07-28 response waits for its answer before its headers go out anyway (see Responder20260728.commit). */
const COMMIT_DELAY_MS = 1000;

/**
 * One 2026-07-28 request's view of its call: the client's own request id and progress token come back (the session
 * runs the call under ids of its own, as one session serves many 2026-07-28 requests), results get `resultType`, cache
 * hints and `serverInfo` in `_meta`, log messages go only to requests that asked for them (`_meta` logLevel), and
 * gateway failures are JSON-RPC errors in the body (HTTP 200) as the revision wants for anything past validation.
 */
export class Responder20260728 implements Responder {
  private readonly inner: Responder;
  private readonly clientId: RpcId;
  private readonly method: string;
  private readonly progressToken: unknown;
  private readonly logLevel: unknown;
  private readonly serverInfo: () => Record<string, unknown> | undefined;
  private readonly overrideServerInfo: boolean;
  private commitTimer: NodeJS.Timeout | undefined;
  private finished = false;

  constructor(
    inner: Responder,
    clientId: RpcId,
    method: string,
    progressToken: unknown,
    logLevel: unknown,
    serverInfo: () => Record<string, unknown> | undefined,
    overrideServerInfo: boolean,
  ) {
    this.inner = inner;
    this.clientId = clientId;
    this.method = method;
    this.progressToken = progressToken;
    this.logLevel = logLevel;
    this.serverInfo = serverInfo;
    this.overrideServerInfo = overrideServerInfo;
  }

  get streaming(): boolean {
    return this.inner.streaming;
  }

  related(message: RpcMessage): void {
    const params = message.params;
    switch (message.method) {
      case 'notifications/progress':
        if (this.progressToken === undefined) return;
        this.inner.related({ ...message, params: { ...params, progressToken: this.progressToken } });
        return;
      case 'notifications/message':
        if (logWanted(this.logLevel, params?.level)) this.inner.related(message);
        return;
    }
    const meta = params?._meta as Record<string, unknown> | undefined;
    if (meta && typeof meta === 'object' && SUBSCRIPTION_ID_META_KEY in meta) {
      this.inner.related({ ...message, params: { ...params, _meta: { ...meta, [SUBSCRIPTION_ID_META_KEY]: this.clientId } } });
      return;
    }
    if (message.id !== undefined && message.id !== null) return; // server-to-client requests do not exist on this revision
    this.inner.related(message);
  }

  final(message: RpcMessage, httpStatus?: number): void {
    this.finished = true;
    if (this.commitTimer) clearTimeout(this.commitTimer);
    const out: RpcMessage = { ...message, id: this.clientId };
    if (out.result) out.result = shapeResult(this.method, out.result, this.serverInfo(), this.overrideServerInfo);
    // Method not found is 404 on this revision (the gateway's or a target's); other failures stay in the body.
    let status = httpStatus !== undefined && httpStatus >= 500 ? 200 : httpStatus;
    if (out.error?.code === RpcCode.methodNotFound) status = 404;
    this.inner.final(out, status);
  }

  abandon(): void {
    this.finished = true;
    if (this.commitTimer) clearTimeout(this.commitTimer);
    this.inner.abandon();
  }

  /**
   * Headers wait a moment for the answer: one that comes quickly from the target (a 404 method-not-found, a 400
   * refusal) still gets its HTTP status, which this revision gives meaning to; a long call starts its response
   * stream after COMMIT_DELAY_MS (or at its first progress or log message) so the client's headers are not held.
   */
  commit(): void {
    if (this.commitTimer || this.finished) return;
    this.commitTimer = setTimeout(() => {
      if (this.finished) return;
      // The wait is over: a POST response starts at once, without its own delay on top.
      if (this.inner instanceof PostResponder) this.inner.startNow();
      else this.inner.commit();
    }, COMMIT_DELAY_MS);
    this.commitTimer.unref?.();
  }
}
