import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { ErrorCode, GatewayError } from '../sdk/index.ts';
import type { AttributeKey, BodyReceiver, Exchange, RouteInfo } from '../sdk/index.ts';
import { DetachedState, EXCHANGE_ATTRIBUTES, EXCHANGE_STATE, exchangeAttributes, exchangeState } from './kernel-exchange.ts';
import type { ExchangeState, KernelExchange } from './kernel-exchange.ts';

/** Never aborts: the signal of a detached view, whose client request is over. */
const NEVER_ABORTED = new AbortController().signal;

/**
 * A copy of an exchange for hooks that act for part of a request, or after it: headers and attributes are the
 * view's own (copied at creation), the rest is the original's. `live` views delegate body, signal, response headers
 * and log fields to the original; detached views (kept by long-lived connections) hold no reference to it.
 */
export class ExchangeView implements Exchange, KernelExchange {
  /** The request's state (live), or this copy's own (detached); behind a getter so a spread copy does not carry it. */
  readonly #state: ExchangeState;
  readonly method: string;
  path: string;
  query: string;
  authority: string;
  readonly hostname: string;
  readonly scheme: 'http' | 'https';
  readonly headers: IncomingHttpHeaders;
  readonly sourceAddress: string;
  private readonly origin: string | undefined;
  private readonly rid: string | undefined;
  readonly sourcePort: number;
  readonly route: RouteInfo;
  readonly matchedPrefix: string | undefined;
  readonly originalUrl: string;
  readonly startTime: number;
  protocol: string;
  private readonly parent: Exchange | undefined;
  private readonly attrs: Map<string, unknown>;
  private ownBody: Buffer | undefined;

  constructor(source: Exchange, live: boolean) {
    // A live view acts for the same request (its upstream plan, attempts, abort); a detached copy gets its own.
    const state = exchangeState(source);
    this.#state = live && state ? state : new DetachedState(source, state);
    this.parent = live ? source : undefined;
    this.method = source.method;
    this.path = source.path;
    this.query = source.query;
    this.authority = source.authority;
    this.hostname = source.hostname;
    this.scheme = source.scheme;
    this.headers = { ...source.headers };
    this.sourceAddress = source.sourceAddress;
    // A live view asks the original (computed only when a plugin needs it); a detached one keeps a copy.
    this.origin = live ? undefined : source.externalOrigin;
    this.rid = live ? undefined : source.requestId;
    this.sourcePort = source.sourcePort;
    this.route = source.route;
    this.matchedPrefix = source.matchedPrefix;
    this.originalUrl = source.originalUrl;
    this.startTime = source.startTime;
    this.protocol = source.protocol;
    this.attrs = new Map(exchangeAttributes(source) ?? []);
    this.ownBody = live ? undefined : source.body;
  }

  get externalOrigin(): string {
    return this.origin ?? this.parent!.externalOrigin;
  }

  get requestId(): string {
    return this.rid ?? this.parent!.requestId;
  }

  get req(): IncomingMessage {
    if (this.parent) return this.parent.req;
    throw new GatewayError(500, 'internal_error', 'the client request of this exchange is over', ErrorCode.internal);
  }

  get signal(): AbortSignal {
    return this.parent ? this.parent.signal : NEVER_ABORTED;
  }

  get body(): Buffer | undefined {
    return this.ownBody ?? this.parent?.body;
  }

  bufferBody(limit?: number): Promise<Buffer> {
    if (this.ownBody) return Promise.resolve(this.ownBody);
    if (this.parent) return this.parent.bufferBody(limit);
    return Promise.reject(new GatewayError(500, 'internal_error', 'the client request body is no longer available', ErrorCode.internal));
  }

  peekBody(limit?: number): Promise<Buffer | undefined> {
    if (this.ownBody) return Promise.resolve(this.ownBody);
    if (this.parent) return this.parent.peekBody(limit);
    return Promise.reject(new GatewayError(500, 'internal_error', 'the client request body is no longer available', ErrorCode.internal));
  }

  copyBody(limit: number, take?: (bytes: number) => boolean): Promise<Buffer | undefined> {
    if (this.ownBody) return Promise.resolve(this.ownBody.length <= limit && (take === undefined || take(this.ownBody.length)) ? this.ownBody : undefined);
    return this.parent ? this.parent.copyBody(limit, take) : Promise.resolve(undefined);
  }

  readBodyInto(limit: number, receiver: BodyReceiver): void {
    if (this.ownBody) receiver.bodyRead(this.ownBody);
    else if (this.parent) this.parent.readBodyInto(limit, receiver);
    else receiver.bodyFailed(new GatewayError(500, 'internal_error', 'the client request body is no longer available', ErrorCode.internal));
  }

  setBody(body: Buffer): void {
    this.ownBody = body;
    this.headers['content-length'] = String(body.length);
    delete this.headers['transfer-encoding'];
  }

  get<T>(key: AttributeKey<T>): T | undefined {
    return this.attrs.get(key.name) as T | undefined;
  }

  set<T>(key: AttributeKey<T>, value: T): void {
    this.attrs.set(key.name, value);
  }

  get [EXCHANGE_STATE](): ExchangeState {
    return this.#state;
  }

  [EXCHANGE_ATTRIBUTES](): ReadonlyMap<string, unknown> {
    return this.attrs;
  }

  queueResponseHeader(name: string, value: string): void {
    this.parent?.queueResponseHeader(name, value);
  }

  logField(name: string, value: string | number | boolean): void {
    this.parent?.logField(name, value);
  }

  detach(): Exchange {
    return new ExchangeView(this, false);
  }
}
