import type { ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { destroyBody, ErrorCode, GatewayError, jsonErrorReply, RawHeadersReply } from '../sdk/index.ts';
import type { HeaderMap, Logger, PolicyInstance, Reply } from '../sdk/index.ts';
import { headerListSet } from '../sdk/header-list.ts';
import { connectionListed, HOP_BY_HOP } from '../upstream/hop-by-hop.ts';
import { UpstreamFailure } from '../upstream/upstream-errors.ts';
import { headerNameToString } from '../upstream/undici-core.ts';
import type { ExchangeImpl } from './exchange-impl.ts';
import type { DirectReplies, RawHeaders } from '../upstream/direct-forward.ts';
import { isProxyResponse } from './proxy-response.ts';
import { isCheckedHeaderList } from './checked-header-list.ts';
import { LeanAnswer } from './lean-answer.ts';
import { WholeReply } from '../upstream/whole-answer.ts';
import { bodyPutBack } from '../exchange/body-peek.ts';
import { DrainedBody } from '../exchange/body-read.ts';
import { kBodyTrailers, relayTrailers, takesTrailers } from '../upstream/trailers.ts';
import type { TrailerBody, UpstreamTrailers } from '../upstream/trailers.ts';
import { PluginHookError, UnwritableReply, failureOwner, ownerOf } from '../compile/plugin-owner.ts';
import { replyProblem } from '../compile/reply-check.ts';
import { isPromiseLike } from '../sdk/settle-within.ts';
import { grpcAnswer } from './grpc-answer.ts';

/**
 * The reply's headers as the flat `[name, value, ...]` list node:http writes without building another object,
 * leaving out unset values and hop-by-hop headers (whatever backend produced the reply).
 */
export function flatHeaders(headers: HeaderMap): string[] {
  const out: string[] = [];
  const listed = connectionListed(headers.connection);
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || HOP_BY_HOP.has(name) || (listed !== null && listed.has(name))) continue;
    if (typeof value === 'string') out.push(name, value);
    else if (Array.isArray(value)) for (const v of value) out.push(name, v);
    else out.push(name, String(value));
  }
  return out;
}

/** The reply for a thrown error: a GatewayError's status and JSON body, else a logged 500. */
export function errorReply(err: unknown, logger: Logger, ex: ExchangeImpl): Reply {
  if (err instanceof PluginHookError) {
    // A plugin's hook threw or never settled (ADR 0144): the log names the plugin; the client hears no more than before.
    const cause = err.cause;
    ex.errorMessage = err.message;
    const stack = cause instanceof GatewayError ? undefined : (cause as Error)?.stack;
    logger.error(`${err.stage} failed`, { route: ex.route.key, ...err.owner, error: err.message, ...(stack ? { stack } : {}) });
    if (!(cause instanceof GatewayError)) return jsonErrorReply(500, 'internal_error', 'the gateway failed to handle the request', {});
    ex.abort(cause); // the hook's own work (its fetches on ex.signal) stops
    return jsonErrorReply(cause.status, cause.type, cause.message, {});
  }
  if (err instanceof GatewayError) {
    // An upstream failure's log line names the upstream; the client's answer does not.
    ex.errorMessage = err instanceof UpstreamFailure || err instanceof DrainedBody ? err.logMessage : err.message;
    return jsonErrorReply(err.status, err.type, err.message, err.headers ? { ...err.headers } : {});
  }
  ex.errorMessage = (err as Error)?.message ?? String(err);
  // Thrown by a third-party variant's method (an LLM provider's, ADR 0154): the line names it.
  const from = failureOwner(err);
  logger.error(from ? `${from.stage} failed` : 'request failed', { route: ex.route.key, ...from?.owner, error: err as Error, stack: (err as Error)?.stack });
  return jsonErrorReply(500, 'internal_error', 'the gateway failed to handle the request', {});
}

function discard(body: Reply['body']): void {
  if (body instanceof Readable) destroyBody(body);
}

/**
 * Apply the response hooks and queued headers, then write the reply. Streams are piped with explicit error
 * handling (ARCHITECTURE.md §6: `pipeline()` per request is slower and throws when the client is gone). A hook that
 * returns a promise (one that must read the body first) holds the reply until it settles; sync hooks are not awaited.
 */
