import type { IncomingMessage, ServerResponse } from 'node:http';
import type { CompiledBind, CompiledListener, CompiledRoute, Snapshot } from '../compile/snapshot.ts';
import { ExchangeImpl } from './exchange-impl.ts';
import { HostRejection, requestHostname } from './host-header.ts';
import { absoluteFormScheme, normalizePath } from '../exchange/normalize-path.ts';
import { CONNECT_REFUSED, requestInputProblem, UNSUPPORTED_CODING } from './request-input.ts';
import { ErrorCode, GatewayError } from '../sdk/index.ts';
import { blankConnectionListed } from '../upstream/hop-by-hop.ts';

// A request's exchange and route, as the pipeline makes them (request-pipeline.ts).

const NO_AUTHORITY = new HostRejection('the absolute-form request target has no authority');

/**
 * First route of the listener whose hostnames and any match object accept the request, among the routes its path can
 * select (route-index.ts: the others cannot match it).
 */
export function selectRoute(listener: CompiledListener, ex: ExchangeImpl): CompiledRoute | undefined {
  const routes = listener.routesFor(ex.path);
  for (let i = 0; i < routes.length; i++) {
    const route = routes[i]!;
    if (route.hostnameTest !== null && !route.hostnameTest(ex.hostname)) continue;
    const matches = route.matches;
    if (matches === null) {
      ex.matchedPrefix = '/';
      return route;
    }
    for (let m = 0; m < matches.length; m++) {
      if (matches[m]!.test(ex)) {
        ex.matchedPrefix = matches[m]!.prefix;
        return route;
      }
    }
  }
  return undefined;
}

/**
 * The exchange of a request, its Host and path normalised (docs/adr/0013, 0014). When they are malformed,
 * `ex.refusal` says why (the exchange then carries the raw path and an empty hostname, for the access log).
 */
export function makeExchange(req: IncomingMessage, res: ServerResponse | undefined, secure: boolean, snapshot: Snapshot): ExchangeImpl {
  if (req.method === 'CONNECT') return connectExchange(req, res, secure, snapshot);
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  let raw = q === -1 ? url : url.slice(0, q);
  const statics = snapshot.staticConfig;
  const skip = raw.charCodeAt(0) === 47 ? 0 : absoluteFormScheme(raw);
  if (skip > 0) {
    // Absolute form (`GET http://h/x`): the target's authority replaces Host (RFC 9112 §3.2.2).
    const slash = raw.indexOf('/', skip);
    req.headers.host = slash === -1 ? raw.slice(skip) : raw.slice(skip, slash);
    raw = slash === -1 ? '/' : raw.slice(slash);
    // From here on the target is its origin form, as the SDK's `originalUrl` says ("path and query"): policies, the
    // access log and CEL read a path, never `http://host/...`.
    req.url = q === -1 ? raw : raw + url.slice(q);
  }
  const host = skip > 0 && req.headers.host === '' ? NO_AUTHORITY : requestHostname(req.headers, req.rawHeaders);
  const path = normalizePath(raw, statics.paths);
  // The client's Connection-named headers are its hop's: gone before any policy runs, so they never remove one a
  // policy adds (ADR 0117). Nothing to do for the usual values.
  const connection = req.headers.connection;
  if (connection !== undefined && connection !== 'keep-alive' && connection !== 'close') blankConnectionListed(req.headers);
  const ex = new ExchangeImpl(
    req,
    res,
    secure ? 'https' : 'http',
    typeof host === 'string' ? host : '',
    typeof path === 'string' ? path : raw,
    q === -1 ? '' : url.slice(q),
    performance.now(),
    statics.trustedProxies,
  );
  if (typeof host !== 'string') ex.refusal = host.message;
  else if (typeof path !== 'string') ex.refusal = path.message;
  else ex.refusal = requestInputProblem(req);
  return ex;
}

/**
 * A CONNECT's exchange, refused (405, ADR 0158 and 0166) whatever its Host or target. Its target is an authority
 * (RFC 9110 9.3.6: HTTP/1.1's request target, HTTP/2's `:authority`), never a path: it is the exchange's path and
 * original URL as the client sent it, so the access log's `http.path` says where the tunnel was to go.
 */
function connectExchange(req: IncomingMessage, res: ServerResponse | undefined, secure: boolean, snapshot: Snapshot): ExchangeImpl {
  const target = req.httpVersionMajor === 2 ? (req.headers.host ?? '') : (req.url ?? '');
  req.url = target;
  const host = requestHostname(req.headers, req.rawHeaders);
  const ex = new ExchangeImpl(req, res, secure ? 'https' : 'http', typeof host === 'string' ? host : '', target, '', performance.now(), snapshot.staticConfig.trustedProxies);
  ex.refusal = CONNECT_REFUSED;
  return ex;
}

/**
 * The listener of a request on `bind`: the Host's. Over TLS with SNI, a Host that another listener serves than the
 * one SNI chose (whose certificate the client checked) is misdirected (421, BEHAVIOUR 2.1b, ADR 0138): served, it
 * would reach a listener, and its policies, on the strength of another name's certificate.
 */
export function requestListener(bind: CompiledBind | undefined, ex: ExchangeImpl): CompiledListener | GatewayError | undefined {
  const listener = bind?.selectListener(ex.hostname);
  if (listener === undefined || !bind!.secure || bind!.listeners.length < 2) return listener;
  const sni = ex.tlsSni;
  // Without SNI the Host chooses, except a mutual-TLS listener: only its own connections verified the client.
  if (sni === undefined && !listener.clientCertificates) return listener;
  const name = sni ?? '';
  if (bind!.tlsListener(name) === listener) return listener;
  return new GatewayError(421, 'misdirected_request', `this connection's TLS name \`${name}\` is not the request's host \`${ex.hostname}\`; open a connection for it`, ErrorCode.misdirectedRequest);
}

/** The 404 for a request no listener or route takes. */
export const noRoute = (what: 'listener' | 'route', ex: ExchangeImpl): GatewayError =>
  new GatewayError(
    404,
    `${what}_not_found`,
    what === 'route' ? `no route matches ${ex.method} ${ex.path}` : `no listener serves host \`${ex.hostname}\``,
    what === 'route' ? ErrorCode.routeNotFound : ErrorCode.listenerNotFound,
  );

/**
 * A 400 for a request whose Host, path or framing is refused before routing (501 for a transfer coding, ADR 0092; 405
 * for an HTTP/2 client's CONNECT, ADR 0158).
 */
export const refused = (message: string): GatewayError =>
  message === UNSUPPORTED_CODING
    ? new GatewayError(501, 'not_implemented', message, ErrorCode.badRequest)
    : message === CONNECT_REFUSED
      ? new GatewayError(405, 'method_not_allowed', message, ErrorCode.badRequest)
      : new GatewayError(400, 'bad_request', message, ErrorCode.badRequest);
