import { jsonErrorReply } from 'switchyard/sdk';
import type { Exchange, Reply } from 'switchyard/sdk';
import { LLM_CLIENT_FORMAT } from './contract.ts';
import { anthropicErrorTypeOf } from './completions-messages/mapping.ts';
import { isObj } from './json.ts';
import { errorFamily } from './translate.ts';

/**
 * A gateway-made LLM error about the request (BEHAVIOUR.md §4.6 message, `failed to process LLM request: ...`), in
 * the client API's JSON error shape: the `ai` backend's `shapeError` re-shapes it like every gateway error.
 */
export function llmRequestError(status: number, detail: string): Reply {
  return jsonErrorReply(status, 'invalid_request', `failed to process LLM request: ${detail}`);
}

/** A gateway-made LLM error about the provider's answer: `failed to process LLM response: ...`, shaped the same way. */
export function llmResponseError(status: number, detail: string): Reply {
  return jsonErrorReply(status, 'invalid_response', `failed to process LLM response: ${detail}`);
}

/** The error shapes a client of an `ai` backend can expect. */
export type ClientErrorFamily = 'openai' | 'anthropic' | 'google';

/**
 * The client's error family: from the format the backend settled on, else (an error before the backend ran: auth,
 * rate limit) from what every SDK of the API sends: Gemini's `:generateContent`-style paths, Anthropic's
 * `/messages` path or `anthropic-version` header; anything else is an OpenAI client.
 */
export function clientErrorFamily(ex: Exchange): ClientErrorFamily {
  const format = ex.get(LLM_CLIENT_FORMAT);
  if (format !== undefined) {
    const family = errorFamily(format);
    if (family === 'openai' || family === 'anthropic' || family === 'google') return family;
  }
  const path = ex.path;
  if (path.endsWith(':generateContent') || path.endsWith(':streamGenerateContent') || path.endsWith(':countTokens')) return 'google';
  if (ex.headers['anthropic-version'] !== undefined || path.endsWith('/messages') || path.endsWith('/messages/count_tokens')) return 'anthropic';
  return 'openai';
}

/** `shapeError` of the `ai` backend: a gateway-made error reply re-written in the client API's error shape. */
export function shapeClientError(ex: Exchange, reply: Reply): void {
  const error = reply.error;
  if (error === undefined) return;
  // The vendor's own `type` for the status (what its SDK maps to a typed error), the gateway's message.
  reply.body = clientErrorBody(clientErrorFamily(ex), reply.status, { message: error.message });
  reply.headers['content-type'] = 'application/json';
  // A relayed denial (relayedErrorReply) may carry its service's encoding and length; the new body has neither.
  delete reply.headers['content-length'];
  delete reply.headers['content-encoding'];
}

/** Google's `status` string for an HTTP status (google.rpc.Code names). */
function googleStatus(status: number): string {
  if (status === 400 || status === 413) return 'INVALID_ARGUMENT';
  if (status === 401) return 'UNAUTHENTICATED';
  if (status === 403) return 'PERMISSION_DENIED';
  if (status === 404) return 'NOT_FOUND';
  if (status === 429) return 'RESOURCE_EXHAUSTED';
  if (status === 503) return 'UNAVAILABLE';
  if (status === 504) return 'DEADLINE_EXCEEDED';
  return status >= 500 ? 'INTERNAL' : 'FAILED_PRECONDITION';
}

/** The `type` and `message` of an error body in any provider's shape (OpenAI, Anthropic, AWS, Google). */
export function parseUpstreamError(text: string, headers?: Record<string, unknown>): { type?: string; message: string } {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return { message: text.trim() || 'upstream error' };
  }
  if (Array.isArray(v)) v = v[0]; // Google's compatibility API sometimes wraps the error in a list
  if (isObj(v)) {
    const e = isObj(v.error) ? v.error : v;
    const message = typeof e.message === 'string' ? e.message : typeof e.Message === 'string' ? e.Message : typeof v.message === 'string' ? v.message : text;
    let type = typeof e.type === 'string' ? e.type : typeof e.status === 'string' ? e.status : undefined;
    const awsType = headers?.['x-amzn-errortype'];
    if (type === undefined && typeof awsType === 'string') type = awsType.split(':')[0];
    return { type, message };
  }
  return { message: text.trim() || 'upstream error' };
}

/** Longest retry hint passed on as `Retry-After` (a day): a hint past it is not believable. */
const MAX_RETRY_HINT_S = 86_400;

/**
 * Google's retry hint in an error body (`error.details[]` of type `google.rpc.RetryInfo`, `retryDelay` a proto
 * Duration such as `"37s"` or `"0.5s"`) in whole seconds, rounded up; undefined when there is none. Gemini and
 * Vertex send it instead of a `Retry-After` header.
 */
export function googleRetryAfter(text: string): number | undefined {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (Array.isArray(v)) v = v[0];
  const details = isObj(v) && isObj(v.error) && Array.isArray(v.error.details) ? v.error.details : [];
  for (const d of details) {
    if (!isObj(d) || typeof d['@type'] !== 'string' || !d['@type'].endsWith('google.rpc.RetryInfo')) continue;
    const m = typeof d.retryDelay === 'string' ? /^(\d{1,12}(?:\.\d{1,9})?)s$/.exec(d.retryDelay) : null;
    const seconds = m ? Math.ceil(Number(m[1])) : undefined;
    return seconds !== undefined && seconds <= MAX_RETRY_HINT_S ? seconds : undefined;
  }
  return undefined;
}

/** An error body in the client's API shape. */
export function clientErrorBody(family: ClientErrorFamily, status: number, info: { type?: string; message: string }): string {
  if (family === 'google') return JSON.stringify({ error: { code: status, message: info.message, status: info.type ?? googleStatus(status) } });
  if (family === 'anthropic') return JSON.stringify({ type: 'error', error: { type: anthropicErrorTypeOf(info.type, status), message: info.message } });
  return JSON.stringify({ error: { message: info.message, type: info.type ?? openAiErrorType(status), param: null, code: null } });
}

/** OpenAI's error `type` for an HTTP status. */
export function openAiErrorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}
