import { createHash, randomUUID } from 'node:crypto';
import { localReply } from 'switchyard/sdk';
import type { Exchange, Reply } from 'switchyard/sdk';
import { MCP_AUTHORIZER } from '../../../../lib/mcp/authorizer.ts';
import { TRANSPORT_ERROR, clientOf, header, rpcReply, upstreamHeaders } from '../../http-util.ts';
import { RpcCode, errorMessage, isRequest } from '../../jsonrpc.ts';
import type { RpcId, RpcMessage } from '../../jsonrpc.ts';
import { PostResponder } from '../../responder.ts';
import type { Call } from '../../responder.ts';
import { LIMIT_CODE } from '../../runtime.ts';
import type { BackendRuntime } from '../../runtime.ts';
import { McpSession } from '../../session.ts';
import type { SessionStore } from '../../session-store.ts';
import { LATEST_INITIALIZE_VERSION } from '../2025-11-25/protocol.ts';
import type { ParsedPost, RevisionAdapter } from '../revision.ts';
import { classify, headerIs20260728 } from './classify.ts';
import { InputRounds, REQUEST_STATE_PREFIX } from './inputs.ts';
import type { InputEntry } from './inputs.ts';
import { LOG_LEVEL_META_KEY, REMOVED_METHODS, REV_2026_07_28, VERSIONS_2026_07_28, metaOf } from './protocol.ts';
import type { ClientEnvelope } from './protocol.ts';
import { Responder20260728 } from './responder.ts';
import { SESSION_2026_07_28, serverInfoOf } from './session.ts';
import { principalOf } from '../../session-token.ts';

/**
 * Ids the sessions run 2026-07-28 calls under: process-wide, as pooled sessions outlive a config reload (and its front)
 * while their calls may still run or wait for input.
 */
let callSeq = 0;

/**
 * The 2026-07-28 revision at the edge (revision.ts): POSTs whose body or headers claim it are classified and
 * header-checked (classify.ts), then each is served on its own: no session id. On a stateful backend the target connections are kept per client identity (its capabilities, client info and
 * forwarded headers) and reused across its requests, so a stdio target is not started for every request and a legacy
 * target's question (sampling, elicitation, roots) can wait for the client's retry; on a stateless backend every
 * request gets fresh connections, closed once it is answered.
 */
export class Front20260728 implements RevisionAdapter {
  readonly revision = REV_2026_07_28;
  readonly versions = VERSIONS_2026_07_28;
  private readonly rt: BackendRuntime;
  private readonly store: SessionStore;

  constructor(rt: BackendRuntime, store: SessionStore) {
    this.rt = rt;
    this.store = store;
  }

  post(ex: Exchange, parsed: ParsedPost): Reply | Promise<Reply> | undefined {
    const claim = classify(parsed.messages, parsed.batch, { protocolVersion: header(ex, 'mcp-protocol-version'), method: header(ex, 'mcp-method'), name: header(ex, 'mcp-name') });
    if (claim.kind === 'reject') return rpcReply(claim.status, claim.code, claim.message, claim.id, {}, claim.data);
    if (claim.kind !== '2026-07-28') return undefined;
    return this.serve(ex, claim.message, claim.client, parsed.sse);
  }

  claims(version: string): boolean {
    return headerIs20260728(version);
  }

  /** The revision is POST-only: no GET stream, no session to DELETE (BEHAVIOUR §4.4). */
  other(ex: Exchange): Reply | undefined {
    if (!headerIs20260728(header(ex, 'mcp-protocol-version'))) return undefined;
    return rpcReply(400, TRANSPORT_ERROR, `Bad Request: protocol revision 2026-07-28 has no sessions and no ${ex.method} requests; POST each request`);
  }

