import { ErrorCode, GatewayError } from '../sdk/index.ts';

const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT', 'ECONNABORTED']);

function codeOf(err: unknown): string | undefined {
  let e = err as { code?: string; cause?: unknown } | undefined;
  for (let depth = 0; e && depth < 4; depth++) {
    if (typeof e.code === 'string' && e.code !== 'UND_ERR_ABORTED') return e.code;
    e = e.cause as typeof e;
  }
  return (err as { code?: string } | undefined)?.code;
}

/** Whether a failed attempt may be retried: the request never reached the upstream's application. */
export function isRetryableFailure(err: unknown): boolean {
  if (err instanceof GatewayError) return err.code === ErrorCode.upstreamTimeout;
  const code = codeOf(err);
  return code !== undefined && (UNREACHABLE.has(code) || code === 'ECONNRESET' || code === 'UND_ERR_SOCKET');
}

/**
 * Map a transport failure to the reply the client gets: 503 when the upstream cannot be reached, 504 on a
 * timeout, 502 when it answered badly or dropped the connection.
 */
export function upstreamFailure(err: unknown, origin: string, headersTimeoutMs = 0): GatewayError {
  if (err instanceof GatewayError) return err;
  const code = codeOf(err);
  const detail = (err as Error)?.message ?? String(err);
  if (code && UNREACHABLE.has(code)) {
    return new GatewayError(503, 'upstream_unavailable', `upstream ${origin} is unreachable: ${code}`, ErrorCode.upstreamUnavailable);
  }
  if (code === 'UND_ERR_HEADERS_TIMEOUT' && headersTimeoutMs > 0) {
    return new GatewayError(
      504,
      'upstream_timeout',
      `upstream ${origin} did not answer within ${headersTimeoutMs}ms (the default deadline; a route \`timeout\` policy or \`config.defaultTimeouts\` changes it)`,
      ErrorCode.upstreamTimeout,
    );
  }
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
    return new GatewayError(504, 'upstream_timeout', `upstream ${origin} timed out`, ErrorCode.upstreamTimeout);
  }
  if (code && (code.startsWith('ERR_TLS') || code.startsWith('CERT_') || code.includes('SELF_SIGNED') || code.startsWith('UNABLE_TO') || code === 'ERR_SSL_WRONG_VERSION_NUMBER' || code.startsWith('HOSTNAME') || code === 'ERR_TLS_CERT_ALTNAME_INVALID')) {
    return new GatewayError(502, 'upstream_tls_error', `TLS connection to ${origin} failed: ${code}`, ErrorCode.upstreamFailed);
  }
  return new GatewayError(502, 'bad_gateway', `upstream ${origin} failed: ${code ?? detail}`, ErrorCode.upstreamFailed);
}

/** The errno-like code of a failure to reach the upstream (refused, DNS, connect timeout), else undefined. */
export function connectErrorCode(err: unknown): string | undefined {
  const code = codeOf(err);
  return code && UNREACHABLE.has(code) ? code : undefined;
}
