import type { Logger, PluginSpans } from 'switchyard/sdk';
import type { McpAuthorizer } from '../../lib/mcp/authorizer.ts';
import { initializeResult } from './aggregate.ts';
import { ClientCalls } from './calls.ts';
import { RpcCode, RpcFailure, errorMessage, isRequest } from './jsonrpc.ts';
import type { RpcId, RpcMessage } from './jsonrpc.ts';
import { decodeServerRequestId, encodeServerRequestId, prefixUri } from './naming.ts';
import { Call, DETACHED } from './responder.ts';
import type { Responder } from './responder.ts';
import type { ClientEnvelope } from './revisions/2026-07-28/protocol.ts';
import type { InputRegistry, InputRounds } from './revisions/2026-07-28/inputs.ts';
import { INITIALIZE_SESSION } from './revisions/revision.ts';
import type { SessionRevision } from './revisions/revision.ts';
import { route } from './router.ts';
import { methodSpan } from './spans.ts';
import { LIMIT_CODE, failureOf } from './runtime.ts';
import type { BackendRuntime, Json } from './runtime.ts';
import { principalOf, sealSession } from './session-token.ts';
import type { SessionClaims } from './session-token.ts';
import { ClientStreams } from './streams.ts';
import { SEALED_SUBSCRIPTIONS_MAX_CHARS, Subscriptions } from './subscriptions.ts';
import { TargetConn } from './target-conn.ts';
import { TargetError } from './target-errors.ts';
import type { CompiledTarget, ConnHost, TargetClient } from './target.ts';
import { upstreamHeaders } from './http-util.ts';
import type { ClientContext } from './http-util.ts';

export type { BackendRuntime } from './runtime.ts';

/**
 * One client session: its target connections, the client requests in flight (calls.ts), the streams towards the
 * client (streams.ts) and its resource subscriptions (subscriptions.ts). Requests are routed by name (router.ts),
 * list calls fanned out and merged (aggregate.ts); messages from targets are rewritten (prefixes, server-request
 * ids) and sent on the stream of the request they relate to, else the GET stream. What a protocol revision changes
 * comes in through `revision` (revisions/).
 */
export class McpSession implements ConnHost {
  readonly rt: BackendRuntime;
  readonly uuid: string;
  /** Who opened it (`principalOf`, sealed in its id): no other caller finds it (ADR 0120). Undefined: unbound. */
  readonly principal: string | undefined;
  /**
   * `2026-07-28`: clients of that revision (no client session; the gateway keeps these per client identity, or per
   * request on a stateless backend: `ephemeral`).
   */
  readonly kind: 'streamable' | 'legacy' | 'stateless' | '2026-07-28';
  readonly revision: SessionRevision;
  /** The client's envelope when the session serves 2026-07-28 requests. */
  envelope: ClientEnvelope | undefined;
  /** Per-request (stateless backend): server-to-client requests cannot be turned into input-required results. */
  ephemeral = false;
  /** Where calls waiting for a 2026-07-28 client's input are registered (pooled sessions). */
  inputRegistry: InputRegistry | undefined;
  /** Input-required rounds of a session serving 2026-07-28 clients. */
  inputs: InputRounds | undefined;
  /** The client identity a pooled 2026-07-28 session serves. */
  poolKey: string | undefined;
  token = '';
  initParams: Json;
  protocolVersion = '';
  initialized = false;
  readonly client: ClientContext;
  private readonly targetClients = new Map<string, Promise<TargetClient>>();
  readonly logger: Logger;
  readonly conns: TargetConn[];
  private readonly byTarget = new Map<string, TargetConn>();
  readonly calls = new ClientCalls();
  readonly streams: ClientStreams;
  readonly subscriptions: Subscriptions;
  /** The per-target claims this session was resumed from (kept for targets not started yet when it is sealed again). */
  private readonly claimed: SessionClaims['t'] | undefined;
  /** Called with each new sealed id after the first (subscriptions changed): the store maps it to this session. */
  onResealed: ((token: string) => void) | undefined;
  lastActivity = Date.now();
  /** HTTP requests of this session being served. */
  inflight = 0;
  closed = false;

