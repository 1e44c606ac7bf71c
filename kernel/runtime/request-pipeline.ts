import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { ErrorCode, GatewayError } from '../sdk/index.ts';
import type { BackendChoice, BackendSelector, Logger, PolicyInstance, Reply } from '../sdk/index.ts';
import type { CompiledBackendRef, CompiledRoute, Snapshot } from '../compile/snapshot.ts';
import type { AccessLog } from '../telemetry/access-log.ts';
import type { Tracing } from '../telemetry/tracing.ts';
import type { MetricsRegistry, RouteMetrics } from '../telemetry/metrics.ts';
import { ExchangeImpl } from './exchange-impl.ts';
import { directReplies, errorReply, timeoutError, writeReply } from './reply-writer.ts';
import { directForwarder } from '../upstream/pooled-target.ts';
import type { DirectReplies } from '../upstream/direct-forward.ts';
import { grpcStatusOf, takesTrailers } from '../upstream/trailers.ts';
import { runRequestHooks } from '../compile/run-hooks.ts';
import { serveWithHealth } from './failover.ts';
import type { Outcome } from './failover.ts';
import { pickBackend, pickInOrder } from './backend-pick.ts';
import { kClosing } from './request-input.ts';
import type { ClosingSocket } from './request-input.ts';
import { makeExchange, noRoute, refused, requestListener, selectRoute } from './request-exchange.ts';
import { serveUpgradeRequest } from './upgrade-request.ts';
import type { UpgradeServing } from './upgrade-request.ts';
import type { LeanServing } from './lean-connection.ts';
import type { LeanRequest } from './lean-request.ts';
import { kWholeBody } from '../exchange/body-read.ts';
import { ownerOf } from '../compile/plugin-owner.ts';

const EMPTY_BODY = Buffer.alloc(0);

const isOrder = (choice: BackendChoice): choice is readonly number[] => Array.isArray(choice);

/** The exchange a response belongs to, read by the one shared 'close' listener below. */
const kExchange = Symbol('switchyard.exchange');
type TrackedResponse = ServerResponse & { [kExchange]?: ExchangeImpl };

/** The data plane: takes each request from a bind server through route selection, the chain and the backend. */
export class RequestPipeline implements LeanServing, UpgradeServing {
  snapshot: Snapshot | undefined = undefined;
  draining = false;
  /** The drain deadline passed and the gateway is closing what is left: those requests are its doing, not the client's. */
  cutAtDrain = false;
  /** `config.tracing` started; null (no tracing) keeps the path below free of any tracing work. */
  tracing: Tracing | null = null;
  readonly logger: Logger;
  readonly accessLog: AccessLog;
  /** Requests answered before a route was chosen (refused, no route): plain ones and upgrades. */
  readonly unmatched: RouteMetrics;
  private readonly metrics: MetricsRegistry;
  /**
   * The 'close' listener of every response, made once: the exchange rides on the response. A closure per request
   * (and `once`'s wrapper around it) were two allocations more on the hot path (docs/perf.md, session 5).
   */
  private readonly onResponseClose: (this: TrackedResponse) => void;
  /** How answers forwarded straight into the response are written (ADR 0051). */
  private readonly replies: DirectReplies<ExchangeImpl>;

  constructor(logger: Logger, accessLog: AccessLog, metrics: MetricsRegistry) {
    this.logger = logger;
    this.accessLog = accessLog;
    this.unmatched = metrics.route('', '', '');
    this.metrics = metrics;
    this.replies = directReplies(logger);
    const pipeline = this;
    this.onResponseClose = function (this: TrackedResponse) {
      const ex = this[kExchange];
      if (ex !== undefined) pipeline.finish(ex, this);
    };
  }

  /** node:http 'request' handler for the bind on `port`. */
  handle(req: IncomingMessage, res: ServerResponse, port: number, secure: boolean): void {
    if (res.socket === null) {
      // Pipelined behind an answer still being written: served when node:http hands it the connection, one request
      // at a time as Envoy and the lean side do (ADR 0092). node:http would run every pipelined request at once: one
      // connection, any number of concurrent upstream requests, POSTs included (RFC 9112 §9.3.2: only safe ones).
      res.once('socket', () => this.handle(req, res, port, secure));
      return;
    }
    const closing = (req.socket as ClosingSocket)[kClosing];
    if (closing !== undefined) {
      res.shouldKeepAlive = false;
      // Pipelined behind a refusal: node closes the connection once that answer is written; this one never runs.
      if (closing !== req) return;
      // A declined upgrade (request-input.ts) is answered, then the connection closes.
    }
    const snapshot = this.snapshot!;
    snapshot.acquire();
    const ex = makeExchange(req, res, secure, snapshot);
    ex.snapshot = snapshot;
    if (this.draining) res.shouldKeepAlive = false;
    // A response emits 'close' once: `on` needs no `once` wrapper.
    (res as TrackedResponse)[kExchange] = ex;
    res.on('close', this.onResponseClose);
    if (this.tracing !== null) this.tracing.start(ex);
    this.serve(ex, res, port, snapshot);
  }

