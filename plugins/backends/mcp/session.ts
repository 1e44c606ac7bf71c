import { randomBytes } from 'node:crypto';
import type { Logger } from 'switchyard/sdk';
import type { McpAuthorizer, McpItem } from '../../lib/mcp/authorizer.ts';
import { RpcCode, RpcFailure, errorMessage, isRequest, resultMessage } from './jsonrpc.ts';
import type { RpcId, RpcMessage } from './jsonrpc.ts';
import type { McpMetrics } from './metrics.ts';
import { INPUT_REQUEST_CAPABILITY, INPUT_REQUIRED_METHODS, MODERN_VERSION, SUBSCRIPTION_ID_META_KEY, metaOf, modernCapabilities } from './modern.ts';
import type { ModernClient } from './modern.ts';
import { decodeServerRequestId, encodeServerRequestId, prefixName, prefixResult, prefixUri, splitName, splitUri } from './naming.ts';
import { Call, DETACHED } from './responder.ts';
import type { Responder } from './responder.ts';
import { sealSession } from './session-token.ts';
import type { SessionClaims } from './session-token.ts';
import type { SseStream } from './sse-stream.ts';
import { EventLog } from './event-log.ts';
import { MAX_PAGES, TargetConn, TargetError } from './target-conn.ts';
import type { CompiledTarget, ConnHost, TargetClient } from './target-conn.ts';
import { upstreamHeaders } from './http-util.ts';
import type { ClientContext } from './http-util.ts';

/** What every session of one backend shares: the compiled targets and the backend's modes. */
export interface BackendRuntime {
  readonly targets: readonly CompiledTarget[];
  /** More than one target, or `prefixMode: always`: names are prefixed and the gateway answers `initialize`. */
  readonly multiplexed: boolean;
  readonly failOpen: boolean;
  readonly stateful: boolean;
  readonly logger: Logger;
  readonly key: Buffer;
  /** The backend fingerprint, bound into sealed session ids. */
  readonly aad: Buffer;
  /** Client requests one session may have in progress (`maxPendingRequests`). */
  readonly maxPendingRequests: number;
  readonly metrics?: McpMetrics;
}

type Json = Record<string, unknown>;
type ItemKind = McpItem['kind'];

/** Gateway identity in multiplexed `initialize` answers. */
export const SERVER_INFO = { name: 'switchyard', version: '0.1.0' };
const PREAMBLE =
  'This MCP server is a gateway in front of several MCP servers (targets). Tools and prompts are named `<target>_<name>`; resource URIs are `<target>+<uri>`.';
/** Messages kept for a client that has no stream open yet (the GET stream comes after `initialize`). */
const QUEUE_LIMIT = 256;
const KEEP_ALIVE_MS = 25_000;
/** How long a cancellation that arrived before its request is kept, and how many are kept per session. */
const EARLY_CANCEL_MS = 2000;
const EARLY_CANCEL_MAX = 256;
/** Resource subscriptions kept per session and target (each is replayed on a restart and may be sealed in the id). */
export const MAX_SUBSCRIPTIONS = 256;
/** JSON-RPC code of the gateway's own limits (too many sessions, processes or requests): try again later. */
export const LIMIT_CODE = -32000;
/** Characters of subscribed resource URIs carried in a sealed session id (it travels in a header). */
export const SEALED_SUBSCRIPTIONS_MAX_CHARS = 2048;
/** A target with subscriptions that goes down is restarted without waiting for a request, this often at most. */
const EAGER_RESTARTS_PER_MINUTE = 5;
const SUBSCRIPTION_METHODS = new Set(['resources/subscribe', 'resources/unsubscribe']);

/** How long a 2026-07-28 call that returned `input_required` waits for the client's retry. */
export const INPUT_WAIT_MS = 5 * 60 * 1000;
/** `requestState` values the gateway mints (legacy targets' server-to-client requests); other values are a target's own. */
export const REQUEST_STATE_PREFIX = 'swy1.';

/** Calls waiting for a 2026-07-28 client's input, by the `requestState` handed out (one registry per backend). */
export interface InputRegistry {
  set(token: string, entry: InputEntry): void;
  get(token: string): InputEntry | undefined;
  delete(token: string): void;
}

export interface InputEntry {
  readonly session: McpSession;
  readonly call: Call;
  /** The call ended while it waited for the retry: its answer, for the retry. */
  readonly final?: { readonly message: RpcMessage; readonly httpStatus: number | undefined };
}

/** A server-to-client request of a legacy target, held for a 2026-07-28 client as an embedded input request. */
interface HeldRequest {
  readonly conn: TargetConn;
  readonly id: RpcId;
  readonly method: string;
  readonly params: Json | undefined;
}

/** The input-required state of one call (2026-07-28 client, legacy target asking for sampling, elicitation, roots). */
interface InputState {
  /** Client capabilities of the request (what the client can answer). */
  readonly capabilities: Json;
  /** The tool or prompt name, or resource URI, the request names: its retry must name the same. */
  readonly subject: unknown;
  /** Requests sent to the client, by key, not answered yet. */
  readonly waiting: Map<string, HeldRequest>;
  /** Requests that arrived since the last round. */
  queued: HeldRequest[];
  token: string | undefined;
  seq: number;
  flush: NodeJS.Immediate | undefined;
  timer: NodeJS.Timeout | undefined;
}

/** A target failure as the client's JSON-RPC error: its code and HTTP status (503 at a limit, 504 timed out, else 500). */
function failureOf(err: unknown): RpcFailure {
  if (err instanceof RpcFailure) return err;
  if (err instanceof TargetError) return new RpcFailure(err.kind.code, err.message, err.kind.httpStatus);
  return new RpcFailure(RpcCode.internalError, (err as Error)?.message ?? String(err), 500);
}