  constructor(rt: BackendRuntime, uuid: string, kind: McpSession['kind'], initParams: Json, client: ClientContext, claims?: SessionClaims, revision = INITIALIZE_SESSION) {
    this.rt = rt;
    this.uuid = uuid;
    this.principal = claims !== undefined ? claims.w : principalOf(client.exchange);
    this.kind = kind;
    this.revision = revision;
    this.initParams = initParams;
    this.client = client;
    this.logger = rt.logger.child({ session: uuid.slice(0, 8) });
    this.streams = new ClientStreams(kind === 'streamable', this.logger, () => this.primes, () => this.touch());
    this.subscriptions = new Subscriptions(this.logger, () => this.closed);
    this.claimed = claims?.t;
    this.conns = rt.targets.map((t) => {
      const c = claims?.t[t.name];
      const conn = new TargetConn(t, this, c ? { sessionId: c.s, protocolVersion: c.v, capabilities: c.c } : undefined);
      this.byTarget.set(t.name, conn);
      this.subscriptions.restore(t.name, c?.r);
      return conn;
    });
    if (claims) {
      this.protocolVersion = claims.p;
      this.initialized = true;
    }
  }

  get headers(): Readonly<Record<string, string>> | undefined {
    return this.client.headers;
  }

  /** The connection to the target named `name`. */
  target(name: string): TargetConn | undefined {
    return this.byTarget.get(name);
  }

  /** Resource subscriptions are remembered (replayed, sealed) only by sessions that outlive a request. */
  get holdsSubscriptions(): boolean {
    return this.kind === 'streamable' || this.kind === 'legacy';
  }

  /**
   * How this session's connection to `target` presents the client: the target's own request policies
   * (`requestHeaderModifier`) applied to a copy of the client's request, and the per-attempt hook of the merged
   * policies (`backendAuth`). Worked out once per target and session.
   */
  targetClient(target: CompiledTarget): Promise<TargetClient> {
    let client = this.targetClients.get(target.name);
    if (!client) {
      client = this.resolveTargetClient(target);
      this.targetClients.set(target.name, client);
      // A failure is not kept: the next connection attempt asks again.
      client.catch(() => this.targetClients.delete(target.name));
    }
    return client;
  }

  private async resolveTargetClient(target: CompiledTarget): Promise<TargetClient> {
    const base = this.client;
    if (!target.requestPolicies) return { headers: base.headers, onAttempt: target.policies.attemptHook(base.exchange) };
    const derived = await target.requestPolicies.runRequestHooks(base.exchange);
    if (derived.reply) throw new Error(`a policy of the target refused the client (HTTP ${derived.reply.status})`);
    return { headers: upstreamHeaders(derived.exchange, base.shared, this.rt.multiplexed), onAttempt: target.policies.attemptHook(derived.exchange) };
  }

  touch(): void {
    this.lastActivity = Date.now();
  }

  /** Nothing in flight and no stream open: the idle clock runs. */
  get idle(): boolean {
    return this.inflight === 0 && this.calls.size === 0 && !this.streams.open;
  }

  /** Clients of 2025-11-25 and later get priming events (an id with empty data) when a resumable stream opens. */
  get primes(): boolean {
    return this.protocolVersion >= '2025-11-25';
  }

  /** Start one target; its failure becomes a JSON-RPC internal error naming it. */
  async readyOne(conn: TargetConn): Promise<void> {
    try {
      await conn.ready();
    } catch (err) {
      throw failureOf(err);
    }
  }

  /** Start every target and answer `initialize`: one target's answer as-is, or the merged answer (§4.4). */
  async initialize(): Promise<Json> {
    const { protocolVersion, result } = await initializeResult(this);
    this.protocolVersion = protocolVersion;
    this.initialized = true;
    return result;
  }

  /** The self-describing id handed to the client: everything needed to rebuild this session elsewhere. */
  seal(): string {
    const t: SessionClaims['t'] = {};
    const budget = { chars: SEALED_SUBSCRIPTIONS_MAX_CHARS };
    for (const c of this.conns) {
      let entry: { s?: string; v?: string; c?: string[]; r?: string[] } | undefined;
      if (c.state === 'ready' || c.sessionId !== undefined) {
        entry = {};
        if (c.sessionId) entry.s = c.sessionId;
        if (c.protocolVersion) entry.v = c.protocolVersion;
        if (c.capabilities) entry.c = [...c.capabilities];
      } else if (this.claimed?.[c.name]) {
        // Resumed here and not started yet: what the previous id said still holds.
        const { r: _r, ...rest } = this.claimed[c.name]!;
        entry = rest;
      }
      const kept = this.subscriptions.sealed(c.name, budget);
      if (kept) (entry ??= {}).r = kept;
      if (entry) t[c.name] = entry;
    }
    const claims: SessionClaims = { u: this.uuid, p: this.protocolVersion, i: this.initParams, t, n: Math.floor(Date.now() / 1000) };
    this.token = sealSession(this.rt.key, this.rt.aad, this.principal === undefined ? claims : { ...claims, w: this.principal });
    return this.token;
  }