  /** The exchange `acceptsLean` made for the lean server side, served by the `serve` that follows it. */
  private leanExchange: ExchangeImpl | undefined = undefined;

  /**
   * The lean server side (ADR 0088): whether `req` is served lean, decided by its route (`leanSafe`, compiled), without
   * tracing. A refused Host or path, no route, and every route with plugin work are node:http's (which answers them
   * as today).
   */
  acceptsLean(req: LeanRequest, port: number): boolean {
    const snapshot = this.snapshot;
    if (snapshot === undefined || this.tracing !== null) return false;
    const ex = makeExchange(req as unknown as IncomingMessage, undefined, false, snapshot);
    if (ex.refusal !== undefined) return false;
    const listener = snapshot.binds.get(port)?.selectListener(ex.hostname);
    const route = listener ? selectRoute(listener, ex) : undefined;
    if (route === undefined || !route.leanSafe) return false;
    ex.snapshot = snapshot;
    ex.route = route.info;
    ex.compiledRoute = route;
    this.leanExchange = ex;
    return true;
  }

  /** The lean server side's request after `acceptsLean`: `handle` from the route on, the body already read whole. */
  serveLean(req: LeanRequest, res: ServerResponse, body: Buffer | undefined): void {
    const ex = this.leanExchange!;
    this.leanExchange = undefined;
    ex.res = res;
    // A kernel-only route's body is the exchange's from the start (the direct forward sends it); with policies it is
    // handed over when read (`bufferBody`, readBody's `kWholeBody`), as node:http's stream would: `ex.body` stays
    // unset until then and a smaller limit still answers 413.
    if (ex.compiledRoute!.kernelOnly) {
      if (body !== undefined) ex.body = ex.receivedBody = body;
    } else (req as LeanRequest & { [kWholeBody]?: Buffer })[kWholeBody] = body ?? EMPTY_BODY;
    ex.snapshot!.acquire();
    if (this.draining) res.shouldKeepAlive = false;
    (res as TrackedResponse)[kExchange] = ex;
    res.on('close', this.onResponseClose);
    this.serveRoute(ex, res, ex.compiledRoute!);
  }

  /**
   * Route selection, the route's chain and dispatch. When tracing, a route where plugins run gets the request's span
   * as the active context from here on; on a kernel-only route the span is passed explicitly (ADR 0062).
   */
  private serve(ex: ExchangeImpl, res: ServerResponse, port: number, snapshot: Snapshot): void {
    if (ex.refusal !== undefined) {
      res.shouldKeepAlive = false;
      // An HTTP/2 stream's refusal leaves its connection's other streams alone (its socket is theirs too).
      if (ex.req.httpVersionMajor !== 2) (ex.req.socket as ClosingSocket)[kClosing] = true;
      writeReply(ex, res, errorReply(refused(ex.refusal), this.logger, ex), null, this.logger);
      return;
    }
    const listener = requestListener(snapshot.binds.get(port), ex);
    if (listener instanceof GatewayError) return void writeReply(ex, res, errorReply(listener, this.logger, ex), null, this.logger);
    const route = listener ? selectRoute(listener, ex) : undefined;
    if (!route) {
      writeReply(ex, res, errorReply(noRoute(listener ? 'route' : 'listener', ex), this.logger, ex), null, this.logger);
      return;
    }
    ex.route = route.info;
    ex.compiledRoute = route;
    if (ex.span !== undefined && !route.kernelOnly) this.tracing!.enter(ex, () => this.serveRoute(ex, res, route));
    else this.serveRoute(ex, res, route);
  }

