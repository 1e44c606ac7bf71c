// The request side's small helpers: the target path, passthrough headers, token reservations, the usage option, the
// client's output cap.
import type { Exchange, LlmCallQuote, LlmTokenLimiter, Reply } from 'switchyard/sdk';
import { llmTokenLimiters } from 'switchyard/sdk';
import { estimatePromptTokens } from '../../lib/llm/estimate.ts';
import type { Obj } from '../../lib/llm/json.ts';
import type { LlmProviderInstance, LlmWireFormat } from '../../lib/llm/contract.ts';
import { queryKeyToHeader } from '../../lib/llm/provider-kit.ts';
import { takeSubprotocolKey } from '../../lib/credentials/credentials.ts';

/** Request bodies are read whole (BEHAVIOUR.md §8.3: 2 MiB, 413 beyond), before and after decoding. */
export const REQUEST_LIMIT = 2 * 1024 * 1024;
/** Longest model name a request may give (provider ids, Bedrock ARNs and Vertex paths are well under it). */
export const MAX_MODEL_NAME = 1024;

export function splitPath(pathAndQuery: string): { path: string; query: string } {
  const q = pathAndQuery.indexOf('?');
  return q === -1 ? { path: pathAndQuery, query: '' } : { path: pathAndQuery.slice(0, q), query: pathAndQuery.slice(q) };
}

/**
 * The request's headers made the provider's, on every kind of call (translated, same-format, passthrough, WebSocket):
 * the client's cookies were presented to the gateway's domain and are not the provider's (ADR 0195), so they are left
 * out unless a `requestHeaderModifier` sets the header (`withholdCookie` false); then the provider's key conventions.
 * A browser's key in the WebSocket subprotocol that no gateway policy read (`apiKey` and `virtualKeys` take it out) is
 * the client's own provider key: it goes where a key goes, never as a subprotocol the provider may echo or log.
 */
export function providerHeaders(provider: LlmProviderInstance, headers: Exchange['headers'], format: LlmWireFormat | undefined, withholdCookie: boolean): void {
  // Blanked, not deleted, as the kernel withholds credentials (a delete slows every later walk of the headers).
  if (withholdCookie && headers.cookie !== undefined) headers.cookie = undefined;
  if (headers['sec-websocket-protocol'] !== undefined) {
    const key = takeSubprotocolKey(headers);
    if (key !== undefined && headers.authorization === undefined) headers.authorization = `Bearer ${key}`;
  }
  provider.prepareHeaders(headers, format);
}

/**
 * A passthrough (or WebSocket) request's headers: those of the API its path names, a key the client put in the query
 * moved to its header first (ADR 0157). The format found, for the per-attempt conventions.
 */
export function passthroughHeaders(provider: LlmProviderInstance, ex: Exchange, withholdCookie: boolean): LlmWireFormat | undefined {
  const format = provider.passthroughFormat?.(ex.path);
  if (provider.queryKey) ex.query = queryKeyToHeader(ex.headers, ex.query, provider.queryKey);
  providerHeaders(provider, ex.headers, format, withholdCookie);
  return format;
}

/**
 * Token rate limits on the route (`llmTokenLimiters`, set by their policies): the prompt estimate, computed only
 * then, is reserved by each in order before the provider is called; the first refusal is the answer.
 */
export function reserveTokens(ex: Exchange, body: Obj | undefined, quote: LlmCallQuote, tokens?: number): Reply | undefined | Promise<Reply | undefined> {
  const limiters = ex.get(llmTokenLimiters);
  if (!limiters) return undefined;
  // `tokens`: a figure the caller knows instead (a token count reserves none).
  const estimate = tokens ?? (body ? estimatePromptTokens(body) : 0);
  return firstRefusal(limiters, 0, (limiter) => limiter.reserve(ex, estimate, quote));
}

/**
 * `ask` of each limiter from `i` on, in order (a reservation, a realtime session's charge): synchronous while they
 * answer at once (a SQLite-backed virtual key, a local bucket), so such a route makes no promise and waits no
 * microtask here; from the first that answers later, async. The first refusal is the answer.
 */
export function firstRefusal(limiters: readonly LlmTokenLimiter[], i: number, ask: (limiter: LlmTokenLimiter) => Reply | undefined | Promise<Reply | undefined>): Reply | undefined | Promise<Reply | undefined> {
  for (; i < limiters.length; i++) {
    let refused: Reply | undefined | Promise<Reply | undefined>;
    try {
      refused = ask(limiters[i]!);
    } catch (err) {
      // As when every limiter was awaited: a failing store is the request's rejection, not a throw out of dispatch.
      return Promise.reject(err);
    }
    if (refused instanceof Promise) {
      const next = i + 1;
      return refused.then((r) => r ?? firstRefusal(limiters, next, ask));
    }
    if (refused) return refused;
  }
  return undefined;
}

const USAGE_OPTION = Buffer.from('"stream_options":{"include_usage":true}');

/**
 * A JSON object text (one that parsed) with `stream_options.include_usage` as its first member: copied once into a
 * buffer of its final size (no part list, no views of the client's bytes).
 */
export function withUsageOption(raw: Buffer): Buffer {
  const open = raw.indexOf(0x7b);
  let next = open + 1;
  while (raw[next] === 0x20 || raw[next] === 0x0a || raw[next] === 0x0d || raw[next] === 0x09) next++;
  const comma = raw[next] !== 0x7d ? 1 : 0;
  const out = Buffer.allocUnsafe(raw.length + USAGE_OPTION.length + comma);
  let at = raw.copy(out, 0, 0, open + 1);
  at += USAGE_OPTION.copy(out, at);
  if (comma) out[at++] = 0x2c;
  raw.copy(out, at, open + 1);
  return out;
}