  // ---- client requests ----------------------------------------------------------------------------------------

  /** Start serving one client request; the answer goes to `responder`. */
  startCall(message: RpcMessage, responder: Responder, authorizer: McpAuthorizer | undefined, requestId?: string): Call {
    const id = message.id as RpcId;
    const call = new Call(id, message.method!, responder);
    call.requestId = requestId;
    if (this.calls.has(id)) {
      call.done = true;
      responder.final(errorMessage(id, RpcCode.invalidRequest, `request id ${JSON.stringify(id)} is already in use by a request in progress`), 400);
      return call;
    }
    if (this.calls.size >= this.rt.maxPendingRequests) {
      call.done = true;
      const message = `too many requests in progress on this session (the limit is ${this.rt.maxPendingRequests}, maxPendingRequests); wait for answers before sending more`;
      responder.final(errorMessage(id, LIMIT_CODE, message), 429);
      return call;
    }
    this.calls.add(call);
    if (this.calls.takeEarlyCancel(id)) {
      this.cancel(call, 'cancelled by the client');
      return call;
    }
    const token = (message.params?._meta as Json | undefined)?.progressToken;
    if (token !== undefined) this.calls.trackProgress(call, token);
    const span = this.rt.spans?.enabled ? methodSpan(this.rt.spans, this, message, this.holdsSubscriptions ? this.uuid : undefined) : undefined;
    if (span === undefined) route(this, call, message, authorizer).catch((err: unknown) => this.failCall(call, err));
    else {
      call.span = span;
      span.run(() => route(this, call, message, authorizer).catch((err: unknown) => this.failCall(call, err)));
    }
    return call;
  }

  private failCall(call: Call, err: unknown): void {
    if (err instanceof RpcFailure) return this.finish(call, errorMessage(call.id, err.code, err.message, err.data), err.httpStatus);
    if (err instanceof TargetError) return this.finish(call, errorMessage(call.id, err.kind.code, err.message), err.kind.httpStatus);
    this.logger.error('MCP request failed in the gateway', { method: call.method, error: (err as Error)?.message, stack: (err as Error)?.stack });
    this.finish(call, errorMessage(call.id, RpcCode.internalError, `the gateway failed to handle \`${call.method}\`: ${(err as Error)?.message ?? err}`), 500);
  }

  /** The call's answer (once): to its responder. */
  finish(call: Call, message: RpcMessage, httpStatus?: number): void {
    if (call.done) return;
    call.done = true;
    const token = call.responder === DETACHED ? this.inputs?.tokenOf(call) : undefined;
    this.forget(call);
    message.id = call.id;
    if (call.span !== undefined) call.span.end(message.error ? String(message.error.code) : undefined);
    // Ended while waiting for the client's retry (a failure, or the target gave up asking): keep the answer for it.
    if (token) this.inputRegistry?.set(token, { session: this, call, final: { message, httpStatus } });
    call.responder.final(message, httpStatus);
    this.touch();
  }

  private forget(call: Call): void {
    this.calls.remove(call);
    this.inputs?.ended(call);
  }

  /** Stop a call: tell every target working on it, and give it no answer. */
  cancel(call: Call, reason: string): void {
    if (call.done) return;
    call.done = true;
    this.forget(call);
    for (const ref of call.refs) ref.conn.abandon(ref.id, reason);
    call.responder.abandon();
  }

  /** A client notification or a client response (to a server-to-client request). */
  clientMessage(message: RpcMessage): void {
    this.touch();
    if (message.method === undefined) return this.clientResponse(message);
    const params = message.params;
    switch (message.method) {
      case 'notifications/initialized':
        return; // each target got its own when it was initialized
      case 'notifications/cancelled': {
        const id = params?.requestId as RpcId;
        const call = this.calls.get(id);
        if (call) this.cancel(call, typeof params?.reason === 'string' ? params.reason : 'cancelled by the client');
        // The cancellation can overtake its request (two concurrent POSTs): remember it briefly.
        else if (typeof id === 'string' || typeof id === 'number') this.calls.noteEarlyCancel(id);
        return;
      }
      default:
        for (const c of this.conns) c.notify(message.method, params);
    }
  }

