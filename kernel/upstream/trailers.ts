// Response trailers relayed to HTTP/2 clients (ADR 0141): gRPC's status travels in them. Kept free of node:http2 so
// the forwarders can import it without loading that module for a cleartext-only config.

/** Set on a response that can send trailers (an HTTP/2 client's): called with the upstream's trailers. */
export const kTrailerSink = Symbol('switchyard.trailerSink');
/** Set on an HTTP/2 client's request that sent `te: trailers`: that header is forwarded (Envoy keeps it). */
export const kWantsTrailers = Symbol('switchyard.wantsTrailers');

/** Trailers as undici's clients hand them over: raw `[name, value, ...]` (HTTP/1.1) or node:http2's object. */
export type UpstreamTrailers = readonly (Buffer | string)[] | Readonly<Record<string, string | string[] | undefined>>;

/** On an answer's body stream (stream-answer.ts): the upstream's trailers, set before the stream ends. */
export const kBodyTrailers = Symbol('switchyard.bodyTrailers');

export interface TrailerBody {
  [kBodyTrailers]?: UpstreamTrailers | null;
}

export interface TrailerSink {
  [kTrailerSink]?: (trailers: UpstreamTrailers) => void;
}

/** Set on an HTTP/2 client's response by its trailer sink: the `grpc-status` the trailers carried. */
export const kGrpcStatus = Symbol('switchyard.grpcStatus');

/**
 * The gRPC media type of a request's or an answer's `Content-Type`, lower-cased and without parameters:
 * `application/grpc`, or one with a `+` suffix (`application/grpc+proto`), and gRPC-Web's (`application/grpc-web`,
 * `application/grpc-web-text`, with or without a suffix), whose trailers-only answer is the same head. Undefined for
 * any other (as Envoy, `application/grpcfoo` is not gRPC).
 */
export function grpcMediaType(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length < 16) return undefined;
  const semi = value.indexOf(';');
  const media = (semi === -1 ? value : value.slice(0, semi)).trim().toLowerCase();
  if (!media.startsWith('application/grpc')) return undefined;
  let rest = media.slice(16);
  if (rest.startsWith('-web')) {
    rest = rest.slice(4);
    if (rest.startsWith('-text')) rest = rest.slice(5);
  }
  return rest === '' || rest.charCodeAt(0) === 0x2b /* + */ ? media : undefined;
}

/** A gRPC status code as sent (`0`-`999`); anything else is no status (an upstream's value is not logged raw). */
const GRPC_STATUS = /^\d{1,3}$/;

/**
 * The gRPC status an HTTP/2 client's answer carried (`grpc.status` of the access log, BEHAVIOUR 6.1): from its
 * trailers, else from the head of a gRPC answer (trailers-only); undefined for any other answer, whose head is
 * looked at for its content type only.
 */
export function grpcStatusOf(res: { getHeader(name: string): unknown }): number | undefined {
  let value = (res as { [kGrpcStatus]?: unknown })[kGrpcStatus];
  if (value === undefined) {
    if (grpcMediaType(res.getHeader('content-type')) === undefined) return undefined;
    value = res.getHeader('grpc-status');
  }
  const text = Array.isArray(value) ? value[0] : value;
  return typeof text === 'string' && GRPC_STATUS.test(text) ? Number(text) : undefined;
}

/** Whether `res` sends trailers (an HTTP/2 client's response). */
export function takesTrailers(res: object): boolean {
  return (res as TrailerSink)[kTrailerSink] !== undefined;
}

/** Hand the upstream's trailers to `res` when it sends trailers (an HTTP/2 client's response); else they are dropped. */
export function relayTrailers(res: object, trailers: UpstreamTrailers | null | undefined): void {
  if (trailers == null) return;
  const sink = (res as TrailerSink)[kTrailerSink];
  if (sink !== undefined) sink.call(res, trailers);
}
