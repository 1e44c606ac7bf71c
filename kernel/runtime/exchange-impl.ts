import type { Context, Span } from '@opentelemetry/api';
import { AsyncResource } from 'node:async_hooks';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { ErrorCode, GatewayError } from '../sdk/index.ts';
import type { AttributeKey, Exchange, PolicyInstance, Reply, RouteInfo } from '../sdk/index.ts';
import { AbortHook } from '../exchange/abort-hook.ts';
import { DrainedBody, readBody, readWhole } from '../exchange/body-read.ts';
import { copyRequestBody, peekRequestBody } from '../exchange/body-peek.ts';
import type { BodyReceiver } from '../exchange/body-read.ts';
import { EXCHANGE_ATTRIBUTES, EXCHANGE_STATE } from '../exchange/kernel-exchange.ts';
import type { ExchangeState, KernelExchange } from '../exchange/kernel-exchange.ts';
import { EMPTY_PLAN } from '../exchange/upstream-plan.ts';
import type { UpstreamPlan } from '../exchange/upstream-plan.ts';
import type { Readable } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import type { CompiledRoute, Snapshot } from '../compile/snapshot.ts';
import { ExchangeView } from '../exchange/exchange-view.ts';
import { clientAddress, plainAddress } from '../exchange/client-address.ts';
import { externalOrigin, localAuthority } from './external-origin.ts';
import { requestIdFor } from '../telemetry/request-id.ts';
import { parseHeaders } from '../upstream/undici-core.ts';
import { hasRequestBody, streamTaken } from '../upstream/request-body.ts';

const EMPTY = Buffer.alloc(0);
import type { TrustedProxies } from '../exchange/client-address.ts';
import { verifiedClientCertificate } from '../exchange/client-certificate.ts';
import type { VerifiedClientCertificate } from '../exchange/client-certificate.ts';

/**
 * A BodyReceiver called back in the async context it was made in. An AsyncResource destroyed by hand: no destroy hook
 * tied to garbage collection, which `AsyncLocalStorage.snapshot()` (a bound function over an AsyncResource) registers
 * per call and which cost ~3 KiB and extra mark-compacts per `ai` request (docs/perf.md "Session 8, quiet").
 */
class ReceiverInCallersContext extends AsyncResource implements BodyReceiver {
  private readonly receiver: BodyReceiver;
  constructor(receiver: BodyReceiver) {
    super('switchyard.readBodyInto', { requireManualDestroy: true });
    this.receiver = receiver;
  }
  bodyRead(body: Buffer): void {
    this.runInAsyncScope(this.receiver.bodyRead, this.receiver, body);
    this.emitDestroy();
  }
  bodyFailed(err: GatewayError): void {
    this.runInAsyncScope(this.receiver.bodyFailed, this.receiver, err);
    this.emitDestroy();
  }
}

/** Default cap on buffered request bodies (BEHAVIOUR.md §8.3: 2 MiB). */
export const DEFAULT_BODY_LIMIT = 2 * 1024 * 1024;

export const NO_ROUTE: RouteInfo = Object.freeze({ name: '', key: '', listener: '', bind: 0, namespace: undefined, ruleName: undefined });

/**
 * The kernel's Exchange for one client request, and its own kernel state (docs/adr/0029). Fields are all set in
 * the constructor so every instance has one hidden class.
 */