  /** The route's request timeout, its chain and dispatch. */
  private serveRoute(ex: ExchangeImpl, res: ServerResponse, route: CompiledRoute): void {
    let timer: NodeJS.Timeout | undefined;
    if (route.requestTimeoutMs > 0) {
      timer = setTimeout(() => this.timeout(ex, res, route), route.requestTimeoutMs);
      res.once('close', () => clearTimeout(timer));
    }
    const hooks = route.requestHooks;
    if (hooks === null) {
      this.dispatch(ex, res, route);
      return;
    }
    let early: Reply | undefined | Promise<Reply | undefined>;
    try {
      early = runRequestHooks(hooks, ex);
    } catch (err) {
      writeReply(ex, res, errorReply(err, this.logger, ex), route.responseHooks, this.logger);
      return;
    }
    if (early === undefined) this.dispatch(ex, res, route);
    else if (early instanceof Promise) {
      early.then(
        (reply) => (reply ? writeReply(ex, res, reply, route.responseHooks, this.logger) : this.dispatch(ex, res, route)),
        (err: unknown) => writeReply(ex, res, errorReply(err, this.logger, ex), route.responseHooks, this.logger),
      );
    } else writeReply(ex, res, early, route.responseHooks, this.logger);
  }

  /** After the route's chain: pick a backend, run its chain, let it produce the reply. */
  private dispatch(ex: ExchangeImpl, res: ServerResponse, route: CompiledRoute): void {
    if (route.selectBackends !== null) {
      this.dispatchChosen(ex, res, route, route.selectBackends);
      return;
    }
    this.dispatchTo(ex, res, route, pickBackend(route, null), undefined);
  }

  /** A route policy chooses the backends (`selectBackends`: virtual models); may wait for the body. */
  private dispatchChosen(ex: ExchangeImpl, res: ServerResponse, route: CompiledRoute, select: BackendSelector): void {
    const fail = (err: unknown): void => writeReply(ex, res, errorReply(err, this.logger, ex), route.responseHooks, this.logger);
    const go = (choice: BackendChoice): void => {
      if (choice === undefined) this.dispatchTo(ex, res, route, pickBackend(route, null), undefined);
      else if (isOrder(choice)) this.dispatchTo(ex, res, route, pickInOrder(route, choice), choice);
      else writeReply(ex, res, choice, route.responseHooks, this.logger);
    };
    let choice: BackendChoice | Promise<BackendChoice>;
    try {
      choice = select(ex);
    } catch (err) {
      fail(err);
      return;
    }
    if (choice instanceof Promise) choice.then(go, fail);
    else go(choice);
  }

  /** Run the picked backend's chain and let it produce the reply; with `order`, fail over only within it. */
  private dispatchTo(ex: ExchangeImpl, res: ServerResponse, route: CompiledRoute, ref: CompiledBackendRef | undefined, order: readonly number[] | undefined): void {
    if (!ref) {
      const err = new GatewayError(500, 'no_backend', `route \`${route.info.name}\` has no backend to send the request to`, ErrorCode.noBackend);
      writeReply(ex, res, errorReply(err, this.logger, ex), route.responseHooks, this.logger);
      return;
    }
    if (route.health !== null || ref.failover !== null) {
      const outcome: Outcome = { ref, reply: undefined, error: undefined };
      const settle = (): void => {
        const reply = outcome.reply ?? errorReply(outcome.error, this.logger, ex);
        writeReply(ex, res, reply, outcome.ref.responseHooks, this.logger);
      };
      serveWithHealth(ex, route, ref, outcome, order).then(settle, (err: unknown) => {
        outcome.reply = undefined;
        outcome.error = err;
        settle();
      });
      return;
    }
    ex.plan = ref.plan;
    ex.logHooks = ref.logHooks;
    if (ref.instance.protocol && ex.protocol === 'http') ex.protocol = ref.instance.protocol;
    // The plain route (ADR 0051): the upstream's answer written straight into the response, without a Reply; a
    // backend's own request hooks run first (ADR 0071).
    if (ref.forwardsDirect) {
      if (ref.requestHooks !== null) return this.hooksThenDirect(ex, res, ref);
      if (this.forwardDirect(ex, res, ref)) return;
    }
    if (ref.requestHooks !== null) {
      const onError = (err: unknown): void => writeReply(ex, res, errorReply(err, this.logger, ex), ref.responseHooks, this.logger);
      const run = async (): Promise<Reply> => (await runRequestHooks(ref.requestHooks!, ex)) || ref.instance.handle(ex);
      run().then((reply) => writeReply(ex, res, reply, ref.responseHooks, this.logger), onError);
      return;
    }
    this.handleBy(ex, res, ref);
  }

  /** The direct forward, the backend's response hooks editing the answer's headers (ADR 0071); false when it cannot. */
  private forwardDirect(ex: ExchangeImpl, res: ServerResponse, ref: CompiledBackendRef): boolean {
    const direct = directForwarder(ref.instance.target);
    ex.responseHooks = ref.responseHooks;
    if (direct !== null && direct.forwardInto(ex, res, this.replies)) return true;
    ex.responseHooks = null;
    return false;
  }

