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
    const type = res.getHeader('content-type');
    if (typeof type !== 'string' || type.slice(0, 16).toLowerCase() !== 'application/grpc') return undefined;
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
