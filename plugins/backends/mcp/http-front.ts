import { randomUUID } from 'node:crypto';
import { jsonReply, localReply } from 'switchyard/sdk';
import type { Exchange, HeaderMap, Reply } from 'switchyard/sdk';
import { MCP_AUTHORIZER } from '../../lib/mcp/authorizer.ts';
import { TRANSPORT_ERROR, clientOf, header, rpcReply } from './http-util.ts';
import { RpcCode, RpcFailure, errorMessage, isRequest, isValidMessage } from './jsonrpc.ts';
import type { RpcMessage } from './jsonrpc.ts';
import { ALL_VERSIONS, ModernCode, classify, headerIsModern } from './modern.ts';
import { ModernFront } from './modern-front.ts';
import { PostResponder, StreamResponder } from './responder.ts';
import { LIMIT_CODE, McpSession } from './session.ts';
import type { BackendRuntime } from './session.ts';
import type { SessionStore } from './session-store.ts';
import { SseStream } from './sse-stream.ts';

/** The body limit of MCP requests (BEHAVIOUR.md §8.3). */
export const MCP_BODY_LIMIT = 2 * 1024 * 1024;
const SESSION_HEADER = 'mcp-session-id';
const KNOWN_VERSIONS = new Set<string>(ALL_VERSIONS);

interface Parsed {
  readonly messages: RpcMessage[];
  readonly batch: boolean;
}

async function readMessages(ex: Exchange): Promise<Parsed | Reply> {
  const body = await ex.bufferBody(MCP_BODY_LIMIT);
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    return rpcReply(400, RpcCode.parseError, 'Parse error: the body is not valid JSON');
  }
  const batch = Array.isArray(value);
  const list = batch ? (value as unknown[]) : [value];
  if (list.length === 0) return rpcReply(400, RpcCode.invalidRequest, 'Invalid Request: empty batch');
  for (const m of list) {
    if (!isValidMessage(m)) {
      const id = typeof m === 'object' && m !== null ? (m as { id?: unknown }).id : undefined;
      return rpcReply(400, RpcCode.invalidRequest, 'Invalid Request: not a JSON-RPC 2.0 message', typeof id === 'string' || typeof id === 'number' ? id : null);
    }
  }
  return { messages: list as RpcMessage[], batch };
}

/**
 * The streamable-HTTP server: protocol revisions 2024-11-05 … 2025-11-25 (sessions, `initialize`), and 2026-07-28
 * (stateless requests carrying their `_meta` envelope, served by ModernFront) on the same endpoint.
 */
export class StreamableFront {
  private readonly store: SessionStore;
  private rt: BackendRuntime;
  private readonly modern: ModernFront;

  constructor(rt: BackendRuntime, store: SessionStore) {
    this.rt = rt;
    this.store = store;
    this.modern = new ModernFront(rt, store);
  }

