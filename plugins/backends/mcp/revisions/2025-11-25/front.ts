import { randomUUID } from 'node:crypto';
import { jsonReply, localReply } from 'switchyard/sdk';
import type { Exchange, HeaderMap, Reply } from 'switchyard/sdk';
import { MCP_AUTHORIZER } from '../../../../lib/mcp/authorizer.ts';
import { TRANSPORT_ERROR, clientOf, header, rpcReply } from '../../http-util.ts';
import { RpcCode, RpcFailure, isRequest } from '../../jsonrpc.ts';
import type { RpcMessage } from '../../jsonrpc.ts';
import { PostResponder } from '../../responder.ts';
import { LIMIT_CODE } from '../../runtime.ts';
import type { BackendRuntime } from '../../runtime.ts';
import { McpSession } from '../../session.ts';
import type { SessionStore } from '../../session-store.ts';
import { SseStream } from '../../sse-stream.ts';
import type { ParsedPost, RevisionAdapter } from '../revision.ts';
import { INITIALIZE_VERSIONS } from './protocol.ts';
import { principalOf } from '../../session-token.ts';

const SESSION_HEADER = 'mcp-session-id';

/**
 * The `initialize` revisions (2024-11-05 to 2025-11-25) on streamable HTTP (revision.ts): `initialize` opens a
 * session whose sealed id comes back in `Mcp-Session-Id`; later POSTs name it, GET opens its server-to-client
 * stream (resumable with `Last-Event-ID`), DELETE ends it. `statefulMode: stateless` serves each POST on its own.
 * The last adapter asked: it serves every POST the newer revisions left.
 */
export class Front20251125 implements RevisionAdapter {
  readonly revision = '2025-11-25';
  readonly versions = INITIALIZE_VERSIONS;
  private readonly known = new Set(INITIALIZE_VERSIONS);
  private readonly store: SessionStore;
  private readonly rt: BackendRuntime;

  constructor(rt: BackendRuntime, store: SessionStore) {
    this.rt = rt;
    this.store = store;
  }

  claims(version: string): boolean {
    return this.known.has(version.trim());
  }

  post(ex: Exchange, parsed: ParsedPost): Promise<Reply> | Reply {
    const sse = parsed.sse;
    const init = parsed.messages.find((m) => m.method === 'initialize');
    if (init) {
      if (parsed.messages.length > 1) return rpcReply(400, RpcCode.invalidRequest, 'Invalid Request: initialize must be sent alone', init.id);
      if (header(ex, SESSION_HEADER) && this.rt.stateful) {
        return rpcReply(400, RpcCode.invalidRequest, 'Invalid Request: initialize starts a new session; send it without Mcp-Session-Id', init.id);
      }
      return this.initialize(ex, init, sse);
    }
    if (!this.rt.stateful) return this.stateless(ex, parsed, sse);
    const session = this.session(ex);
    if (!(session instanceof McpSession)) return session;
    return this.dispatch(ex, session, parsed, sse, {});
  }

  other(ex: Exchange): Promise<Reply> | Reply {
    switch (ex.method) {
      case 'GET':
        return this.get(ex);
      case 'DELETE':
        return this.delete(ex);
      default:
        return rpcReply(405, TRANSPORT_ERROR, 'Method not allowed: use POST, GET or DELETE', null, { allow: 'GET, POST, DELETE' });
    }
  }

  /** The session named by the request's header, resumed from its sealed id when this replica does not hold it. */
  private session(ex: Exchange): McpSession | Reply {
    const id = header(ex, SESSION_HEADER);
    if (!id) return rpcReply(400, TRANSPORT_ERROR, 'Bad Request: the Mcp-Session-Id header is required for requests other than initialize');
    const caller = principalOf(ex);
    const session = this.store.get(id) ?? this.store.resume(id, this.rt, clientOf(ex, this.rt.multiplexed), caller);
    if (typeof session === 'string') return rpcReply(503, LIMIT_CODE, session);
    // A session opened by another caller is not found (ADR 0120): its id is not a credential.
    if (!session || session.kind !== 'streamable' || (session.principal !== undefined && session.principal !== caller)) return rpcReply(404, -32001, 'Session not found');
    return session;
  }