  /** A directly forwarding backend's request hooks (sync ones without a promise), then the direct forward. */
  private hooksThenDirect(ex: ExchangeImpl, res: ServerResponse, ref: CompiledBackendRef): void {
    const fail = (err: unknown): void => writeReply(ex, res, errorReply(err, this.logger, ex), ref.responseHooks, this.logger);
    const go = (early: Reply | undefined): void => {
      if (early) writeReply(ex, res, early, ref.responseHooks, this.logger);
      else if (!this.forwardDirect(ex, res, ref)) this.handleBy(ex, res, ref);
    };
    let early: Reply | undefined | Promise<Reply | undefined>;
    try {
      early = runRequestHooks(ref.requestHooks!, ex);
    } catch (err) {
      return fail(err);
    }
    if (early instanceof Promise) early.then(go, fail);
    else go(early);
  }

  /**
   * The backend's `handle` (its request hooks done): its promise is the reply, without an async wrapper around it
   * (which cost a promise and two microtask turns per request).
   */
  private handleBy(ex: ExchangeImpl, res: ServerResponse, ref: CompiledBackendRef): void {
    const hooks = ref.responseHooks;
    const onReply = (reply: Reply): void => writeReply(ex, res, reply, hooks, this.logger);
    const onError = (err: unknown): void => writeReply(ex, res, errorReply(err, this.logger, ex), hooks, this.logger);
    let reply: Reply | Promise<Reply>;
    try {
      reply = ref.instance.handle(ex);
    } catch (err) {
      onError(err);
      return;
    }
    if (typeof (reply as PromiseLike<Reply>).then === 'function') (reply as PromiseLike<Reply>).then(onReply, onError);
    else onReply(reply as Reply);
  }

  private timeout(ex: ExchangeImpl, res: ServerResponse, route: CompiledRoute): void {
    if (ex.replied) {
      if (!res.writableFinished) {
        ex.errorMessage = 'request timeout while streaming the response';
        // The abort's reason says the deadline cut the answer, not the client (finish() would say 499).
        ex.abort(timeoutError(route.requestTimeoutMs));
        res.destroy();
      }
      return;
    }
    ex.timedOut = true;
    const err = timeoutError(route.requestTimeoutMs);
    ex.abort(err);
    writeReply(ex, res, errorReply(err, this.logger, ex), route.responseHooks, this.logger);
  }

  private finish(ex: ExchangeImpl, res: ServerResponse): void {
    if (!res.writableFinished) {
      // The client went away (or we destroyed the stream): stop upstream work for it. Cut at the drain deadline, the
      // request is logged 503, not 499: the client did not leave.
      if (this.cutAtDrain) ex.abort(new GatewayError(503, 'shutting_down', 'the gateway stopped at its drain deadline', ErrorCode.upstreamUnavailable));
      else ex.abort(new GatewayError(499, 'client_closed', 'client closed the connection', ErrorCode.badRequest));
      if (ex.replyStream && !ex.replyStream.destroyed) {
        ex.replyStream.on('error', () => undefined);
        ex.replyStream.destroy();
      }
      if (!ex.replied) ex.status = this.cutAtDrain ? 503 : 499;
    }
    const duration = performance.now() - ex.startTime;
    const route = ex.compiledRoute;
    (route ? route.metrics : this.unmatched).record(ex.status, duration / 1000);
    // An HTTP/2 client's answer may be gRPC's: its status is logged (and on the span) as `grpc.status`.
    if (ex.http2 && takesTrailers(res)) {
      const grpcStatus = grpcStatusOf(res);
      if (grpcStatus !== undefined) ex.logField('grpc.status', grpcStatus);
    }
    const logHooks = ex.logHooks ?? route?.logHooks;
    if (logHooks) {
      for (const h of logHooks) {
        try {
          // A third-party `async onLog`'s rejection is logged by its wrapper (ADR 0155).
          h.onLog!(ex, ex.status);
        } catch (err) {
          this.logger.error('log hook failed', { route: ex.route.key, ...ownerOf(h), error: err as Error });
        }
      }
    }
    if (ex.span !== undefined) this.tracing?.finish(ex);
    this.accessLog.record(ex, duration);
    ex.snapshot!.release();
  }

  /** A request node:http refused before it parsed (400, 431, 408): counted under its bind, with no route. */
  refused(port: number, status: number): void {
    this.metrics.route(String(port), '', '').record(status, 0);
  }

  /** node:http 'upgrade' handler (WebSocket): same selection and request chain, then the backend's upgrade. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, port: number, secure: boolean): void {
    serveUpgradeRequest(this, req, socket, head, port, secure);
  }
}