export function writeReply(ex: ExchangeImpl, res: ServerResponse, reply: Reply, hooks: readonly PolicyInstance[] | null, logger: Logger): void {
  // A Reply is node:http's to write (ADR 0093): the lean answer hands over before its first byte.
  if (res instanceof LeanAnswer) res = res.nodeResponse();
  if (ex.replied || res.destroyed) {
    discard(reply.body);
    return;
  }
  ex.replied = true;
  // A gateway-made error: a gRPC client's is a gRPC status (ADR 0178); on a route whose backend speaks a client API
  // (an LLM's) any other takes that API's error shape, guarded (error-shaper.ts).
  if (reply.error !== undefined || (reply.local && reply.status >= 400)) {
    if (!grpcAnswer(ex, reply) && reply.error !== undefined) ex.compiledRoute?.shapeError?.(ex, reply);
  }
  if (hooks) runResponseHooks(ex, res, reply, hooks, 0, logger);
  else send(ex, res, reply);
}

/**
 * A response hook's failure, logged naming its plugin (looked up now that it failed). True when it was a third-party
 * hook leaving the reply unwritable (ADR 0154, `ownedHooks`): a 500 went out instead (unless the client left).
 */
function hookFailed(ex: ExchangeImpl, res: ServerResponse, reply: Reply, hook: PolicyInstance, err: unknown, logger: Logger): boolean {
  logger.error('response hook failed', { route: ex.route.key, ...ownerOf(hook), error: err as Error });
  if (!(err instanceof UnwritableReply)) return false;
  ex.errorMessage = err.message;
  discard(reply.body);
  if (res.destroyed) return true;
  const failed = jsonErrorReply(500, 'internal_error', 'the gateway failed to handle the request', {});
  grpcAnswer(ex, failed);
  send(ex, res, failed);
  return true;
}

function runResponseHooks(ex: ExchangeImpl, res: ServerResponse, reply: Reply, hooks: readonly PolicyInstance[], start: number, logger: Logger): void {
  for (let i = start; i < hooks.length; i++) {
    let result: void | Promise<void>;
    try {
      result = hooks[i]!.onResponse!(ex, reply);
    } catch (err) {
      // The reply goes on, unless the hook left it unwritable.
      if (hookFailed(ex, res, reply, hooks[i]!, err, logger)) return;
      result = undefined;
    }
    if (isPromiseLike<void>(result)) {
      const next = (): void => {
        // The client left (or the request timed out and was cut) while the hook worked.
        if (res.destroyed) return discard(reply.body);
        runResponseHooks(ex, res, reply, hooks, i + 1, logger);
      };
      result.then(next, (err: unknown) => {
        if (!hookFailed(ex, res, reply, hooks[i]!, err, logger)) next();
      });
      return;
    }
  }
  send(ex, res, reply);
}

function send(ex: ExchangeImpl, res: ServerResponse, reply: Reply): void {
  const body = reply.body;
  // An upstream's answer whose header object nobody made: its raw list is written as the plain route writes it.
  const raw = reply instanceof RawHeadersReply ? reply.rawHeaders : undefined;
  if (!(raw !== undefined ? writeRawHead(ex, res, reply.status, raw, body, reply instanceof WholeReply) : writeHead(ex, res, reply.status, reply.headers, body))) {
    discard(body);
    return;
  }
  if (body instanceof Readable) {
    ex.replyStream = body;
    // An HTTP/2 client gets the upstream's trailers (ADR 0141): given before `pipe` ends the response.
    if (ex.http2 && takesTrailers(res)) body.once('end', () => relayTrailers(res, trailersOf(reply, body)));
    body.on('error', (err) => {
      // The upstream broke mid-stream: the client must see a truncated response, not a clean end. An error of the
      // exchange's own abort (the route's deadline) keeps the message its cause gave.
      if (ex.aborted === undefined) ex.errorMessage = `upstream stream failed: ${err.message}`;
      res.destroy(err);
    });
    body.pipe(res);
  } else {
    // An answer read whole, by its backend (`readWhole`) or by a policy that set the bytes (ADR 0158).
    if (ex.http2 && takesTrailers(res)) relayTrailers(res, trailersOf(reply, null));
    if (body === null || body === undefined) res.end();
    else res.end(body);
  }
}

