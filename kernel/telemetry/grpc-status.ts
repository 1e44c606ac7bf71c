// gRPC status codes as the telemetry names them (OTel RPC conventions): one table for the OTLP/gRPC exporter's error
// type and the SERVER span of a gRPC call (ADR 0178).

/** gRPC status names by code (`grpc.status[code]` without loading grpc-js). */
export const GRPC_STATUS_NAMES: readonly string[] = ['OK', 'CANCELLED', 'UNKNOWN', 'INVALID_ARGUMENT', 'DEADLINE_EXCEEDED', 'NOT_FOUND', 'ALREADY_EXISTS', 'PERMISSION_DENIED', 'RESOURCE_EXHAUSTED', 'FAILED_PRECONDITION', 'ABORTED', 'OUT_OF_RANGE', 'UNIMPLEMENTED', 'INTERNAL', 'UNAVAILABLE', 'DATA_LOSS', 'UNAUTHENTICATED'];

/**
 * Whether a gRPC SERVER span with this status is an ERROR (OTel's gRPC conventions): UNKNOWN, DEADLINE_EXCEEDED,
 * UNIMPLEMENTED, INTERNAL, UNAVAILABLE, DATA_LOSS. The other codes are the client's doing (a bad argument, a
 * refusal) and leave the status unset, as a 4xx does on an HTTP SERVER span.
 */
export function grpcServerError(code: number): boolean {
  return code === 2 || code === 4 || code === 12 || code === 13 || code === 14 || code === 15;
}