  private clientResponse(message: RpcMessage): void {
    if (message.id === undefined || message.id === null) return;
    if (!this.rt.multiplexed) return this.conns[0]!.respond(message.id, message);
    const decoded = decodeServerRequestId(message.id);
    const conn = decoded && this.byTarget.get(decoded.target);
    if (!conn || !decoded) {
      this.logger.debug('a client response matches no target request', { id: message.id });
      return;
    }
    conn.respond(decoded.id, message);
  }

  // ---- messages from targets ----------------------------------------------------------------------------------

  fromTarget(conn: TargetConn, m: RpcMessage): void {
    this.touch();
    if (this.revision.fromTarget(this, conn, m)) return;
    const multiplexed = this.rt.multiplexed;
    if (isRequest(m) && this.kind === 'stateless') {
      // Nobody could answer it (no session to send the answer on): refuse at once rather than let the target wait.
      conn.respond(m.id as RpcId, errorMessage(m.id, RpcCode.methodNotFound, `\`${m.method}\` is not available: the gateway route is stateless`));
      return;
    }
    if (isRequest(m)) {
      // A server-to-client request (sampling, elicitation, roots): relay it with an id that says who asked.
      const out = multiplexed ? { ...m, id: encodeServerRequestId(conn.name, m.id as RpcId) } : m;
      return this.deliver(conn, out, undefined, true);
    }
    const params = m.params;
    switch (m.method) {
      case 'notifications/progress':
        return this.deliver(conn, m, this.calls.withProgress(params?.progressToken), true);
      case 'notifications/message':
        if (multiplexed && params && params.logger === undefined) params.logger = conn.name;
        return this.deliver(conn, m, undefined, true);
      case 'notifications/resources/updated':
        if (multiplexed && params && typeof params.uri === 'string') params.uri = prefixUri(conn.name, params.uri);
        break;
      case 'notifications/cancelled':
        if (multiplexed && params && (typeof params.requestId === 'string' || typeof params.requestId === 'number')) {
          params.requestId = encodeServerRequestId(conn.name, params.requestId);
        }
        break;
      case 'notifications/tasks/status':
        if (multiplexed && params && typeof params.taskId === 'string') params.taskId = prefixUri(conn.name, params.taskId);
        break;
    }
    if (m.method?.endsWith('/list_changed')) return this.streams.onceThisTurn(m.method, () => this.deliver(conn, m, undefined, false));
    this.deliver(conn, m, undefined, false);
  }

  /**
   * Send a message to the client: on the legacy stream; else on the response stream of the call it relates to
   * (by progress token; for requests and log messages, the latest open call to the same target); else on the GET
   * stream; else keep it until the GET stream opens.
   */
  deliver(conn: TargetConn | undefined, m: RpcMessage, call: Call | undefined, preferCall: boolean): void {
    if (this.streams.legacyStream) {
      this.streams.legacyStream.send(m);
      return;
    }
    if (call && !call.done && call.responder.streaming) {
      call.responder.related(m);
      return;
    }
    if (preferCall && conn) {
      const latest = this.calls.latestStreaming(conn.name);
      if (latest) {
        latest.responder.related(m);
        return;
      }
    }
    if (this.kind === '2026-07-28') {
      // No session, no GET stream: a message that belongs to no open request has nowhere to go.
      this.logger.debug('dropped a target message no 2026-07-28 request is waiting for', { method: m.method });
      return;
    }
    this.streams.unrelated(m);
  }

  /** Messages for the client when it has no stream: from its POST responses in JSON mode. */
  deliverUnrelated(m: RpcMessage): void {
    this.deliver(undefined, m, undefined, false);
  }

  /** ConnHost: spans of target requests. */
  get spans(): PluginSpans | undefined {
    return this.rt.spans;
  }

  /** ConnHost: a target was initialized afresh (a restart, or its first start here after a resume): subscribe again. */
  targetInitialized(conn: TargetConn): void {
    this.subscriptions.replay(conn);
  }

  /** ConnHost: a target went down; one holding subscriptions is restarted without waiting for a request. */
  targetDown(conn: TargetConn): void {
    if (this.holdsSubscriptions) this.subscriptions.targetDown(conn);
  }

  /**
   * End the session: answer the calls still open, close the streams and the target connections. `terminate`
   * also ends resumable upstream sessions (client DELETE, expiry); shutdown leaves them for another replica.
   */
  async close(terminate: boolean, reason: string): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const call of [...this.calls.values()]) this.finish(call, errorMessage(call.id, RpcCode.internalError, `the session ended: ${reason}`));
    this.streams.close();
    this.subscriptions.dispose();
    await Promise.all(this.conns.map((c) => c.close(terminate)));
  }
}