/** The upstream's trailers of a reply: its body stream's, else the answer's it was made from (`WholeReply`). */
function trailersOf(reply: Reply, body: Readable | null): UpstreamTrailers | null | undefined {
  return (body as TrailerBody | null)?.[kBodyTrailers] ?? (reply as TrailerBody)[kBodyTrailers];
}

/**
 * The status line and headers of a reply, the queued headers added. False when they could not be written (an
 * invalid header: a 500 goes out instead, or the response is destroyed when that is too late).
 */
function writeHead(ex: ExchangeImpl, res: ServerResponse, status: number, headers: HeaderMap, body: Reply['body']): boolean {
  const queued = ex.queued;
  if (queued) for (let i = 0; i < queued.length; i += 2) headers[queued[i]!] = queued[i + 1]!;
  ex.status = status;
  ex.replyHeaders = headers;
  if (headers['content-length'] === undefined) {
    if (body !== undefined && body !== null && !(body instanceof Readable)) {
      headers['content-length'] = typeof body === 'string' ? Buffer.byteLength(body) : body.length;
    } else if (body == null && status >= 200 && status !== 204 && status !== 304 && ex.method !== 'HEAD' && headers['transfer-encoding'] === undefined) {
      // No body at all (a preflight, a redirect): an empty body, said so, as Envoy does, not an empty chunked one.
      headers['content-length'] = 0;
    }
  }
  return writeStatus(ex, res, status, flatHeaders(headers));
}

/**
 * `writeHead` of a raw header list, as `writeHead` would write the object `parseHeaders` makes of it: the queued
 * headers replace, a body given whole without a `Content-Length` gets one, hop-by-hop headers go. The access log's
 * `response.headers` is made from the list (with the queued headers) only if read.
 */
function writeRawHead(ex: ExchangeImpl, res: ServerResponse, status: number, raw: readonly (Buffer | string)[], body: Reply['body'], kernelMade: boolean): boolean {
  const queued = ex.queued;
  if (body !== undefined && body !== null && !(body instanceof Readable) && !hasName(raw, 'content-length') && (queued === undefined || !hasName(queued, 'content-length'))) {
    raw = [...raw, 'content-length', String(typeof body === 'string' ? Buffer.byteLength(body) : body.length)];
  }
  ex.status = status;
  ex.rawReplyHeaders = raw;
  // A kernel-made reply's strings are the lean client's, checked by its parser (ADR 0084, as the direct forward's,
  // ADR 0082): written without node:http checking them again. A status a backend set is `writeHead`'s to check.
  if (kernelMade && queued === undefined && typeof raw[0] === 'string' && Number.isInteger(status) && status >= 100 && status <= 999 && isProxyResponse(res)) {
    closeIfBodyUnread(ex, res);
    if (res.writeCheckedHead(status, raw as readonly string[])) return true;
  }
  return writeStatus(ex, res, status, flatRawHeaders(raw, queued));
}

function hasName(raw: readonly (Buffer | string)[], name: string): boolean {
  for (let i = 0; i < raw.length; i += 2) if (headerNameToString(raw[i]!) === name) return true;
  return false;
}

/**
 * Replying while the request body is still being streamed (the upstream failed or answered early), or while a peek put
 * its start back to be streamed (ADR 0142): the rest of that body may never be read, so this connection cannot carry
 * another request. Say so (`Connection: close`).
 */
function closeIfBodyUnread(ex: ExchangeImpl, res: ServerResponse): void {
  const req = ex.req;
  if (!req.complete && (req.readableFlowing !== null || req.destroyed || bodyPutBack(req))) res.shouldKeepAlive = false;
}

/**
 * A direct forward's final header list after policies edited it (response hooks, queued headers): written as the
 * checked head (ADR 0082) when every entry passes node:http's own checks (`isCheckedHeaderList`), as the unedited
 * answer is, instead of `writeHead` checking each header again and `processHeader` concatenating and lower-casing each
 * name (~0.35 KiB per response on the bench's policies route; docs/perf.md "Session 12, polcost").
 */
function writeListedHead(ex: ExchangeImpl, res: ServerResponse, status: number, flat: string[]): boolean {
  if (isCheckedHeaderList(flat) && writeChecked(ex, res, status, flat)) return true;
  return writeStatus(ex, nodeResponse(res), status, flat);
}