export class ExchangeImpl implements Exchange, ExchangeState, KernelExchange {
  readonly req: IncomingMessage;
  /** An HTTP/2 client's request: trailers and gRPC statuses are looked for only then. */
  readonly http2: boolean;
  /** Set after construction by the lean server side, which makes the response once the route is known (ADR 0088). */
  res: ServerResponse | undefined;
  readonly method: string;
  path: string;
  query: string;
  authority: string;
  readonly clientAuthority: string;
  readonly hostname: string;
  readonly scheme: 'http' | 'https';
  readonly headers: IncomingHttpHeaders;
  /** The client: the peer, or the address a trusted proxy forwarded for (`config.trustedProxies`). */
  readonly sourceAddress: string;
  /** The TCP peer (appended to X-Forwarded-For). */
  readonly peerAddress: string;
  /** The peer is one of `config.trustedProxies`: its forwarding headers are believed. */
  readonly peerTrusted: boolean;
  private origin: string | undefined = undefined;
  private rid: string | undefined = undefined;
  readonly sourcePort: number;
  route: RouteInfo = NO_ROUTE;
  matchedPrefix: string | undefined = undefined;
  readonly originalUrl: string;
  readonly startTime: number;
  body: Buffer | undefined = undefined;
  /** The client's body as read by `bufferBody`, before a backend replaced it (sent again on a retry elsewhere). */
  receivedBody: Buffer | undefined = undefined;
  replaySkip: string | undefined = undefined;
  plan: UpstreamPlan = EMPTY_PLAN;
  /** Set when the route's request timeout fired: the upstream call must give up. */
  timedOut = false;
  attempts = 0;
  /** Set by the forwarder when its last attempt failed before the upstream's application saw it (refused, reset, timeout). */
  retryableFailure = false;
  protocol = 'http';
  /** Parsed query, made on first use by a query matcher. */
  params: URLSearchParams | undefined = undefined;
  /** The compiled route and backend (kernel-only views of `route`). */
  compiledRoute: CompiledRoute | undefined = undefined;
  /** The snapshot that serves the request (held until it finishes). */
  snapshot: Snapshot | undefined = undefined;
  /** Log hooks of the chosen backend (its own, then the route's); null before dispatch. */
  logHooks: readonly PolicyInstance[] | null = null;
  /**
   * Response hooks of the chosen backend when it forwards directly (ADR 0071): their `onResponseHeaders` edit the
   * raw answer headers, their `onResponse` a failure's reply. Null when none (or not forwarding directly).
   */
  responseHooks: readonly PolicyInstance[] | null = null;
  /** Set once a reply has been started; later replies (a timeout racing a response) are dropped. */
  replied = false;
  status = 0;
  replyStream: Readable | undefined = undefined;
  /** The headers sent with the response (the access log's CEL `response.headers`); kept, not copied. */
  private replyHeaderMap: Reply['headers'] | undefined = undefined;
  /**
   * A direct forward's raw answer headers (ADR 0051), or its edited list (ADR 0071): `replyHeaders` is made of them
   * when read.
   */
  rawReplyHeaders: readonly (Buffer | string)[] | undefined = undefined;
  errorMessage: string | undefined = undefined;
  /** Why the request is refused before routing (malformed Host or path); answered with 400. */
  refusal: string | undefined = undefined;
  private attrs: Map<string, unknown> | undefined = undefined;
  queued: string[] | undefined = undefined;
  fields: Record<string, string | number | boolean> | undefined = undefined;
  /** The request's SERVER span when tracing (ADR 0037). */
  span: Span | undefined = undefined;
  /** When tracing: the parent of upstream attempts (ExchangeState). */
  traceParent: Context | undefined = undefined;
  /** When tracing without the async context: where the SERVER span was started (ExchangeState, ADR 0062). */
  traceRoot: Context | undefined = undefined;
  /** A WebSocket upgrade's outcome, told by the forwarder (ExchangeState). */
  upgradeDone: ExchangeState['upgradeDone'] = undefined;
  private controller: AbortController | undefined = undefined;
  private bodyPromise: Promise<Buffer> | undefined = undefined;
  private bodyReceiver: BodyReceiver | undefined = undefined;

  constructor(
    req: IncomingMessage,
    res: ServerResponse | undefined,
    scheme: 'http' | 'https',
    hostname: string,
    path: string,
    query: string,
    startTime: number,
    trustedProxies: TrustedProxies | null = null,
  ) {
    this.req = req;
    this.http2 = req.httpVersionMajor === 2;
    this.res = res;
    this.method = req.method ?? 'GET';
    this.headers = req.headers;
    this.clientAuthority = req.headers.host ?? '';
    this.authority = this.clientAuthority;
    this.hostname = hostname;
    this.scheme = scheme;
    this.path = path;
    this.query = query;
    this.originalUrl = req.url ?? '/';
    // Binds listen on `::` (dual stack): show IPv4 clients as `1.2.3.4`, not `::ffff:1.2.3.4` (X-Forwarded-For, logs, CEL).
    this.peerAddress = plainAddress(req.socket.remoteAddress ?? '');
    this.peerTrusted = trustedProxies !== null && trustedProxies(this.peerAddress);
    this.sourceAddress = clientAddress(this.peerAddress, req.headers, this.peerTrusted ? trustedProxies : null);
    this.sourcePort = req.socket.remotePort ?? 0;
    this.startTime = startTime;
  }

  /**
   * The request id (ADR 0025): the client's `x-request-id` when it is a plain token, else a new one. Fixed on first
   * use (the access log, forwarding); the header sent upstream is set to it.
   */
  get requestId(): string {
    if (this.rid === undefined) {
      this.rid = requestIdFor(this.headers['x-request-id']);
      this.headers['x-request-id'] = this.rid;
    }
    return this.rid;
  }