function nameOf(kind: ItemKind, key: string, item: Json): string | undefined {
  if (kind !== 'resource') return typeof item.name === 'string' ? item.name : undefined;
  const v = key === 'resourceTemplates' ? item.uriTemplate : item.uri;
  return typeof v === 'string' ? v : undefined;
}

/**
 * One client session: its target connections, the client requests in flight and the streams towards the client.
 * Requests are routed by name (`<target>_<tool>`), list calls fanned out and merged; messages from targets are
 * rewritten (prefixes, server-request ids) and sent on the stream of the request they relate to, else the GET stream.
 */
/** The gateway's preamble followed by each target's own instructions, labelled by target. */
function mergedInstructions(ready: readonly TargetConn[]): string {
  let instructions = PREAMBLE;
  for (const c of ready) {
    const text = c.initResult?.instructions;
    if (typeof text === 'string' && text.trim() !== '') instructions += `\n\n[${c.name}]\n${text}`;
  }
  return instructions;
}

export class McpSession implements ConnHost {
  readonly rt: BackendRuntime;
  readonly uuid: string;
  /**
   * `modern`: 2026-07-28 clients (no client session; the gateway keeps these per client identity, or per request on a
   * stateless backend: `ephemeral`).
   */
  readonly kind: 'streamable' | 'legacy' | 'stateless' | 'modern';
  /** The client's envelope when the session serves 2026-07-28 requests. */
  modernClient: ModernClient | undefined;
  /** Per-request (stateless backend): server-to-client requests cannot be turned into input-required results. */
  ephemeral = false;
  /** Where calls waiting for a modern client's input are registered (pooled modern sessions). */
  inputRegistry: InputRegistry | undefined;
  /** The client identity a pooled modern session serves. */
  poolKey: string | undefined;
  private readonly inputs = new Map<Call, InputState>();
  token = '';
  initParams: Json;
  protocolVersion = '';
  initialized = false;
  readonly client: ClientContext;
  private readonly targetClients = new Map<string, Promise<TargetClient>>();
  readonly logger: Logger;
  readonly conns: TargetConn[];
  private readonly byTarget = new Map<string, TargetConn>();
  private readonly calls = new Map<RpcId, Call>();
  private readonly progress = new Map<unknown, Call>();
  getStream: SseStream | undefined;
  legacyStream: SseStream | undefined;
  /** Resumable SSE streams (`Last-Event-ID`) of a stateful streamable-HTTP session. */
  readonly events: EventLog | undefined;
  /** Resource URIs the client subscribed to, per target (the target's own URIs): replayed when a target restarts. */
  private readonly subscriptions = new Map<string, Set<string>>();
  /** The per-target claims this session was resumed from (kept for targets not started yet when it is sealed again). */
  private readonly claimed: SessionClaims['t'] | undefined;
  /** Eager restarts of targets with subscriptions: pending timer and recent start times, per target. */
  private readonly restarts = new Map<string, { timer: NodeJS.Timeout | undefined; times: number[] }>();
  private sealWarned = false;
  /** Called with each new sealed id after the first (subscriptions changed): the store maps it to this session. */
  onResealed: ((token: string) => void) | undefined;
  private queue: RpcMessage[] = [];
  private queueWarned = false;
  private earlyCancels: Map<RpcId, number> | undefined;
  lastActivity = Date.now();
  /** HTTP requests of this session being served. */
  inflight = 0;
  closed = false;

