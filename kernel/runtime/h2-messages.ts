// An HTTP/2 client's request and response as the request pipeline reads and writes node:http's (ADR 0141). node:http2's
// compatibility objects differ at the edges: pseudo-headers (`:method`, `:path`, `:authority`, `:scheme`) in
// `headers` and `rawHeaders`, no Host, a body without Content-Length has no framing header, no `destroyed`, and a
// reason phrase set warns. These subclasses present what the pipeline expects, so no code past the bind changes.
// node:http2 is loaded by the first HTTPS bind (`h2MessageClasses`), never by a cleartext-only config.
import type { IncomingHttpHeaders } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse, ServerHttp2Stream } from 'node:http2';
import { HOP_BY_HOP } from '../upstream/hop-by-hop.ts';
import { headerNameToString } from '../upstream/undici-core.ts';
import { kGrpcStatus, kTrailerSink, kWantsTrailers } from '../upstream/trailers.ts';
import type { UpstreamTrailers } from '../upstream/trailers.ts';

const kHeaders = Symbol('switchyard.h2Headers');
const kRaw = Symbol('switchyard.h2RawHeaders');
const kUrl = Symbol('switchyard.h2Url');
const kMethod = Symbol('switchyard.h2Method');

type H2Headers = Readonly<Record<string, string | string[] | undefined>>;

/** The request's headers without pseudo-headers, Host from `:authority`: node:http's `headers` and `rawHeaders`. */
export function plainHeaders(h2: H2Headers, raw: readonly string[], endAfterHeaders: boolean): { headers: IncomingHttpHeaders; raw: string[] } {
  const headers: IncomingHttpHeaders = {};
  const list: string[] = [];
  const authority = h2[':authority'];
  if (typeof authority === 'string') {
    headers.host = authority;
    list.push('host', authority);
  }
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.charCodeAt(0) === 58 /* : */) continue;
    // A Host naming what `:authority` names is the same header; one naming another host stays in the list, where the
    // Host check refuses a second Host (RFC 9113 8.3.1: a request whose Host and :authority differ is malformed).
    if (name === 'host' && typeof authority === 'string' && raw[i + 1]!.toLowerCase() === authority.toLowerCase()) continue;
    list.push(name, raw[i + 1]!);
  }
  for (const name in h2) {
    if (name.charCodeAt(0) === 58 || (name === 'host' && typeof authority === 'string')) continue;
    (headers as Record<string, unknown>)[name] = h2[name];
  }
  // A body of undeclared length: HTTP/1.1 frames it with `chunked`, and the pipeline reads that header to know a body
  // follows (it is hop-by-hop, never forwarded). nghttp2 refuses a Transfer-Encoding an HTTP/2 client sends.
  if (!endAfterHeaders && headers['content-length'] === undefined) {
    headers['transfer-encoding'] = 'chunked';
    list.push('transfer-encoding', 'chunked');
  }
  return { headers, raw: list };
}

/** The upstream's trailers as node:http2 sends them: names lower-case, hop-by-hop and pseudo ones left out. */
export function trailerFields(trailers: UpstreamTrailers): [string, string | string[]][] {
  const out: [string, string | string[]][] = [];
  const keep = (name: string): boolean => name !== '' && name.charCodeAt(0) !== 58 && !HOP_BY_HOP.has(name) && name !== 'content-length';
  if (Array.isArray(trailers)) {
    const raw = trailers as readonly (Buffer | string)[];
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const name = headerNameToString(raw[i]!);
      if (keep(name)) out.push([name, raw[i + 1]!.toString('latin1')]);
    }
    return out;
  }
  const object = trailers as H2Headers;
  for (const name in object) {
    const value = object[name];
    if (value !== undefined && keep(name.toLowerCase())) out.push([name.toLowerCase(), value]);
  }
  return out;
}

type Staging = Http2ServerResponse & { [kStaged]?: boolean };
const kStaged = Symbol('switchyard.h2HeadStaged');

/**
 * `writeHead` that checks and keeps the head, sent with the first body bytes, at `end()`, or on the next turn of the
 * event loop, whichever comes first. An answer that ends at once (gRPC's trailers-only answer: its status in a HEADERS
 * frame that ends the stream) then goes out as one HEADERS frame ending the stream, as the upstream sent it: sent
 * apart, the client reads an answer whose status never came (grpc-js: INTERNAL). node:http2's own calls
 * (`write`, `end`, `flushHeaders`: status only) send it.
 */
function writeHead(base: (this: Http2ServerResponse, status: number) => Http2ServerResponse) {
  return function (this: Staging, status: number, a?: unknown, b?: unknown): Http2ServerResponse {
    const headers = typeof a === 'string' ? b : a;
    if (headers === undefined) {
      this[kStaged] = false;
      return base.call(this, status);
    }
    // Checked now, as node:http2's writeHead would: the reply writer answers 500 for a header it refuses, and that
    // answer must not carry the refused head's other headers (its Content-Length, say).
    this.statusCode = status;
    const list = Array.isArray(headers) ? (headers as readonly string[]) : null;
    const object = list === null ? (headers as Record<string, string | number | readonly string[] | undefined>) : null;
    try {
      if (list !== null) {
        for (let i = 0; i < list.length; i += 2) if (this.hasHeader(list[i]!)) this.removeHeader(list[i]!);
        for (let i = 0; i < list.length; i += 2) this.appendHeader(list[i]!, list[i + 1]!);
      } else {
        for (const name in object) if (object[name] !== undefined) this.setHeader(name, object[name]!);
      }
    } catch (err) {
      for (const name of this.getHeaderNames()) this.removeHeader(name);
      throw err;
    }
    if (this[kStaged] !== true) {
      this[kStaged] = true;
      setImmediate(sendStaged, this, base);
    }
    return this;
  };
}