  private serve(ex: Exchange, m: RpcMessage, client: ClientEnvelope | undefined, sse: boolean): Reply | Promise<Reply> {
    if (header(ex, 'mcp-session-id') !== undefined) {
      return rpcReply(400, RpcCode.invalidRequest, 'Bad Request: protocol revision 2026-07-28 has no sessions; send the request without Mcp-Session-Id', m.id ?? null);
    }
    // Notifications: nothing to pass on (cancellation on this revision is closing the request's response).
    if (!isRequest(m)) return localReply(202, null, {});
    const method = m.method!;
    if (REMOVED_METHODS.has(method)) {
      return rpcReply(404, RpcCode.methodNotFound, `Method not found: \`${method}\` does not exist in protocol revision ${REV_2026_07_28}`, m.id);
    }
    const id = m.id as RpcId;
    const identity = this.rt.stateful ? this.identity(ex, client!) : undefined;
    const state = m.params?.requestState;
    let entry: InputEntry | undefined;
    if (typeof state === 'string' && state.startsWith(REQUEST_STATE_PREFIX)) {
      entry = this.store.inputs.get(state);
      // A state is honoured only for the client it was given to (same capabilities, client info and credentials).
      if (entry && entry.session.poolKey !== identity) entry = undefined;
      if (!entry) return rpcReply(400, RpcCode.invalidParams, 'Invalid params: requestState is unknown or expired (the request waited too long, or reached another gateway replica)', id);
    }
    let session: McpSession | undefined = entry?.session;
    let ephemeral = false;
    if (!session) {
      if (identity !== undefined) {
        const pooled = this.store.pooledSession(identity, () => this.create(ex, client!, identity));
        if (typeof pooled === 'string') return rpcReply(503, LIMIT_CODE, pooled, id);
        session = pooled;
      } else {
        session = this.create(ex, client!, undefined);
        session.ephemeral = true;
        ephemeral = true;
      }
    }
    if (!session) return rpcReply(503, RpcCode.internalError, 'the MCP backend is shutting down', id);

    // The session runs the call under an id (and progress token) of its own: it serves many clients' requests.
    const internalId = `m${++callSeq}`;
    const meta = metaOf(m.params);
    const progressToken = meta?.progressToken;
    const params: Record<string, unknown> = { ...m.params };
    if (progressToken !== undefined) params._meta = { ...meta, progressToken: `swy-p-${internalId}` };
    const internal: RpcMessage = { jsonrpc: '2.0', id: internalId, method, params };
    const post = new PostResponder(sse, 1, false, {}, () => undefined);
    const target = session;
    const responder = new Responder20260728(post, id, method, progressToken, meta?.[LOG_LEVEL_META_KEY], () => serverInfoOf(target), this.rt.multiplexed);

    session.inflight++;
    session.touch();
    let call: Call | undefined;
    if (entry?.final) {
      this.store.inputs.delete(state as string);
      responder.final({ ...entry.final.message }, entry.final.httpStatus);
    } else if (entry) {
      const refused = session.inputs!.resume(entry.call, internal, responder);
      if (refused) responder.final(errorMessage(id, refused.code, refused.message), refused.httpStatus);
      else call = entry.call;
    } else {
      call = session.startCall(internal, responder, ex.get(MCP_AUTHORIZER), ex.requestId);
      session.inputs!.expect(call, internal, client!.clientCapabilities);
    }
    const onAbort = (): void => {
      if (call) target.cancel(call, 'the client disconnected');
    };
    ex.signal.addEventListener('abort', onAbort, { once: true });
    return post.reply.then((reply) => {
      const done = (): void => {
        target.inflight--;
        target.touch();
        ex.signal.removeEventListener('abort', onAbort);
        if (ephemeral) void target.close(true, 'stateless request done');
      };
      const body = reply.body;
      if (body && typeof (body as NodeJS.ReadableStream).on === 'function') (body as NodeJS.ReadableStream).on('close', done);
      else done();
      return reply;
    });
  }

  /**
   * Who the client is, for reusing target connections: capabilities, client info, forwarded headers (credentials) and
   * the caller it authenticated as (ADR 0120): two callers never share target connections or stdio processes.
   */
  private identity(ex: Exchange, client: ClientEnvelope): string {
    // With the credentials: two clients that present different ones never share target connections.
    const headers = upstreamHeaders(ex, true) ?? {};
    const sorted = Object.keys(headers)
      .sort()
      .map((k) => [k, headers[k]]);
    return createHash('sha256')
      .update(JSON.stringify({ c: client.clientCapabilities, i: client.clientInfo ?? null, h: sorted, w: principalOf(ex) ?? null }))
      .digest('base64url');
  }

  /** A session for 2026-07-28 requests: shared by one client identity (`poolKey`), or for one request (stateless backend). */
  private create(ex: Exchange, client: ClientEnvelope, poolKey: string | undefined): McpSession {
    // Older targets are initialized by the gateway with what the client declares in its envelope.
    const initParams = {
      protocolVersion: LATEST_INITIALIZE_VERSION,
      capabilities: client.clientCapabilities,
      clientInfo: client.clientInfo ?? { name: 'switchyard', version: '0.1.0' },
    };
    const session = new McpSession(this.rt, randomUUID(), '2026-07-28', initParams, clientOf(ex, this.rt.multiplexed, poolKey !== undefined), undefined, SESSION_2026_07_28);
    session.envelope = client;
    session.inputs = new InputRounds(session);
    session.poolKey = poolKey;
    session.initialized = true;
    session.protocolVersion = REV_2026_07_28;
    return session;
  }
}
