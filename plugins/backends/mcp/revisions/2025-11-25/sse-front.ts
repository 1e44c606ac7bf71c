import { randomUUID } from 'node:crypto';
import { localReply } from 'switchyard/sdk';
import type { Exchange, Reply } from 'switchyard/sdk';
import { MCP_AUTHORIZER } from '../../../../lib/mcp/authorizer.ts';
import { readMessages } from '../../endpoint.ts';
import { TRANSPORT_ERROR, clientOf, rpcReply } from '../../http-util.ts';
import { RpcCode, RpcFailure, errorMessage, isRequest } from '../../jsonrpc.ts';
import type { RpcMessage } from '../../jsonrpc.ts';
import { StreamResponder } from '../../responder.ts';
import { LIMIT_CODE } from '../../runtime.ts';
import type { BackendRuntime } from '../../runtime.ts';
import { McpSession } from '../../session.ts';
import type { SessionStore } from '../../session-store.ts';
import { SseStream } from '../../sse-stream.ts';
import { KEEP_ALIVE_MS } from '../../streams.ts';
import { principalOf } from '../../session-token.ts';

/**
 * The legacy HTTP+SSE server (2024-11-05): `GET /sse` opens the session's stream, whose first event names the
 * endpoint (`<path>?sessionId=<id>`); POSTs there get 202 and their answers come on the stream. The session lives
 * as long as the stream.
 */
export class LegacySseFront {
  private readonly store: SessionStore;
  private readonly rt: BackendRuntime;

  constructor(rt: BackendRuntime, store: SessionStore) {
    this.rt = rt;
    this.store = store;
  }

  handle(ex: Exchange): Promise<Reply> | Reply {
    if (ex.method === 'GET') return this.open(ex);
    if (ex.method === 'POST') return this.post(ex);
    return rpcReply(405, TRANSPORT_ERROR, 'Method not allowed: use GET to open the stream and POST to send', null, { allow: 'GET, POST' });
  }

  private open(ex: Exchange): Reply {
    const refused = this.store.admit();
    if (refused) return rpcReply(503, LIMIT_CODE, refused);
    this.store.settle();
    const uuid = randomUUID();
    const session = new McpSession(this.rt, uuid, 'legacy', {}, clientOf(ex, this.rt.multiplexed));
    const stream = new SseStream();
    session.streams.legacyStream = stream;
    this.store.add(session, uuid);
    stream.onClose = () => void this.store.end(uuid, session, true, 'the client closed the stream');
    const q = ex.originalUrl.indexOf('?');
    const path = q === -1 ? ex.originalUrl : ex.originalUrl.slice(0, q);
    stream.event('endpoint', `${path}?sessionId=${uuid}`);
    stream.startKeepAlive(KEEP_ALIVE_MS);
    return stream.reply();
  }

  private async post(ex: Exchange): Promise<Reply> {
    const id = new URLSearchParams(ex.query).get('sessionId');
    if (!id) return rpcReply(422, TRANSPORT_ERROR, 'the sessionId query parameter is required');
    const session = this.store.get(id);
    // A session opened by another caller is not found (ADR 0120).
    if (!session || session.kind !== 'legacy' || (session.principal !== undefined && session.principal !== principalOf(ex))) return rpcReply(404, -32001, 'Session not found');
    const parsed = await readMessages(ex);
    if (!('messages' in parsed)) return parsed;
    session.touch();
    const responder = new StreamResponder(() => session.streams.legacyStream);
    const authorizer = ex.get(MCP_AUTHORIZER);
    for (const m of parsed.messages) {
      if (!isRequest(m)) session.clientMessage(m);
      else if (m.method === 'initialize') void this.initialize(session, m);
      else if (!session.initialized) session.streams.legacyStream?.send(errorMessage(m.id, RpcCode.invalidRequest, 'the session is not initialized'));
      else session.startCall(m, responder, authorizer, ex.requestId);
    }
    return localReply(202, 'Accepted', { 'content-type': 'text/plain' });
  }

  private async initialize(session: McpSession, init: RpcMessage): Promise<void> {
    if (session.initialized) {
      session.streams.legacyStream?.send(errorMessage(init.id, RpcCode.invalidRequest, 'the session is already initialized'));
      return;
    }
    session.initParams = init.params ?? {};
    try {
      const result = await session.initialize();
      session.streams.legacyStream?.send({ jsonrpc: '2.0', id: init.id, result });
    } catch (err) {
      const f = err instanceof RpcFailure ? err : new RpcFailure(RpcCode.internalError, (err as Error).message, 500);
      session.streams.legacyStream?.send(errorMessage(init.id, f.code, f.message));
    }
  }
}