  /** Serve the POST's messages on `session`. Notifications and responses get 202; requests their answers. */
  private dispatch(ex: Exchange, session: McpSession, parsed: ParsedPost, sse: boolean, headers: HeaderMap): Promise<Reply> | Reply {
    session.touch();
    const requests = parsed.messages.filter(isRequest);
    for (const m of parsed.messages) if (!isRequest(m)) session.clientMessage(m);
    if (requests.length === 0) return localReply(202, null, headers);
    const log = session.streams.events;
    const resumable = log ? { open: () => log.post(), prime: session.primes } : undefined;
    const responder = new PostResponder(sse, requests.length, parsed.batch, headers, (m) => session.deliverUnrelated(m), resumable);
    const authorizer = ex.get(MCP_AUTHORIZER);
    session.inflight++;
    const calls = requests.map((m) => session.startCall(m, responder, authorizer, ex.requestId));
    // A client that goes away cancels its upstream work (the rule; see docs/mcp.md), unless it holds an
    // event id of the response: then it may resume with Last-Event-ID, and the work is cancelled only if it does
    // not within RESUME_GRACE_MS.
    const cancelAll = (): void => {
      for (const c of calls) session.cancel(c, 'the client disconnected');
    };
    responder.onGone = cancelAll;
    const onAbort = (): void => {
      if (!responder.resumable) cancelAll();
    };
    ex.signal.addEventListener('abort', onAbort, { once: true });
    return responder.reply.then((reply) => {
      const body = reply.body;
      const done = (): void => {
        session.inflight--;
        session.touch();
        ex.signal.removeEventListener('abort', onAbort);
      };
      if (body && typeof (body as NodeJS.ReadableStream).on === 'function') (body as NodeJS.ReadableStream).on('close', done);
      else done();
      return reply;
    });
  }

  private async initialize(ex: Exchange, init: RpcMessage, sse: boolean): Promise<Reply> {
    const kind = this.rt.stateful ? 'streamable' : 'stateless';
    if (this.rt.stateful) {
      const refused = this.store.admit();
      if (refused) return rpcReply(503, LIMIT_CODE, refused, init.id);
    }
    const session = new McpSession(this.rt, randomUUID(), kind, init.params ?? {}, clientOf(ex, this.rt.multiplexed));
    let result: Record<string, unknown>;
    try {
      result = await session.initialize();
    } catch (err) {
      if (this.rt.stateful) this.store.settle();
      await session.close(true, 'initialize failed');
      const f = err instanceof RpcFailure ? err : new RpcFailure(RpcCode.internalError, (err as Error).message, 500);
      return rpcReply(f.httpStatus, f.code, f.message, init.id);
    }
    const headers: HeaderMap = {};
    if (this.rt.stateful) {
      const id = session.seal();
      this.store.add(session, id);
      this.store.settle();
      headers[SESSION_HEADER] = id;
    } else void session.close(true, 'stateless request done');
    const answer = { jsonrpc: '2.0', id: init.id, result };
    if (!sse) return jsonReply(200, answer, headers);
    const stream = new SseStream();
    stream.send(answer);
    stream.end();
    return stream.reply(headers);
  }

  /**
   * `statefulMode: stateless`: every POST gets fresh target connections, initialized with what the client says
   * (its `MCP-Protocol-Version`), closed once the answer is complete.
   */
  private async stateless(ex: Exchange, parsed: ParsedPost, sse: boolean): Promise<Reply> {
    const version = header(ex, 'mcp-protocol-version') ?? '2025-11-25';
    const params = { protocolVersion: version, capabilities: {}, clientInfo: { name: 'switchyard', version: '0.1.0' } };
    const session = new McpSession(this.rt, randomUUID(), 'stateless', params, clientOf(ex, this.rt.multiplexed));
    session.initialized = true;
    session.protocolVersion = version;
    const reply = await this.dispatch(ex, session, parsed, sse, {});
    const close = (): void => void session.close(true, 'stateless request done');
    const body = reply.body;
    if (body && typeof (body as NodeJS.ReadableStream).on === 'function') (body as NodeJS.ReadableStream).on('close', close);
    else close();
    return reply;
  }

  private get(ex: Exchange): Reply {
    if (!this.rt.stateful) return rpcReply(405, TRANSPORT_ERROR, 'Method not allowed: this MCP route is stateless', null, { allow: 'POST' });
    const accept = (header(ex, 'accept') ?? '').toLowerCase();
    if (!accept.includes('text/event-stream')) return rpcReply(406, TRANSPORT_ERROR, 'Not Acceptable: the client must accept text/event-stream');
    const session = this.session(ex);
    if (!(session instanceof McpSession)) return session;
    session.touch();
    const stream = new SseStream();
    // Resumption (MCP "Resumability and Redelivery"): an id this session made resumes its stream; any other id
    // (another replica's, expired) opens a fresh GET stream, as a GET without the header does.
    const lastEventId = header(ex, 'last-event-id');
    if (lastEventId) {
      const resumed = session.streams.resume(lastEventId, stream);
      if (resumed === 'resumed') return stream.reply();
      // The stream had ended and the client has all of it: nothing to send, and nothing to reconnect to.
      if (resumed === 'finished') return localReply(204, null, {});
    }
    if (!session.streams.openGet(stream)) return rpcReply(409, TRANSPORT_ERROR, 'Conflict: only one server-to-client stream is allowed per session');
    return stream.reply();
  }

  private async delete(ex: Exchange): Promise<Reply> {
    if (!this.rt.stateful) return rpcReply(405, TRANSPORT_ERROR, 'Method not allowed: this MCP route is stateless', null, { allow: 'POST' });
    const session = this.session(ex);
    if (!(session instanceof McpSession)) return session;
    await this.store.end(header(ex, SESSION_HEADER)!, session, true, 'deleted by the client', true);
    return localReply(200, null, {});
  }
}
