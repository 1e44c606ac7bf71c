import { ErrorCode, GatewayError } from '../sdk/index.ts';
import type { ErrorCodeValue } from '../sdk/index.ts';

const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT', 'ECONNABORTED']);

type Coded = { code?: string; message?: string; cause?: unknown };

/** The error (or cause, four deep) that carries the failure's code. */
function codedError(err: unknown): Coded | undefined {
  let e = err as Coded | undefined;
  for (let depth = 0; e && depth < 4; depth++) {
    if (typeof e.code === 'string' && e.code !== 'UND_ERR_ABORTED') return e;
    e = e.cause as Coded | undefined;
  }
  return err as Coded | undefined;
}

function codeOf(err: unknown): string | undefined {
  return codedError(err)?.code;
}

/** ` (why)` for the log: node:tls says which names the certificate carries, which one expired, and so on. */
function tlsReason(err: unknown, code: string): string {
  const message = codedError(err)?.message;
  return typeof message === 'string' && message !== '' && message !== code ? ` (${message.slice(0, 512)})` : '';
}

/**
 * Whether an upstream's status is one a client can read: RFC 9110 section 15 defines 100-599, and a 600, a 999 or a 42
 * is answered 502 as Envoy answers it. The lean HTTP/1.1 client's parser and the undici handlers (TLS and HTTP/2
 * upstreams) both ask this.
 */
export function isHttpStatus(code: number): boolean {
  return code >= 100 && code <= 599;
}

/** The failure of an attempt whose answer had a status outside 100-599: `upstreamFailure` makes it a 502. */
export class InvalidStatusError extends Error {
  /** As undici's and the lean client's parser errors read. */
  readonly code = 'HPE_INVALID';
  constructor(status: number) {
    super(`invalid status ${status} (outside 100-599)`);
  }
}

/** Whether a failed attempt may be retried: the request never reached the upstream's application. */
export function isRetryableFailure(err: unknown): boolean {
  if (err instanceof GatewayError) return err.code === ErrorCode.upstreamTimeout;
  const code = codeOf(err);
  return code !== undefined && (UNREACHABLE.has(code) || code === 'ECONNRESET' || code === 'UND_ERR_SOCKET');
}

/**
 * An upstream failure as the client sees it, and as the operator does: `message` never names the upstream (its
 * address is the operator's, as in Envoy's local replies); `logMessage`, which the access log records, does.
 */
export class UpstreamFailure extends GatewayError {
  readonly logMessage: string;
  constructor(status: number, type: string, message: string, code: ErrorCodeValue, logMessage: string) {
    super(status, type, message, code);
    this.logMessage = logMessage;
  }
}

/**
 * The code of a request body that stopped arriving from the client for the route's stream idle deadline while it was
 * sent upstream (before any answer): the client's failure, answered 408 as Envoy's stream idle timeout does.
 */
export const UPLOAD_STALLED = 'SWY_UPLOAD_STALLED';
const UPLOAD_STALLED_REPLY = new GatewayError(408, 'request_timeout', 'the request body stopped arriving (the stream idle deadline)', ErrorCode.requestTimeout);

/** A codeless failure's message may hold anything (an address, a path): only a plain code goes to the client. */
const PLAIN_CODE = /^[A-Za-z0-9_]{1,64}$/;

/**
 * Map a transport failure to the reply the client gets: 503 when the upstream cannot be reached, 504 on a
 * timeout, 502 when it answered badly or dropped the connection.
 */
export function upstreamFailure(err: unknown, origin: string, headersTimeoutMs = 0): GatewayError {
  if (err instanceof GatewayError) return err;
  const code = codeOf(err);
  if (code === UPLOAD_STALLED) return UPLOAD_STALLED_REPLY;
  if (code && UNREACHABLE.has(code)) {
    return new UpstreamFailure(503, 'upstream_unavailable', `upstream is unreachable: ${code}`, ErrorCode.upstreamUnavailable, `upstream ${origin} is unreachable: ${code}`);
  }
  if (code === 'UND_ERR_HEADERS_TIMEOUT' && headersTimeoutMs > 0) {
    const message = `did not answer within ${headersTimeoutMs}ms (the default deadline; a route \`timeout\` policy or \`config.defaultTimeouts\` changes it)`;
    return new UpstreamFailure(504, 'upstream_timeout', `upstream ${message}`, ErrorCode.upstreamTimeout, `upstream ${origin} ${message}`);
  }
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
    return new UpstreamFailure(504, 'upstream_timeout', 'upstream timed out', ErrorCode.upstreamTimeout, `upstream ${origin} timed out`);
  }
  if (code && (code.startsWith('ERR_TLS') || code.startsWith('CERT_') || code.includes('SELF_SIGNED') || code.startsWith('UNABLE_TO') || code === 'ERR_SSL_WRONG_VERSION_NUMBER' || code.startsWith('HOSTNAME') || code === 'ERR_TLS_CERT_ALTNAME_INVALID')) {
    return new UpstreamFailure(502, 'upstream_tls_error', `TLS connection to the upstream failed: ${code}`, ErrorCode.upstreamFailed, `TLS connection to ${origin} failed: ${code}${tlsReason(err, code)}`);
  }
  const detail = code ?? (err as Error)?.message ?? String(err);
  const told = code !== undefined && PLAIN_CODE.test(code) ? `upstream failed: ${code}` : 'upstream failed';
  return new UpstreamFailure(502, 'bad_gateway', told, ErrorCode.upstreamFailed, `upstream ${origin} failed: ${detail}`);
}

/** The 504 of a `timeout.backendRequestTimeout` that ran out (one per attempt). */
export function attemptTimeout(origin: string, timeoutMs: number): UpstreamFailure {
  return new UpstreamFailure(504, 'upstream_timeout', `upstream did not answer within ${timeoutMs}ms`, ErrorCode.upstreamTimeout, `upstream ${origin} did not answer within ${timeoutMs}ms`);
}

/** The errno-like code of a failure to reach the upstream (refused, DNS, connect timeout), else undefined. */
export function connectErrorCode(err: unknown): string | undefined {
  const code = codeOf(err);
  return code && UNREACHABLE.has(code) ? code : undefined;
}
