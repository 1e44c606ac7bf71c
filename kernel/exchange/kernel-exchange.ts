import type { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Context, Span } from '@opentelemetry/api';
import type { Exchange } from '../sdk/index.ts';
import { AbortHook } from './abort-hook.ts';
import type { BodyReceiver } from './body-read.ts';
import { EMPTY_PLAN } from './upstream-plan.ts';
import type { UpstreamPlan } from './upstream-plan.ts';
import type { VerifiedClientCertificate } from './client-certificate.ts';

/**
 * What the kernel keeps about one client request beside the public `Exchange` fields: what forwarding reads and
 * writes (the compiled upstream plan, attempt numbering, abort state) and the client's own Host and address.
 * The exchange made for the request is its own state; every view of it shares that state (docs/adr/0029).
 */
export interface ExchangeState {
  /** The client's Host header as received: `X-Forwarded-Host`, and tells a policy's authority change apart. */
  readonly clientAuthority: string;
  /** The TCP peer (appended to X-Forwarded-For). */
  readonly peerAddress: string;
  /** The response to the client, while there is one (a client gone mid-attempt stops retries). */
  readonly res: ServerResponse | undefined;
  /** How upstream calls of the chosen (route, backend) pair behave. */
  readonly plan: UpstreamPlan;
  /** Upstream attempts so far, across backends (ADR 0023). */
  attempts: number;
  /** Set by the forwarder when its last attempt failed before the upstream's application saw it. */
  retryableFailure: boolean;
  /** Set when the route's request timeout fired: the upstream call must give up. */
  readonly timedOut: boolean;
  /** Why the request was aborted; undefined while it is live. */
  readonly aborted: unknown;
  /** The abort signal handed to undici for upstream calls. */
  abortHook(): AbortHook;
  /** `bufferBody` without a promise, called from the socket's events; only a client request's own exchange has it. */
  readBodyOnSocket?(limit: number, receiver: BodyReceiver): void;
  /** The client's body once read (sent again on a retry elsewhere); only a client request's own exchange keeps it. */
  receivedBody?: Buffer | undefined;
  /** Why a streamed body could not be kept for a retry (ADR 0152): the access log's `retry.skipped` if one was due. */
  replaySkip?: string | undefined;
  /**
   * When tracing: the context upstream attempts of this request are children of (the request's SERVER span, or a
   * plugin span that took them over with `PluginSpan.enclose`); undefined: the active context.
   */
  traceParent: Context | undefined;
  /** When tracing: the request's SERVER span. */
  readonly span: Span | undefined;
  /**
   * When tracing a request served without the async context (ADR 0062: nothing but the kernel runs for it): the
   * context its SERVER span was started in (the client's `traceparent` and `baggage`, or the root context); the
   * SERVER span is then passed explicitly as the parent of its attempts. Undefined when the request runs inside the
   * SERVER span's async context (`context.active()`).
   */
  traceRoot: Context | undefined;
  /**
   * A WebSocket upgrade's outcome, told by the forwarder: the status the client got (101, the upstream's refusal, a
   * gateway error, 499 when the client left first); with a 101, the upstream socket the forwarder relays to. Set by
   * the pipeline on upgrade requests: it logs, counts and traces the handshake, and when something records the
   * connection (access log, tracing), returns the tap the forwarder feeds the bytes it relays itself (ADR 0055).
   */
  readonly upgradeDone?: ((status: number, upstream?: Duplex) => UpgradeTap | undefined) | undefined;
  /** The client certificate a mutual-TLS listener verified (ADR 0140); only a client request's own exchange has it. */
  readonly clientCertificate?: VerifiedClientCertificate | undefined;
}

/** What the forwarder tells about bytes of an upgraded connection that it writes itself rather than through its pipes. */
export interface UpgradeTap {
  fromClient(chunk: Buffer): void;
  fromUpstream(chunk: Buffer): void;
  /** The gateway is closing the connection itself, and why (`idle_timeout`): called before it closes the sockets. */
  closedByGateway(cause: string): void;
}

/**
 * The handle (docs/adr/0029): symbols only kernel modules import; the SDK does not export them. Every exchange the
 * kernel hands out (the request's own, views, detached copies) carries its request's state under `EXCHANGE_STATE`
 * and its attributes under `EXCHANGE_ATTRIBUTES`, so no kernel code casts an SDK `Exchange` to a kernel class, and
 * an object a plugin made itself simply has neither. The request's exchange answers both from prototype members:
 * the handle costs it no field and no allocation.
 */
export const EXCHANGE_STATE: unique symbol = Symbol('switchyard.exchangeState');
export const EXCHANGE_ATTRIBUTES: unique symbol = Symbol('switchyard.exchangeAttributes');

/** What an exchange made by the kernel offers under the handle. */
export interface KernelExchange {
  readonly [EXCHANGE_STATE]: ExchangeState;
  /** This exchange's own attributes (a view's are its copy), for CEL and copies. */
  [EXCHANGE_ATTRIBUTES](): ReadonlyMap<string, unknown> | undefined;
}

/** The kernel state behind `ex`; undefined for an object a plugin made itself. */
export function exchangeState(ex: Exchange): ExchangeState | undefined {
  return (ex as Partial<KernelExchange>)[EXCHANGE_STATE];
}

/** The attributes of `ex`; undefined for an object a plugin made itself (the SDK interface offers only `get`). */
export function exchangeAttributes(ex: Exchange): ReadonlyMap<string, unknown> | undefined {
  const k = ex as Partial<KernelExchange>;
  return k[EXCHANGE_ATTRIBUTES] ? k[EXCHANGE_ATTRIBUTES]() : undefined;
}

/**
 * The state of an exchange no client request stands behind any more (a detached copy), or of one a plugin made:
 * forwarding it counts its own attempts, is never aborted, and takes the plan of the request it was copied from.
 */
export class DetachedState implements ExchangeState {
  readonly clientAuthority: string;
  readonly peerAddress: string;
  readonly res = undefined;
  readonly plan: UpstreamPlan;
  attempts = 0;
  retryableFailure = false;
  readonly timedOut = false;
  readonly aborted = undefined;
  traceParent: Context | undefined;
  readonly span: Span | undefined;
  traceRoot: Context | undefined;
  readonly upgradeDone = undefined;
  private hook: AbortHook | undefined = undefined;

  constructor(ex: Exchange, from?: ExchangeState) {
    this.clientAuthority = from ? from.clientAuthority : ex.authority;
    this.peerAddress = from ? from.peerAddress : ex.sourceAddress;
    this.plan = from ? from.plan : EMPTY_PLAN;
    this.traceParent = from?.traceParent;
    this.span = from?.span;
    this.traceRoot = from?.traceRoot;
  }

  abortHook(): AbortHook {
    return (this.hook ??= new AbortHook());
  }
}