/**
 * The checked head (ADR 0082) of a list whose names and values are known good: written by the lean answer itself
 * (ADR 0093) or by node:http's `ProxyResponse`; false, nothing written, when neither takes it (then `writeStatus`).
 */
function writeChecked(ex: ExchangeImpl, res: ServerResponse, status: number, list: readonly string[]): boolean {
  if (res instanceof LeanAnswer) {
    if (res.writeCheckedHead(status, list)) return true;
    res = res.nodeResponse();
  }
  if (!isProxyResponse(res)) return false;
  closeIfBodyUnread(ex, res);
  return res.writeCheckedHead(status, list);
}

/** `res.writeHead` of the final header list; a header node:http refuses answers 500 instead (or destroys). */
function writeStatus(ex: ExchangeImpl, res: ServerResponse, status: number, flat: string[]): boolean {
  closeIfBodyUnread(ex, res);
  try {
    res.writeHead(status, flat);
    return true;
  } catch (err) {
    ex.errorMessage = `invalid response header: ${(err as Error).message}`;
    ex.status = 500;
    if (!res.headersSent) {
      // The refused writeHead had already taken the answer's reason phrase and Content-Length (node:http's
      // matchHeader notes it before a later header throws): the 500 must not go out as `500 OK` framed by the answer's
      // length, which leaves the rest of its body on the connection as the start of the next response.
      res.statusMessage = '';
      (res as ServerResponse & { _contentLength: number | null })._contentLength = null;
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { type: 'internal_error', message: ex.errorMessage } }));
    } else res.destroy();
    return false;
  }
}

/** node:http's response for `res`: a lean answer's, made now (before its first byte), or `res` itself. */
function nodeResponse(res: ServerResponse): ServerResponse {
  return res instanceof LeanAnswer ? res.nodeResponse() : res;
}

/**
 * undici's raw answer headers as the flat `[name, value, ...]` list `writeHead` writes, as `flatHeaders` would list the
 * object `parseHeaders` makes of them with the queued headers assigned: names lower-cased, hop-by-hop ones (and those
 * `Connection` names) left out, a queued header replacing every value of its name where it first appeared. Made
 * from the Buffers directly: no header object, no second walk over one (docs/perf.md "Plain route CPU, session 7").
 */
export function flatRawHeaders(raw: RawHeaders, queued: readonly string[] | undefined): string[] {
  const out: string[] = [];
  let connection: string[] | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = headerNameToString(raw[i]!);
    const value = raw[i + 1]!.toString('latin1');
    if (HOP_BY_HOP.has(name)) {
      if (name === 'connection') (connection ??= []).push(value);
      continue;
    }
    out.push(name, value);
  }
  if (queued) {
    for (let q = 0; q < queued.length; q += 2) {
      const name = queued[q]!;
      if (name === 'connection') connection = [queued[q + 1]!];
      else if (!HOP_BY_HOP.has(name)) headerListSet(out, name, queued[q + 1]!);
    }
  }
  const listed = connection === undefined ? null : connectionListed(connection.length === 1 ? connection[0] : connection);
  if (listed === null) return out;
  const kept: string[] = [];
  for (let i = 0; i < out.length; i += 2) if (!listed.has(out[i]!)) kept.push(out[i]!, out[i + 1]!);
  return kept;
}

/**
 * The raw answer headers after a route's `onResponseHeaders` hooks (ADR 0071), as `writeReply` would send the reply
 * after its `onResponse` hooks: the hooks see every header (hop-by-hop ones too, as a reply's object holds them) in
 * the upstream's order, then the queued headers replace, then hop-by-hop ones and those `Connection` names go.
 * `ex.rawReplyHeaders` keeps the list as the hooks left it with the queued headers (what the access log's
 * `response.headers` shows). A hook that throws is logged and skipped, as a response hook is.
 */
export function editedRawHeaders(ex: ExchangeImpl, status: number, raw: RawHeaders, hooks: readonly PolicyInstance[], logger: Logger): string[] {
  return withoutHopByHop(editHeaderList(ex, status, raw, hooks, logger));
}