  handle(ex: Exchange): Promise<Reply> | Reply {
    if (ex.method !== 'POST' && headerIsModern(header(ex, 'mcp-protocol-version'))) {
      // The 2026-07-28 revision is POST-only: no GET stream, no session to DELETE (BEHAVIOUR §4.4).
      return rpcReply(400, TRANSPORT_ERROR, `Bad Request: protocol revision 2026-07-28 has no sessions and no ${ex.method} requests; POST each request`);
    }
    switch (ex.method) {
      case 'POST':
        return this.post(ex);
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
    const session = this.store.get(id) ?? this.store.resume(id, this.rt, clientOf(ex));
    if (!session || session.kind !== 'streamable') return rpcReply(404, -32001, 'Session not found');
    return session;
  }

  private async post(ex: Exchange): Promise<Reply> {
    const contentType = header(ex, 'content-type') ?? '';
    if (!contentType.toLowerCase().includes('application/json')) {
      return rpcReply(415, TRANSPORT_ERROR, 'Unsupported Media Type: Content-Type must be application/json');
    }
    const accept = (header(ex, 'accept') ?? '').toLowerCase();
    const sse = accept.includes('text/event-stream');
    const json = accept === '' || accept.includes('application/json') || accept.includes('*/*');
    if (!sse && !json) return rpcReply(406, TRANSPORT_ERROR, 'Not Acceptable: the client must accept application/json or text/event-stream');
    const parsed = await readMessages(ex);
    if (!('messages' in parsed)) return parsed;
    const first = parsed.messages[0]!;
    if (first.method !== undefined) ex.logField('mcp.method', first.method);
    if (first.method === 'tools/call' && typeof first.params?.name === 'string') ex.logField('mcp.tool', first.params.name);
    const version = header(ex, 'mcp-protocol-version');
    // Unknown modern-era values are the classifier's (it answers with the versions `server/discover` lists).
    if (version !== undefined && !KNOWN_VERSIONS.has(version.trim()) && !headerIsModern(version)) {
      return rpcReply(
        400,
        ModernCode.unsupportedVersion,
        `Bad Request: unsupported protocol version ${version} (supported: ${[...KNOWN_VERSIONS].join(', ')})`,
        parsed.batch ? null : (first.id ?? null),
        {},
        { supported: [...KNOWN_VERSIONS], requested: version },
      );
    }
    const era = classify(parsed.messages, parsed.batch, { protocolVersion: version, method: header(ex, 'mcp-method'), name: header(ex, 'mcp-name') });
    if (era.kind === 'reject') return rpcReply(era.status, era.code, era.message, era.id, {}, era.data);
    if (era.kind === 'modern') return this.modern.post(ex, era.message, era.client, sse);
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

  /** Serve the POST's messages on `session`. Notifications and responses get 202; requests their answers. */
  private dispatch(ex: Exchange, session: McpSession, parsed: Parsed, sse: boolean, headers: HeaderMap): Promise<Reply> | Reply {
    session.touch();
    const requests = parsed.messages.filter(isRequest);
    for (const m of parsed.messages) if (!isRequest(m)) session.clientMessage(m);
    if (requests.length === 0) return localReply(202, null, headers);
    const log = session.events;
    const resumable = log ? { open: () => log.post(), prime: session.primes } : undefined;
    const responder = new PostResponder(sse, requests.length, parsed.batch, headers, (m) => session.deliverUnrelated(m), resumable);
    const authorizer = ex.get(MCP_AUTHORIZER);
    session.inflight++;
    const calls = requests.map((m) => session.startCall(m, responder, authorizer));
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
    const session = new McpSession(this.rt, randomUUID(), kind, init.params ?? {}, clientOf(ex));
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
  private async stateless(ex: Exchange, parsed: Parsed, sse: boolean): Promise<Reply> {
    const version = header(ex, 'mcp-protocol-version') ?? '2025-11-25';
    const params = { protocolVersion: version, capabilities: {}, clientInfo: { name: 'switchyard', version: '0.1.0' } };
    const session = new McpSession(this.rt, randomUUID(), 'stateless', params, clientOf(ex));
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
      const resumed = session.resumeStream(lastEventId, stream);
      if (resumed === 'resumed') return stream.reply();
      // The stream had ended and the client has all of it: nothing to send, and nothing to reconnect to.
      if (resumed === 'finished') return localReply(204, null, {});
    }
    if (!session.openGetStream(stream)) return rpcReply(409, TRANSPORT_ERROR, 'Conflict: only one server-to-client stream is allowed per session');
    return stream.reply();
  }

  private async delete(ex: Exchange): Promise<Reply> {
    if (!this.rt.stateful) return rpcReply(405, TRANSPORT_ERROR, 'Method not allowed: this MCP route is stateless', null, { allow: 'POST' });
    const session = this.session(ex);
    if (!(session instanceof McpSession)) return session;
    await this.store.end(header(ex, SESSION_HEADER)!, session, true, 'deleted by the client');
    return localReply(200, null, {});
  }
}

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
    const session = new McpSession(this.rt, uuid, 'legacy', {}, clientOf(ex));
    const stream = new SseStream();
    session.legacyStream = stream;
    this.store.add(session, uuid);
    stream.onClose = () => void this.store.end(uuid, session, true, 'the client closed the stream');
    const q = ex.originalUrl.indexOf('?');
    const path = q === -1 ? ex.originalUrl : ex.originalUrl.slice(0, q);
    stream.event('endpoint', `${path}?sessionId=${uuid}`);
    stream.startKeepAlive(25_000);
    return stream.reply();
  }

  private async post(ex: Exchange): Promise<Reply> {
    const id = new URLSearchParams(ex.query).get('sessionId');
    if (!id) return rpcReply(422, TRANSPORT_ERROR, 'the sessionId query parameter is required');
    const session = this.store.get(id);
    if (!session || session.kind !== 'legacy') return rpcReply(404, -32001, 'Session not found');
    const parsed = await readMessages(ex);
    if (!('messages' in parsed)) return parsed;
    session.touch();
    const responder = new StreamResponder(() => session.legacyStream);
    const authorizer = ex.get(MCP_AUTHORIZER);
    for (const m of parsed.messages) {
      if (!isRequest(m)) session.clientMessage(m);
      else if (m.method === 'initialize') void this.initialize(session, m);
      else if (!session.initialized) session.legacyStream?.send(errorMessage(m.id, RpcCode.invalidRequest, 'the session is not initialized'));
      else session.startCall(m, responder, authorizer);
    }
    return localReply(202, 'Accepted', { 'content-type': 'text/plain' });
  }

  private async initialize(session: McpSession, init: RpcMessage): Promise<void> {
    if (session.initialized) {
      session.legacyStream?.send(errorMessage(init.id, RpcCode.invalidRequest, 'the session is already initialized'));
      return;
    }
    session.initParams = init.params ?? {};
    try {
      const result = await session.initialize();
      session.legacyStream?.send({ jsonrpc: '2.0', id: init.id, result });
    } catch (err) {
      const f = err instanceof RpcFailure ? err : new RpcFailure(RpcCode.internalError, (err as Error).message, 500);
      session.legacyStream?.send(errorMessage(init.id, f.code, f.message));
    }
  }
}
