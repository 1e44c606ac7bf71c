// The OTel `error.type` of a failed LLM call (`gen_ai_client_operation_duration_seconds`, ADR 0129).

/** Codes of a provider that did not answer in time (undici's deadlines, a socket's). */
const TIMEOUT_CODES: ReadonlySet<unknown> = new Set(['UND_ERR_BODY_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT', 'ETIMEDOUT']);
/** Codes of a provider connection that closed before its answer ended (a stream cut mid-way, ADR 0135). */
const DISCONNECT_CODES: ReadonlySet<unknown> = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE', 'ERR_STREAM_PREMATURE_CLOSE']);

/** The HTTP status of an error named by its type (Anthropic's `type`, OpenAI's and the Responses API's `code`). */
const STATUS_OF_TYPE: Readonly<Record<string, number>> = {
  invalid_request_error: 400,
  authentication_error: 401,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  rate_limit_exceeded: 429,
  api_error: 500,
  server_error: 500,
  overloaded_error: 529,
};

/**
 * The `error.type` of an error a provider reported inside its stream (an error object in its API's shape): its
 * numeric `code` or `status` when that is an HTTP error status (OpenRouter, Gemini), else the status its `type` or
 * `code` name stands for (Anthropic's `overloaded_error`: 529), else `_OTHER`.
 */
export function streamErrorType(error: unknown): string {
  if (typeof error !== 'object' || error === null) return '_OTHER';
  const { code, status, type } = error as { code?: unknown; status?: unknown; type?: unknown };
  for (const v of [code, status]) if (typeof v === 'number' && Number.isInteger(v) && v >= 400 && v <= 599) return String(v);
  for (const v of [type, code]) if (typeof v === 'string' && Object.hasOwn(STATUS_OF_TYPE, v)) return String(STATUS_OF_TYPE[v]);
  return '_OTHER';
}

/**
 * OTel `error.type` of a failed call, from a bounded set: the provider's (or the gateway's) HTTP status, `timeout`,
 * `cancelled` (the client went away: the kernel's 499), `provider_disconnected` (the provider's connection closed
 * mid-answer), else `_OTHER` (an error's own text would make a series per message).
 */
export function errorType(error: unknown): string {
  if (typeof error === 'string') return /^[1-5]\d\d$/.test(error) ? error : '_OTHER';
  if (typeof error !== 'object' || error === null) return '_OTHER';
  const { status, code, name, type } = error as { status?: unknown; code?: unknown; name?: unknown; type?: unknown };
  // `request_timeout`: the route's deadline (`timeout.requestTimeout`) cut the call, the kernel's abort reason.
  if (TIMEOUT_CODES.has(code) || name === 'TimeoutError' || type === 'request_timeout') return 'timeout';
  if (DISCONNECT_CODES.has(code)) return 'provider_disconnected';
  if (status === 499) return 'cancelled';
  if (typeof status === 'number' && Number.isInteger(status) && status >= 100 && status <= 599) return String(status);
  return '_OTHER';
}