function sendStaged(res: Staging, base: (this: Http2ServerResponse, status: number) => Http2ServerResponse): void {
  if (res[kStaged] !== true) return;
  res[kStaged] = false;
  if (!res.headersSent && !res.stream.destroyed && !res.stream.closed) base.call(res, res.statusCode);
}

interface H2Classes {
  readonly H2Request: typeof Http2ServerRequest;
  readonly H2Response: typeof Http2ServerResponse;
}

let classes: H2Classes | undefined;

/** The request and response classes node:http2's compatibility layer makes for each stream (its server options). */
export function h2MessageClasses(): H2Classes {
  if (classes !== undefined) return classes;
  const http2 = process.getBuiltinModule('node:http2');

  class H2Request extends http2.Http2ServerRequest {
    declare [kHeaders]: IncomingHttpHeaders;
    declare [kRaw]: string[];
    declare [kUrl]: string | undefined;
    declare [kMethod]: string;
    declare [kWantsTrailers]: boolean;

    constructor(stream: ServerHttp2Stream, headers: IncomingHttpHeaders, options: object, rawHeaders: string[]) {
      super(stream, headers, options, rawHeaders);
      const h2 = headers as H2Headers;
      const plain = plainHeaders(h2, rawHeaders, stream.endAfterHeaders);
      this[kHeaders] = plain.headers;
      this[kRaw] = plain.raw;
      this[kUrl] = h2[':path'] as string | undefined;
      this[kMethod] = h2[':method'] as string;
      // gRPC's `te: trailers` (the one TE an HTTP/2 request may carry) reaches the upstream (ADR 0141).
      this[kWantsTrailers] = h2.te === 'trailers';
    }
  }
  // Accessors over node's (which read the pseudo-headers): what the pipeline reads and may rewrite.
  const baseComplete = Object.getOwnPropertyDescriptor(http2.Http2ServerRequest.prototype, 'complete')!.get!;
  Object.defineProperties(H2Request.prototype, {
    // node's is true once the stream is reset too: a body cut short must read as incomplete (body-read.ts).
    complete: { get(this: H2Request) { return !this.aborted && (baseComplete.call(this) as boolean); }, configurable: true },
    headers: { get(this: H2Request) { return this[kHeaders]; }, configurable: true },
    rawHeaders: { get(this: H2Request) { return this[kRaw]; }, configurable: true },
    url: { get(this: H2Request) { return this[kUrl]; }, set(this: H2Request, url: string) { this[kUrl] = url; }, configurable: true },
    method: { get(this: H2Request) { return this[kMethod]; }, set(this: H2Request, method: string) { this[kMethod] = method; }, configurable: true },
  });

  class H2Response extends http2.Http2ServerResponse {
    /** Read and set by the pipeline for HTTP/1.1 connections; a stream never closes its connection. */
    shouldKeepAlive = true;

    /** The upstream's trailers (gRPC's status), sent after the body (node:http2 asks for them once the body ends). */
    [kTrailerSink](trailers: UpstreamTrailers): void {
      for (const [name, value] of trailerFields(trailers)) {
        if (name === 'grpc-status') (this as { [kGrpcStatus]?: unknown })[kGrpcStatus] = value;
        try {
          this.addTrailers({ [name]: value });
        } catch {
          // A field node:http2 refuses (invalid characters) is left out, as an invalid header would be.
        }
      }
    }
  }
  const baseFinished = Object.getOwnPropertyDescriptor(http2.Http2ServerResponse.prototype, 'writableFinished')!.get!;
  const baseWriteHead = http2.Http2ServerResponse.prototype.writeHead as (this: Http2ServerResponse, status: number) => Http2ServerResponse;
  Object.defineProperties(H2Response.prototype, {
    writeHead: { value: writeHead(baseWriteHead), configurable: true, writable: true },
    // node's is true once the stream closed, reset by the client included: the pipeline reads a response closed
    // before it finished as the client leaving (499, the upstream request released).
    writableFinished: {
      get(this: H2Response) { return (baseFinished.call(this) as boolean) && this.writableEnded && (this.stream as ServerHttp2Stream).rstCode === 0; },
      configurable: true,
    },
    // node:http's `destroyed`: the stream is gone (reset by the client, or destroyed here).
    destroyed: { get(this: H2Response) { const s = this.stream as ServerHttp2Stream | undefined; return s === undefined || s.destroyed; }, configurable: true },
    // HTTP/2 has no reason phrase: node:http2 warns on every use; the pipeline only clears it.
    statusMessage: { get() { return ''; }, set() {}, configurable: true },
  });

  const made: H2Classes = { H2Request, H2Response: H2Response as unknown as typeof Http2ServerResponse };
  classes = made;
  return made;
}