/** `editedRawHeaders` before hop-by-hop headers go: the list the hooks edited, with the queued headers. */
function editHeaderList(ex: ExchangeImpl, status: number, raw: RawHeaders, hooks: readonly PolicyInstance[], logger: Logger): string[] {
  let list: string[];
  if (typeof raw[0] === 'string') {
    // The lean client's list (latin1 strings made for this answer, read by nothing after `start`) is edited in place
    // rather than copied: the copy and the filtered list of `withoutHopByHop` (not made for a checked head) were
    // ~0.7 KiB per response on the bench's policies route (docs/perf.md "Session 12, polcost").
    list = raw as string[];
    for (let i = 0; i < list.length; i += 2) list[i] = headerNameToString(list[i]!);
  } else {
    list = new Array<string>(raw.length);
    for (let i = 0; i < raw.length; i += 2) {
      list[i] = headerNameToString(raw[i]!);
      list[i + 1] = raw[i + 1]!.toString('latin1');
    }
  }
  for (let h = 0; h < hooks.length; h++) {
    try {
      // Synchronous by contract; a third-party one's rejected promise is logged by its wrapper (ADR 0155).
      hooks[h]!.onResponseHeaders!(ex, status, list);
    } catch (err) {
      logger.error('response hook failed', { route: ex.route.key, ...ownerOf(hooks[h]), error: err as Error });
    }
  }
  const queued = ex.queued;
  if (queued) for (let q = 0; q < queued.length; q += 2) headerListSet(list, queued[q]!, queued[q + 1]!);
  ex.rawReplyHeaders = list;
  return list;
}

/** The list without hop-by-hop headers and those its `Connection` names: what `writeHead` is given. */
function withoutHopByHop(list: readonly string[]): string[] {
  let connection: string[] | undefined;
  const out: string[] = [];
  for (let i = 0; i < list.length; i += 2) {
    const name = list[i]!;
    if (HOP_BY_HOP.has(name)) {
      if (name === 'connection') (connection ??= []).push(list[i + 1]!);
      continue;
    }
    out.push(name, list[i + 1]!);
  }
  const listed = connection === undefined ? null : connectionListed(connection.length === 1 ? connection[0] : connection);
  if (listed === null) return out;
  const kept: string[] = [];
  for (let i = 0; i < out.length; i += 2) if (!listed.has(out[i]!)) kept.push(out[i]!, out[i + 1]!);
  return kept;
}

/**
 * The runtime's side of a direct forward (ADR 0051): an upstream answer written into the response as it arrives,
 * on a route where no response hook needs it as a Reply. Errors are answered as `writeReply` answers them.
 */
export function directReplies(logger: Logger): DirectReplies<ExchangeImpl> {
  return {
    start(ex, res, status, rawHeaders) {
      if (ex.replied || res.destroyed) return false;
      ex.replied = true;
      ex.status = status;
      const hooks = ex.responseHooks;
      if (hooks !== null) {
        // The edited list goes to the checked head with its hop-by-hop headers, which `writeCheckedHead` leaves out
        // itself (a `Connection` naming other headers sends it back here): no second list per response.
        const list = editHeaderList(ex, status, rawHeaders, hooks, logger);
        if (isCheckedHeaderList(list) && writeChecked(ex, res, status, list)) return true;
        return writeStatus(ex, nodeResponse(res), status, withoutHopByHop(list));
      }
      // The header object (the access log's CEL `response.headers`) is made only if something reads it.
      ex.rawReplyHeaders = rawHeaders;
      // The lean client's strings (undici's are Buffers) were checked by its parser: written without node:http
      // checking them again (ADR 0082), by the lean answer itself when the lean side read the request (ADR 0093).
      // Queued headers come from policies: checked first (`writeListedHead`).
      if (ex.queued === undefined && typeof rawHeaders[0] === 'string' && writeChecked(ex, res, status, rawHeaders as readonly string[])) return true;
      return writeListedHead(ex, res, status, flatRawHeaders(rawHeaders, ex.queued));
    },
    fail(ex, res, err) {
      // A failure is a reply: the route's response hooks apply to it (CORS headers on a 502).
      writeReply(ex, res, errorReply(err, logger, ex), ex.responseHooks, logger);
    },
    broke(ex, res, err) {
      // The client must see a truncated response, not a clean end.
      ex.errorMessage = `upstream stream failed: ${err.message}`;
      res.destroy(err);
    },
  };
}

export function timeoutError(ms: number): GatewayError {
  return new GatewayError(504, 'request_timeout', `request did not complete within ${ms}ms`, ErrorCode.requestTimeout);
}