  /** The headers sent with the response: as given, or made from a direct forward's raw headers on first read. */
  get replyHeaders(): Reply['headers'] | undefined {
    if (this.replyHeaderMap === undefined && this.rawReplyHeaders !== undefined) {
      const headers: Reply['headers'] = parseHeaders(this.rawReplyHeaders);
      const queued = this.queued;
      if (queued) for (let i = 0; i < queued.length; i += 2) headers[queued[i]!] = queued[i + 1]!;
      this.replyHeaderMap = headers;
    }
    return this.replyHeaderMap;
  }

  set replyHeaders(headers: Reply['headers'] | undefined) {
    this.replyHeaderMap = headers;
  }

  /** The name the client sent in TLS SNI; undefined over cleartext or without one. */
  get tlsSni(): string | undefined {
    // The socket is gone (null) once node:http has let it go: a request logged after its client left.
    const name = (this.req.socket as TLSSocket | null)?.servername;
    return typeof name === 'string' && name !== '' ? name : undefined;
  }

  /** The client certificate a mutual-TLS listener verified on this connection (CEL's `source.subjectCn`, ...). */
  get clientCertificate(): VerifiedClientCertificate | undefined {
    return verifiedClientCertificate(this.req.socket);
  }

  /** Computed on first use (card and metadata requests), from the client's own headers. */
  get externalOrigin(): string {
    return (this.origin ??= externalOrigin(this.req.rawHeaders, this.peerTrusted, this.scheme, this.clientAuthority || localAuthority(this.req.socket)));
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      // Asked for after the abort (a retry after its backoff, past the route deadline): born aborted.
      if (this.aborted !== undefined) this.controller.abort(this.aborted);
      else if (this.res?.destroyed && !this.res.writableFinished) this.controller.abort();
    }
    return this.controller.signal;
  }

  /** Called by the runtime when the client went away or the request timed out. */
  abort(reason?: unknown): void {
    this.aborted ??= reason ?? new Error('aborted');
    this.controller?.abort(reason);
    this.hook?.fire();
  }

  /** Why the exchange was aborted; undefined while it is live. */
  aborted: unknown = undefined;
  private hook: AbortHook | undefined = undefined;

  /** The abort signal handed to undici for upstream calls: fired by `abort()`. */
  abortHook(): AbortHook {
    return (this.hook ??= new AbortHook());
  }


  /**
   * The SDK's `bufferBody` without a promise (docs/adr/0070): as `readBodyOnSocket`, with `receiver` called in the
   * async context of this call, as a promise's callbacks would be (a plugin's tracing context, say): the socket's
   * events that end the read run outside it.
   */
  readBodyInto(limit: number, receiver: BodyReceiver): void {
    if (this.body) return receiver.bodyRead(this.body);
    this.readBodyOnSocket(limit, new ReceiverInCallersContext(receiver));
  }

  /**
   * `bufferBody` without a promise (ExchangeState): `receiver` gets the body, or the 413/400 `bufferBody` would reject
   * with, from the socket's events. The direct forward reads this way (docs/adr/0051): it carries its trace context
   * itself (ADR 0062).
   */
  readBodyOnSocket(limit: number, receiver: BodyReceiver): void {
    if (this.body) return receiver.bodyRead(this.body);
    if (this.bodyPromise) {
      this.bodyPromise.then((b) => receiver.bodyRead(b), (err: GatewayError) => receiver.bodyFailed(err));
      return;
    }
    // A second reader while the first read is under way: both are told (one read of the socket).
    const reading = this.bodyReceiver;
    if (reading !== undefined) {
      this.bodyReceiver = {
        bodyRead: (b) => (reading.bodyRead(b), receiver.bodyRead(b)),
        bodyFailed: (err) => (reading.bodyFailed(err), receiver.bodyFailed(err)),
      };
      return;
    }
    const declared = Number(this.headers['content-length'] ?? NaN);
    if (declared > limit) {
      return receiver.bodyFailed(new GatewayError(413, 'payload_too_large', `request body exceeds the ${limit}-byte limit`, ErrorCode.bodyTooLarge));
    }
    const req = this.req;
    if (!readWhole(req) && streamTaken(req)) {
      // Someone read the stream already: a plugin that took `ex.req`'s 'data' events without handing the body back
      // with `ex.setBody`. The 'end' a read would wait for has passed (ADR 0144), or the rest would be sent as the
      // body (ADR 0155). A peek puts what it read back (ADR 0142).
      if (!hasRequestBody(this)) return receiver.bodyRead(EMPTY);
      return receiver.bodyFailed(new DrainedBody());
    }
    this.bodyReceiver = receiver;
    readBody(this.req, limit, this);
  }

  /** BodyReceiver of the read started by `readBodyOnSocket`: keep the body, then pass it on. */
  bodyRead(body: Buffer): void {
    const receiver = this.bodyReceiver!;
    this.bodyReceiver = undefined;
    this.body = body;
    this.receivedBody = body;
    receiver.bodyRead(body);
  }

  bodyFailed(err: GatewayError): void {
    const receiver = this.bodyReceiver!;
    this.bodyReceiver = undefined;
    receiver.bodyFailed(err);
  }

  bufferBody(limit = DEFAULT_BODY_LIMIT): Promise<Buffer> {
    if (this.body) return Promise.resolve(this.body);
    if (this.bodyPromise) return this.bodyPromise;
    const declared = Number(this.headers['content-length'] ?? NaN);
    if (declared > limit) {
      return Promise.reject(new GatewayError(413, 'payload_too_large', `request body exceeds the ${limit}-byte limit`, ErrorCode.bodyTooLarge));
    }
    this.bodyPromise = new Promise<Buffer>((resolve, reject) => this.readBodyOnSocket(limit, { bodyRead: resolve, bodyFailed: reject }));
    return this.bodyPromise;
  }

  /**
   * `Exchange.peekBody` (ADR 0142). A body of declared length past `limit` is not read; one read whole already (the lean
   * side's, another reader's under way) is `bufferBody`'s; else it is read off the socket, kept when it fits.
   */
  peekBody(limit = DEFAULT_BODY_LIMIT): Promise<Buffer | undefined> {
    if (this.body) return Promise.resolve(this.body);
    if (Number(this.headers['content-length'] ?? NaN) > limit) return Promise.resolve(undefined);
    if (this.bodyPromise || this.bodyReceiver || readWhole(this.req)) return this.bufferBody(limit);
    return peekRequestBody(this.req, limit, (body) => {
      this.body ??= body;
      this.receivedBody ??= body;
    });
  }

  /**
   * `Exchange.copyBody` (ADR 0148). A body in memory, being read whole, or read whole by the lean side is that body;
   * a declared length past `limit` is none; else it is copied off the socket as it streams (`copyRequestBody`).
   */
  copyBody(limit: number, take?: (bytes: number) => boolean): Promise<Buffer | undefined> {
    const within = (body: Buffer): Buffer | undefined => (body.length <= limit && (take === undefined || take(body.length)) ? body : undefined);
    if (this.body) return Promise.resolve(within(this.body));
    if (Number(this.headers['content-length'] ?? NaN) > limit) return Promise.resolve(undefined);
    if (!hasRequestBody(this)) return Promise.resolve(within(Buffer.alloc(0)));
    if (this.bodyPromise || this.bodyReceiver || readWhole(this.req)) {
      return new Promise((resolve) => this.readBodyOnSocket(Infinity, { bodyRead: (body) => resolve(within(body)), bodyFailed: () => resolve(undefined) }));
    }
    return copyRequestBody(this.req, limit, take);
  }

  setBody(body: Buffer): void {
    this.body = body;
    this.headers['content-length'] = String(body.length);
    delete this.headers['transfer-encoding'];
  }

  get<T>(key: AttributeKey<T>): T | undefined {
    return this.attrs?.get(key.name) as T | undefined;
  }

  set<T>(key: AttributeKey<T>, value: T): void {
    (this.attrs ??= new Map()).set(key.name, value);
  }

  /** The request's exchange is its own kernel state. */
  get [EXCHANGE_STATE](): ExchangeState {
    return this;
  }

  /** All attributes, for CEL contexts. */
  [EXCHANGE_ATTRIBUTES](): ReadonlyMap<string, unknown> | undefined {
    return this.attrs;
  }

  queueResponseHeader(name: string, value: string): void {
    const lower = name.toLowerCase();
    // The body's own length frames the answer: a queued one (from a rate-limit or authorization service) that differs
    // leaves the rest of the body on a kept-alive connection as the next answer.
    if (lower === 'content-length') return;
    (this.queued ??= []).push(lower, value);
  }

  logField(name: string, value: string | number | boolean): void {
    (this.fields ??= {})[name] = value;
  }

  detach(): Exchange {
    return new ExchangeView(this, false);
  }
}