  constructor(rt: BackendRuntime, uuid: string, kind: McpSession['kind'], initParams: Json, client: ClientContext, claims?: SessionClaims) {
    this.rt = rt;
    this.uuid = uuid;
    this.kind = kind;
    this.initParams = initParams;
    this.client = client;
    this.logger = rt.logger.child({ session: uuid.slice(0, 8) });
    this.events = kind === 'streamable' ? new EventLog(this.logger) : undefined;
    this.claimed = claims?.t;
    this.conns = rt.targets.map((t) => {
      const c = claims?.t[t.name];
      const conn = new TargetConn(t, this, c ? { sessionId: c.s, protocolVersion: c.v, capabilities: c.c } : undefined);
      this.byTarget.set(t.name, conn);
      if (Array.isArray(c?.r) && c.r.length > 0) this.subscriptions.set(t.name, new Set(c.r.filter((u) => typeof u === 'string')));
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
    return { headers: upstreamHeaders(derived.exchange, base.shared), onAttempt: target.policies.attemptHook(derived.exchange) };
  }

  touch(): void {
    this.lastActivity = Date.now();
  }

  /** Nothing in flight and no stream open: the idle clock runs. */
  get idle(): boolean {
    return this.inflight === 0 && this.calls.size === 0 && !this.getStream?.open && this.legacyStream === undefined;
  }

  // ---- initialize ---------------------------------------------------------------------------------------------

  /** Start one target; its failure becomes a JSON-RPC internal error naming it. */
  private async readyOne(conn: TargetConn): Promise<void> {
    try {
      await conn.ready();
    } catch (err) {
      throw failureOf(err);
    }
  }

  /**
   * Start every target and return the ones that are up. A failure fails the call (failClosed), or is logged and
   * left out (failOpen) unless every target failed.
   */
  private async readyTargets(method: string): Promise<TargetConn[]> {
    const settled = await Promise.allSettled(this.conns.map((c) => c.ready()));
    const failed = settled.flatMap((s, i) => (s.status === 'rejected' ? [{ conn: this.conns[i]!, error: s.reason as Error }] : []));
    if (failed.length > 0) {
      const message = failed.map((f) => f.error.message).join('; ');
      // The first failure sets the code and status (a target at its limit: 503; one that did not start in time: 504).
      const first = failureOf(failed[0]!.error);
      if (!this.rt.failOpen || failed.length === this.conns.length) throw new RpcFailure(first.code, message, first.httpStatus);
      for (const f of failed) this.logger.warn(`MCP target unavailable at ${method}; continuing without it (failOpen)`, { target: f.conn.name, error: f.error.message });
    }
    return this.conns.filter((c) => c.state === 'ready');
  }

  /** Start every target and answer `initialize`: one target's answer as-is, or the merged answer (§4.4). */
  async initialize(): Promise<Json> {
    if (!this.rt.multiplexed) {
      const conn = this.conns[0]!;
      await this.readyOne(conn);
      this.protocolVersion = conn.protocolVersion!;
      this.initialized = true;
      return conn.initResult!;
    }
    const ready = await this.readyTargets('initialize');
    const versions = ready.map((c) => c.protocolVersion!).sort();
    this.protocolVersion = versions[0]!;
    this.initialized = true;
    const has = (cap: string): boolean => ready.some((c) => c.capabilities?.includes(cap));
    const capabilities: Json = {};
    if (has('tools')) capabilities.tools = { listChanged: true };
    if (has('prompts')) capabilities.prompts = { listChanged: true };
    if (has('resources')) {
      const subscribe = this.rt.stateful && ready.some((c) => (c.initResult?.capabilities as Json | undefined)?.resources && ((c.initResult!.capabilities as Json).resources as Json).subscribe === true);
      capabilities.resources = subscribe ? { listChanged: true, subscribe: true } : { listChanged: true };
    }
    if (has('logging')) capabilities.logging = {};
    if (has('completions')) capabilities.completions = {};
    const instructions = mergedInstructions(ready);
    return { protocolVersion: this.protocolVersion, capabilities, serverInfo: { ...SERVER_INFO }, instructions };
  }

  /** The self-describing id handed to the client: everything needed to rebuild this session elsewhere. */
  seal(): string {
    const t: SessionClaims['t'] = {};
    let budget = SEALED_SUBSCRIPTIONS_MAX_CHARS;
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
      const uris = this.subscriptions.get(c.name);
      if (uris && uris.size > 0) {
        const kept: string[] = [];
        for (const uri of uris) {
          if (uri.length > budget) break;
          budget -= uri.length;
          kept.push(uri);
        }
        if (kept.length < uris.size && !this.sealWarned) {
          this.sealWarned = true;
          this.logger.warn('too many resource subscriptions to carry in the session id; another gateway resuming it will not replay the rest', { target: c.name, carried: kept.length, subscriptions: uris.size });
        }
        if (kept.length > 0) (entry ??= {}).r = kept;
      }
      if (entry) t[c.name] = entry;
    }
    this.token = sealSession(this.rt.key, this.rt.aad, { u: this.uuid, p: this.protocolVersion, i: this.initParams, t, n: Math.floor(Date.now() / 1000) });
    return this.token;
  }

  // ---- messages from the client -------------------------------------------------------------------------------

  /** Start serving one client request; the answer goes to `responder`. */
  startCall(message: RpcMessage, responder: Responder, authorizer: McpAuthorizer | undefined): Call {
    const id = message.id as RpcId;
    const call = new Call(id, message.method!, responder);
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
    this.calls.set(id, call);
    const early = this.earlyCancels?.get(id);
    if (early !== undefined) {
      this.earlyCancels!.delete(id);
      if (early > Date.now()) {
        this.cancel(call, 'cancelled by the client');
        return call;
      }
    }
    const token = (message.params?._meta as Json | undefined)?.progressToken;
    if (token !== undefined) {
      call.progressToken = token;
      this.progress.set(token, call);
    }
    this.route(call, message, authorizer).catch((err: unknown) => this.failCall(call, err));
    return call;
  }

  private failCall(call: Call, err: unknown): void {
    if (err instanceof RpcFailure) return this.finish(call, errorMessage(call.id, err.code, err.message, err.data), err.httpStatus);
    if (err instanceof TargetError) return this.finish(call, errorMessage(call.id, err.kind.code, err.message), err.kind.httpStatus);
    this.logger.error('MCP request failed in the gateway', { method: call.method, error: (err as Error)?.message, stack: (err as Error)?.stack });
    this.finish(call, errorMessage(call.id, RpcCode.internalError, `the gateway failed to handle \`${call.method}\`: ${(err as Error)?.message ?? err}`), 500);
  }

  private finish(call: Call, message: RpcMessage, httpStatus?: number): void {
    if (call.done) return;
    call.done = true;
    const token = call.responder === DETACHED ? this.inputs.get(call)?.token : undefined;
    this.forget(call);
    message.id = call.id;
    // Ended while waiting for the client's retry (a failure, or the target gave up asking): keep the answer for it.
    if (token) this.inputRegistry?.set(token, { session: this, call, final: { message, httpStatus } });
    call.responder.final(message, httpStatus);
    this.touch();
  }

  private forget(call: Call): void {
    if (this.calls.get(call.id) === call) this.calls.delete(call.id);
    if (call.progressToken !== undefined && this.progress.get(call.progressToken) === call) this.progress.delete(call.progressToken);
    const st = this.inputs.get(call);
    if (st) {
      this.inputs.delete(call);
      if (st.flush) clearImmediate(st.flush);
      if (st.timer) clearTimeout(st.timer);
      if (st.token) this.inputRegistry?.delete(st.token);
      // The target may still wait for answers the client never gave: tell it they will not come.
      for (const h of [...st.waiting.values(), ...st.queued]) {
        h.conn.respond(h.id, errorMessage(h.id, RpcCode.internalError, `the client's request ended before it answered \`${h.method}\``));
      }
    }
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
        else if (typeof id === 'string' || typeof id === 'number') this.noteEarlyCancel(id);
        return;
      }
      default:
        for (const c of this.conns) c.notify(message.method, params);
    }
  }

  /** Remember a cancellation of a request not seen yet, briefly; only the newest few are kept. */
  private noteEarlyCancel(id: RpcId): void {
    const early = (this.earlyCancels ??= new Map());
    const now = Date.now();
    if (early.size >= EARLY_CANCEL_MAX) {
      for (const [k, until] of early) if (until <= now) early.delete(k);
      while (early.size >= EARLY_CANCEL_MAX) early.delete(early.keys().next().value!);
    }
    early.set(id, now + EARLY_CANCEL_MS);
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

  // ---- routing ------------------------------------------------------------------------------------------------

  private sent(call: Call, conn: TargetConn): (id: number) => boolean {
    return (id) => {
      if (call.done) return false;
      call.refs.push({ conn, id });
      call.responder.commit();
      return true;
    };
  }

  /** The answer of a target, passed to the client (prefixing what routes back when multiplexed). */
  private relay(call: Call, conn: TargetConn, answer: RpcMessage): void {
    if (this.rt.multiplexed && answer.result) prefixResult(conn.name, call.method, answer.result);
    const out: RpcMessage = { jsonrpc: '2.0', id: call.id };
    if (answer.error) out.error = answer.error;
    else out.result = answer.result ?? {};
    this.finish(call, out);
  }

  private async route(call: Call, m: RpcMessage, auth: McpAuthorizer | undefined): Promise<void> {
    const params = m.params ?? {};
    const method = m.method!;
    if (this.kind === 'modern') {
      if (method === 'server/discover') return this.discover(call, params);
      if (method === 'subscriptions/listen') return this.listen(call, params);
    }
    switch (method) {
      case 'ping':
        return this.finish(call, resultMessage(call.id, {}));
      case 'initialize':
        throw new RpcFailure(RpcCode.invalidRequest, 'the session is already initialized; send `initialize` without a session id to start a new one', 400);
      case 'tools/list':
        return this.list(call, params, 'tools', 'tools', 'tool', auth);
      case 'prompts/list':
        return this.list(call, params, 'prompts', 'prompts', 'prompt', auth);
      case 'resources/list':
        return this.list(call, params, 'resources', 'resources', 'resource', auth);
      case 'resources/templates/list':
        return this.list(call, params, 'resources', 'resourceTemplates', 'resource', auth);
      case 'tools/call':
        return this.byName(call, params, 'tool', auth);
      case 'prompts/get':
        return this.byName(call, params, 'prompt', auth);
      case 'resources/read':
      case 'resources/subscribe':
      case 'resources/unsubscribe':
        return this.byUri(call, params, 'uri', 'resource', auth);
      case 'completion/complete':
        return this.completion(call, params, auth);
      case 'logging/setLevel':
        if (this.rt.multiplexed) return this.broadcast(call, params, 'logging');
        break;
      case 'tasks/list':
        if (this.rt.multiplexed) return this.list(call, params, 'tasks', 'tasks', undefined, undefined);
        break;
    }
    if (!this.rt.multiplexed) return this.forward(call, this.conns[0]!, params);
    // A method the gateway does not know: route it by the name, URI or task id in its params, if any.
    if (typeof params.name === 'string' && splitName(params.name) && this.byTarget.has(splitName(params.name)!.target)) {
      const s = splitName(params.name)!;
      return this.forward(call, this.byTarget.get(s.target)!, { ...params, name: s.rest });
    }
    for (const field of ['uri', 'taskId'] as const) {
      const value = params[field];
      const s = typeof value === 'string' ? splitUri(value) : undefined;
      if (s && this.byTarget.has(s.target)) return this.forward(call, this.byTarget.get(s.target)!, { ...params, [field]: s.rest });
    }
    throw new RpcFailure(
      RpcCode.methodNotFound,
      `\`${method}\` cannot be routed: several targets are configured and its params name none of them`,
      400,
    );
  }

  // ---- the 2026-07-28 revision ---------------------------------------------------------------------------------

  /** The identity put in `_meta` of results to modern clients: the target's with one target, else the gateway's. */
  modernServerInfo(): Json {
    if (this.rt.multiplexed) return { ...SERVER_INFO };
    const info = this.conns[0]!.initResult?.serverInfo;
    return info && typeof info === 'object' ? (info as Json) : { ...SERVER_INFO };
  }

  /**
   * `server/discover`. One target: a modern target answers itself (forwarded as-is); a legacy one is described from
   * its `initialize` answer. Several: the versions every target supports (legacy targets: the revision the gateway
   * translates them to), capabilities merged as for `initialize`, the gateway's identity and instructions.
   */
  private async discover(call: Call, params: Json): Promise<void> {
    if (!this.rt.multiplexed) {
      const conn = this.conns[0]!;
      await this.readyOne(conn);
      if (conn.modern) return this.forward(call, conn, params);
      const init = conn.initResult ?? {};
      const result: Json = { supportedVersions: [MODERN_VERSION], capabilities: modernCapabilities(init.capabilities as Json | undefined) };
      if (typeof init.instructions === 'string') result.instructions = init.instructions;
      return this.finish(call, resultMessage(call.id, result));
    }
    const ready = await this.readyTargets('server/discover');
    let versions = [MODERN_VERSION];
    for (const c of ready) if (c.modern && c.discovery) versions = versions.filter((v) => c.discovery!.supportedVersions.includes(v));
    if (versions.length === 0) {
      throw new RpcFailure(RpcCode.internalError, `the targets share no 2026-07-28-era protocol version (${ready.map((c) => c.name).join(', ')})`, 500);
    }
    const has = (cap: string): boolean => ready.some((c) => c.capabilities?.includes(cap));
    const capabilities: Json = {};
    if (has('tools')) capabilities.tools = {};
    if (has('prompts')) capabilities.prompts = {};
    if (has('resources')) capabilities.resources = {};
    if (has('logging')) capabilities.logging = {};
    if (has('completions')) capabilities.completions = {};
    const instructions = mergedInstructions(ready);
    this.finish(call, resultMessage(call.id, { supportedVersions: versions, capabilities, instructions }));
  }

  /**
   * `subscriptions/listen` (the revision's change-notification stream): passed to a single modern target, whose
   * notifications (tagged with the subscription id) stream back on the call. Anything else cannot be served.
   */
  private async listen(call: Call, params: Json): Promise<void> {
    if (!this.rt.multiplexed) {
      const conn = this.conns[0]!;
      await this.readyOne(conn);
      if (conn.modern) return this.forward(call, conn, params);
    }
    throw new RpcFailure(
      RpcCode.methodNotFound,
      'Method not found: subscriptions/listen is served only when the route has one target that speaks 2026-07-28',
      404,
    );
  }

  /**
   * A legacy target asks the client something (sampling, elicitation, roots) while a 2026-07-28 request is open: the
   * request is answered `input_required` with the question embedded; the client's retry (carrying `requestState`)
   * brings the answer, which goes to the target, and the original call continues. Refused (an error to the target)
   * when no call can carry it or the client did not declare the capability.
   */
  private inputRequest(conn: TargetConn, m: RpcMessage): void {
    const id = m.id as RpcId;
    const method = m.method!;
    const capability = INPUT_REQUEST_CAPABILITY[method];
    let call: Call | undefined;
    for (const c of this.calls.values()) if (!c.done && c.targets(conn.name) && INPUT_REQUIRED_METHODS.has(c.method)) call = c;
    const st = call && this.inputs.get(call);
    const refuse = (why: string): void => {
      this.logger.debug('refused a server-to-client request for a 2026-07-28 client', { target: conn.name, method, why });
      conn.respond(id, errorMessage(id, RpcCode.methodNotFound, `\`${method}\` is not available: ${why}`));
    };
    if (!capability) return refuse('the 2026-07-28 revision has no such input request');
    if (this.ephemeral || !this.inputRegistry) return refuse('the gateway route is stateless');
    if (!call || !st) return refuse('no tools/call, prompts/get or resources/read of the client is waiting on this target');
    const declared = st.capabilities[capability];
    if (declared === undefined || declared === null) return refuse(`the client did not declare the \`${capability}\` capability`);
    st.queued.push({ conn, id, method, params: m.params });
    // Requests that come together go out in one round.
    st.flush ??= setImmediate(() => this.flushInputs(call));
  }

  /** Answer the call `input_required` with every request the client has not answered; the call waits for the retry. */
  private flushInputs(call: Call): void {
    const st = this.inputs.get(call);
    if (!st || call.done) return;
    st.flush = undefined;
    for (const h of st.queued) st.waiting.set(`${h.conn.name}-${++st.seq}`, h);
    st.queued = [];
    if (st.waiting.size === 0 || call.responder === DETACHED) return;
    const inputRequests: Json = {};
    for (const [key, h] of st.waiting) {
      const params: Json = { ...h.params };
      delete params._meta;
      inputRequests[key] = { method: h.method, params };
    }
    if (!st.token) {
      st.token = REQUEST_STATE_PREFIX + randomBytes(18).toString('base64url');
      this.inputRegistry?.set(st.token, { session: this, call });
    }
    if (st.timer) clearTimeout(st.timer);
    st.timer = setTimeout(() => this.cancel(call, 'the client did not answer the input request in time'), INPUT_WAIT_MS);
    st.timer.unref?.();
    const responder = call.responder;
    call.responder = DETACHED;
    responder.final({ jsonrpc: '2.0', id: call.id, result: { resultType: 'input_required', inputRequests, requestState: st.token } });
  }

  /** Track input requests for a call of a 2026-07-28 client (called when the call starts). */
  expectInputs(call: Call, message: RpcMessage, capabilities: Json): void {
    if (!call.done && INPUT_REQUIRED_METHODS.has(call.method)) {
      const subject = message.params?.name ?? message.params?.uri;
      this.inputs.set(call, { capabilities, subject, waiting: new Map(), queued: [], token: undefined, seq: 0, flush: undefined, timer: undefined });
    }
  }

  /**
   * The retry of a call that returned `input_required`: pass the client's answers to the target, and serve the call
   * on the retry's response (another `input_required` round if questions remain).
   */
  resumeCall(call: Call, message: RpcMessage, responder: Responder): RpcFailure | undefined {
    const st = this.inputs.get(call);
    if (call.done || !st || call.responder !== DETACHED) return new RpcFailure(RpcCode.invalidParams, 'Invalid params: requestState is unknown or expired', 400);
    if (message.method !== call.method || (message.params?.name ?? message.params?.uri) !== st.subject) {
      return new RpcFailure(RpcCode.invalidParams, `Invalid params: requestState belongs to another request (\`${call.method}\` of ${String(st.subject)})`, 400);
    }
    const responses = message.params?.inputResponses;
    if (responses !== undefined && (typeof responses !== 'object' || responses === null || Array.isArray(responses))) {
      return new RpcFailure(RpcCode.invalidParams, 'Invalid params: inputResponses must be an object', 400);
    }
    const answers = (responses ?? {}) as Json;
    for (const [key, value] of Object.entries(answers)) {
      if (st.waiting.has(key) && (typeof value !== 'object' || value === null || Array.isArray(value))) {
        return new RpcFailure(RpcCode.invalidParams, `Invalid params: inputResponses.${key} must be an object`, 400);
      }
    }
    if (st.timer) clearTimeout(st.timer);
    st.timer = undefined;
    for (const [key, h] of [...st.waiting]) {
      if (!(key in answers)) continue;
      st.waiting.delete(key);
      h.conn.respond(h.id, { jsonrpc: '2.0', id: h.id, result: answers[key] as Json });
    }
    call.responder = responder;
    this.touch();
    // Unanswered questions are asked again; else the call goes on and its answer comes on this response.
    if (st.waiting.size > 0 || st.queued.length > 0) this.flushInputs(call);
    return undefined;
  }

  private async forward(call: Call, conn: TargetConn, params: Json | undefined, onAnswer?: (answer: RpcMessage) => void): Promise<void> {
    if (call.method === 'resources/subscribe' && (this.subscriptions.get(conn.name)?.size ?? 0) >= MAX_SUBSCRIPTIONS && !this.subscriptions.get(conn.name)!.has(params?.uri as string)) {
      throw new RpcFailure(LIMIT_CODE, `too many resource subscriptions on this session (the limit is ${MAX_SUBSCRIPTIONS} per target); unsubscribe first`, 429);
    }
    // (Un)subscribe answers at once: its response waits for it, so the re-sealed session id can go in its headers.
    if (SUBSCRIPTION_METHODS.has(call.method) && this.kind === 'streamable') call.responder.hold?.();
    const answer = await conn.request(call.method, params, this.sent(call, conn));
    if (SUBSCRIPTION_METHODS.has(call.method) && !answer.error && typeof params?.uri === 'string') this.noteSubscription(call, conn, params.uri);
    onAnswer?.(answer);
    this.relay(call, conn, answer);
  }

  // ---- resource subscriptions ---------------------------------------------------------------------------------

  /**
   * Remember a subscription the target accepted (or forget an unsubscribed one), to replay it when the target is
   * restarted. A stateful streamable-HTTP session is sealed again, so the new id carries the subscriptions to any
   * replica that resumes it; it is sent in this response's `Mcp-Session-Id` header (clients that adopt it, such as
   * the SDK's, keep it; the older ids stay valid).
   */
  private noteSubscription(call: Call, conn: TargetConn, uri: string): void {
    if (this.kind === 'stateless' || this.kind === 'modern') return;
    let uris = this.subscriptions.get(conn.name);
    const before = uris?.size ?? 0;
    if (call.method === 'resources/subscribe') {
      if (!uris) this.subscriptions.set(conn.name, (uris = new Set()));
      uris.add(uri);
    } else uris?.delete(uri);
    if ((uris?.size ?? 0) === before || this.kind !== 'streamable' || !this.token) return;
    const token = this.seal();
    this.onResealed?.(token);
    if (!call.responder.setHeader?.('mcp-session-id', token)) this.logger.debug('the response had started: the re-sealed session id was not sent', { method: call.method });
  }

  /** The client's subscriptions to one target (its own URIs). */
  subscribedTo(target: string): readonly string[] {
    return [...(this.subscriptions.get(target) ?? [])];
  }

  /** ConnHost: a target was initialized afresh (a restart, or its first start here after a resume): subscribe again. */
  targetInitialized(conn: TargetConn): void {
    const uris = this.subscriptions.get(conn.name);
    if (this.closed || !uris || uris.size === 0) return;
    void this.replaySubscriptions(conn, [...uris]);
  }

  private async replaySubscriptions(conn: TargetConn, uris: string[]): Promise<void> {
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
   * ConnHost: a target went down. With subscriptions, nobody may send a request that would restart it, so it is
   * restarted now (backing off: 250 ms doubling, at most EAGER_RESTARTS_PER_MINUTE a minute; past that the next
   * request restarts it, as for any target).
   */
  targetDown(conn: TargetConn): void {
    if (this.closed || !this.subscriptions.get(conn.name)?.size || this.kind === 'stateless' || this.kind === 'modern') return;
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
      if (this.closed || conn.state === 'ready' || conn.state === 'closed') return;
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
  startSubscribedTargets(): void {
    for (const conn of this.conns) {
      if (!this.subscriptions.get(conn.name)?.size) continue;
      conn.ready().catch((err: Error) => {
        this.logger.warn('could not start an MCP target to replay resource subscriptions', { target: conn.name, error: err.message });
        this.targetDown(conn);
      });
    }
  }

  private unknown(kind: ItemKind, name: string): RpcFailure {
    return new RpcFailure(RpcCode.invalidParams, `Unknown ${kind}: ${name}`, 400);
  }

  private async byName(call: Call, params: Json, kind: 'tool' | 'prompt', auth: McpAuthorizer | undefined): Promise<void> {
    const name = params.name;
    if (typeof name !== 'string') throw new RpcFailure(RpcCode.invalidParams, '`params.name` must be a string', 400);
    let conn: TargetConn | undefined;
    let upstreamName = name;
    if (this.rt.multiplexed) {
      const s = splitName(name);
      conn = s && this.byTarget.get(s.target);
      if (s) upstreamName = s.rest;
    } else conn = this.conns[0];
    if (!conn || (auth && !auth({ kind, target: conn.name, name: upstreamName, method: call.method }))) throw this.unknown(kind, name);
    const forwarded = this.rt.multiplexed ? { ...params, name: upstreamName } : params;
    const histogram = kind === 'tool' ? this.rt.metrics?.toolCall : undefined;
    if (!histogram) return this.forward(call, conn, forwarded);
    // The tool name is the client's: it becomes a label only when the target accepted it (no JSON-RPC error).
    const started = performance.now();
    let errorType = '';
    try {
      await this.forward(call, conn, forwarded, (answer) => {
        if (answer.error) errorType = String(answer.error.code);
      });
    } catch (err) {
      errorType = err instanceof RpcFailure ? String(err.code) : 'target_failed';
      throw err;
    } finally {
      histogram.observe({ mcp_method_name: 'tools/call', target: conn.name, gen_ai_tool_name: errorType ? '' : upstreamName, error_type: errorType }, (performance.now() - started) / 1000);
    }
  }

  private async byUri(call: Call, params: Json, field: string, kind: ItemKind, auth: McpAuthorizer | undefined): Promise<void> {
    const uri = params[field];
    if (typeof uri !== 'string') throw new RpcFailure(RpcCode.invalidParams, `\`params.${field}\` must be a string`, 400);
    let conn: TargetConn | undefined;
    let upstreamUri = uri;
    if (this.rt.multiplexed) {
      const s = splitUri(uri);
      conn = s && this.byTarget.get(s.target);
      if (s) upstreamUri = s.rest;
    } else conn = this.conns[0];
    if (!conn || (auth && !auth({ kind, target: conn.name, name: upstreamUri, method: call.method }))) throw this.unknown(kind, uri);
    return this.forward(call, conn, this.rt.multiplexed ? { ...params, [field]: upstreamUri } : params);
  }

  private async completion(call: Call, params: Json, auth: McpAuthorizer | undefined): Promise<void> {
    const ref = params.ref as Json | undefined;
    if (!ref || typeof ref !== 'object') throw new RpcFailure(RpcCode.invalidParams, '`params.ref` is required', 400);
    const isPrompt = ref.type === 'ref/prompt';
    const field = isPrompt ? 'name' : 'uri';
    const value = ref[field];
    if (typeof value !== 'string') throw new RpcFailure(RpcCode.invalidParams, `\`params.ref.${field}\` must be a string`, 400);
    const kind: ItemKind = isPrompt ? 'prompt' : 'resource';
    let conn: TargetConn | undefined;
    let upstream = value;
    if (this.rt.multiplexed) {
      const s = isPrompt ? splitName(value) : splitUri(value);
      conn = s && this.byTarget.get(s.target);
      if (s) upstream = s.rest;
    } else conn = this.conns[0];
    if (!conn || (auth && !auth({ kind, target: conn.name, name: upstream, method: call.method }))) throw this.unknown(kind, value);
    return this.forward(call, conn, this.rt.multiplexed ? { ...params, ref: { ...ref, [field]: upstream } } : params);
  }

  /** `logging/setLevel` when multiplexed: every target that logs gets it; the answer is empty. */
  private async broadcast(call: Call, params: Json, capability: string): Promise<void> {
    const targets = this.conns.filter((c) => c.has(capability) && c.state !== 'down');
    await Promise.all(
      targets.map((c) =>
        c.request(call.method, params, this.sent(call, c)).then(
          (answer) => {
            if (answer.error) this.logger.debug('MCP target refused a broadcast request', { target: c.name, method: call.method, error: answer.error.message });
          },
          (err: Error) => this.logger.warn('MCP target failed a broadcast request', { target: c.name, method: call.method, error: err.message }),
        ),
      ),
    );
    this.finish(call, resultMessage(call.id, {}));
  }

  /**
   * A list call. One target: forwarded as-is (its pagination passes through), filtered by the authorizer.
   * Several: fanned out concurrently, each target's pages followed to the end, merged, prefixed and filtered.
   */
  private async list(call: Call, params: Json, capability: string, key: string, kind: ItemKind | undefined, auth: McpAuthorizer | undefined): Promise<void> {
    if (!this.rt.multiplexed) {
      const conn = this.conns[0]!;
      const answer = await conn.request(call.method, params, this.sent(call, conn));
      const items = answer.result?.[key];
      if (auth && kind && Array.isArray(items)) {
        answer.result![key] = (items as Json[]).filter((item) => {
          const name = nameOf(kind, key, item);
          return name !== undefined && auth({ kind, target: conn.name, name, method: call.method });
        });
      }
      return this.relay(call, conn, answer);
    }
    const targets = this.conns.filter((c) => c.has(capability));
    const started = performance.now();
    const settled = await Promise.allSettled(targets.map((c) => this.pages(call, c, params, key)));
    this.rt.metrics?.listFanOut.observe({ mcp_method_name: call.method }, (performance.now() - started) / 1000);
    const merged: Json[] = [];
    const failures: string[] = [];
    settled.forEach((s, i) => {
      const conn = targets[i]!;
      if (s.status === 'rejected') {
        failures.push((s.reason as Error).message);
        if (this.rt.failOpen) this.logger.warn('MCP target left out of a list (failOpen)', { target: conn.name, method: call.method, error: (s.reason as Error).message });
        return;
      }
      for (const item of s.value) {
        const name = kind ? nameOf(kind, key, item) : undefined;
        if (kind && auth && (name === undefined || !auth({ kind, target: conn.name, name, method: call.method }))) continue;
        if (key === 'tools' || key === 'prompts') item.name = prefixName(conn.name, item.name as string);
        else if (key === 'resources') item.uri = prefixUri(conn.name, item.uri as string);
        else if (key === 'resourceTemplates') item.uriTemplate = prefixUri(conn.name, item.uriTemplate as string);
        else if (key === 'tasks' && typeof item.taskId === 'string') item.taskId = prefixUri(conn.name, item.taskId);
        merged.push(item);
      }
    });
    if (failures.length > 0 && (!this.rt.failOpen || failures.length === targets.length)) {
      throw new RpcFailure(RpcCode.internalError, failures.join('; '), 500);
    }
    this.finish(call, resultMessage(call.id, { [key]: merged }));
  }

  /** Every page of one target's list. A target without the method contributes nothing. */
  private async pages(call: Call, conn: TargetConn, params: Json, key: string): Promise<Json[]> {
    const items: Json[] = [];
    const meta = params._meta;
    let cursor: unknown;
    for (let page = 0; page < MAX_PAGES; page++) {
      const p: Json = {};
      if (meta !== undefined) p._meta = meta;
      if (cursor !== undefined) p.cursor = cursor;
      const answer = await conn.request(call.method, p, this.sent(call, conn));
      if (answer.error) {
        if (answer.error.code === RpcCode.methodNotFound) return items;
        throw conn.error(`answered \`${call.method}\` with an error: ${answer.error.message}`);
      }
      const list = answer.result?.[key];
      if (Array.isArray(list)) for (const item of list) if (item && typeof item === 'object') items.push(item as Json);
      cursor = answer.result?.nextCursor;
      if (typeof cursor !== 'string' || cursor === '') return items;
    }
    this.logger.warn('stopped following an MCP target list after too many pages', { target: conn.name, method: call.method, pages: MAX_PAGES });
    return items;
  }

  // ---- messages from targets ----------------------------------------------------------------------------------

  fromTarget(conn: TargetConn, m: RpcMessage): void {
    this.touch();
    const multiplexed = this.rt.multiplexed;
    if (this.kind === 'modern') {
      if (isRequest(m)) return this.inputRequest(conn, m);
      // A 2026-07-28 target's subscription stream: its notifications name the listen request (our upstream id).
      const sub = metaOf(m.params)?.[SUBSCRIPTION_ID_META_KEY];
      if (sub !== undefined) {
        for (const c of this.calls.values()) {
          if (!c.done && c.refs.some((r) => r.conn === conn && r.id === sub)) {
            c.responder.related(m);
            return;
          }
        }
        return;
      }
    }
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
        return this.deliver(conn, m, this.progress.get(params?.progressToken), true);
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
    this.deliver(conn, m, undefined, false);
  }

  /**
   * Send a message to the client: on the legacy stream; else on the response stream of the call it relates to
   * (by progress token; for requests and log messages, the latest open call to the same target); else on the GET
   * stream; else keep it until the GET stream opens.
   */
  deliver(conn: TargetConn | undefined, m: RpcMessage, call: Call | undefined, preferCall: boolean): void {
    if (this.legacyStream) {
      this.legacyStream.send(m);
      return;
    }
    if (call && !call.done && call.responder.streaming) {
      call.responder.related(m);
      return;
    }
    if (preferCall && conn) {
      let latest: Call | undefined;
      for (const c of this.calls.values()) if (!c.done && c.responder.streaming && c.targets(conn.name)) latest = c;
      if (latest) {
        latest.responder.related(m);
        return;
      }
    }
    if (this.kind === 'modern') {
      // No session, no GET stream: a message that belongs to no open request has nowhere to go.
      this.logger.debug('dropped a target message no 2026-07-28 request is waiting for', { method: m.method });
      return;
    }
    if (this.getStream?.open) {
      if (this.events) this.events.get.send(m);
      else this.getStream.send(m);
      return;
    }
    this.queue.push(m);
    if (this.queue.length > QUEUE_LIMIT) {
      this.queue.shift();
      if (!this.queueWarned) {
        this.queueWarned = true;
        this.logger.warn('MCP client has no stream open; dropping the oldest queued server messages', { limit: QUEUE_LIMIT });
      }
    }
  }

  /** Messages for the client when it has no stream: from its POST responses in JSON mode. */
  deliverUnrelated(m: RpcMessage): void {
    this.deliver(undefined, m, undefined, false);
  }

  /** Clients of 2025-11-25 and later get priming events (an id with empty data) when a resumable stream opens. */
  get primes(): boolean {
    return this.protocolVersion >= '2025-11-25';
  }

  /** Open the server-to-client stream (GET). Only one at a time; false when one is open already. */
  openGetStream(stream: SseStream): boolean {
    if (this.getStream?.open) return false;
    this.attachGetStream(stream, undefined);
    return true;
  }

  /**
   * `GET` with `Last-Event-ID`: resume the stream that event belongs to. The GET stream replaces its previous
   * response (the client reconnected) and gets the kept events after the id, then what was queued, then live
   * messages. A POST response stream gets its kept events after the id and then the rest of its calls' messages and
   * answers, ending after the last answer; `finished` when it had ended and nothing is left to send. `unknown` for
   * an id this session object did not make (another replica's, expired, malformed): the caller opens a fresh stream.
   */
  resumeStream(lastEventId: string, stream: SseStream): 'resumed' | 'finished' | 'unknown' {
    const found = this.events?.find(lastEventId);
    if (!found) return 'unknown';
    const { stream: logged, seq } = found;
    if (logged === this.events!.get) {
      const previous = this.getStream;
      this.getStream = undefined;
      previous?.end();
      this.attachGetStream(stream, seq);
      return 'resumed';
    }
    if (logged.ended && !logged.hasAfter(seq)) return 'finished';
    logged.attach(stream, seq);
    if (stream.open) stream.startKeepAlive(KEEP_ALIVE_MS);
    return 'resumed';
  }

  private attachGetStream(stream: SseStream, resumeAfter: number | undefined): void {
    this.getStream = stream;
    stream.onClose = () => {
      if (this.getStream === stream) this.getStream = undefined;
      this.touch();
    };
    const logged = this.events?.get;
    if (logged) {
      logged.attach(stream, resumeAfter);
      if (resumeAfter === undefined) {
        if (this.primes) logged.prime();
        else stream.flushHeaders();
      }
    } else stream.flushHeaders();
    stream.startKeepAlive(KEEP_ALIVE_MS);
    const queued = this.queue;
    this.queue = [];
    for (const m of queued) {
      if (logged) logged.send(m);
      else stream.send(m);
    }
  }

  /**
   * End the session: answer the calls still open, close the streams and the target connections. `terminate`
   * also ends resumable upstream sessions (client DELETE, expiry); shutdown leaves them for another replica.
   */
  async close(terminate: boolean, reason: string): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const call of [...this.calls.values()]) this.finish(call, errorMessage(call.id, RpcCode.internalError, `the session ended: ${reason}`));
    this.getStream?.end();
    this.legacyStream?.end();
    this.queue = [];
    this.events?.dispose();
    for (const st of this.restarts.values()) if (st.timer) clearTimeout(st.timer);
    await Promise.all(this.conns.map((c) => c.close(terminate)));
  }
}
