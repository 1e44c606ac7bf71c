import type { LlmProviderInstance, LlmRouteType, LlmWireFormat } from './contract.ts';

/** Request headers as providers see them (lower-case names). */
export type LlmHeaders = Record<string, string | string[] | undefined>;

/**
 * Browser-only request headers a provider must not see: a browser client's CORS and fetch metadata (the reference
 * strips them for Anthropic, which otherwise demands its "direct browser access" opt-in header).
 */
export function stripBrowserHeaders(h: LlmHeaders): void {
  for (const name in h) {
    if (name.startsWith('sec-fetch-') || name === 'origin' || name === 'referer' || name.startsWith('access-control-request-')) delete h[name];
  }
}

/** Headers in which the providers' APIs take a credential (Azure's `api-key`, Anthropic's, Google's). */
export const PROVIDER_KEY_HEADERS: readonly string[] = Object.freeze(['authorization', 'api-key', 'x-api-key', 'x-goog-api-key']);

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
export function bearerToken(h: LlmHeaders): string | undefined {
  const v = h.authorization;
  const value = Array.isArray(v) ? v[0] : v;
  if (!value) return undefined;
  const m = /^Bearer\s+(.+)$/i.exec(value.trim());
  return m ? m[1]!.trim() : undefined;
}

/**
 * Header conventions of an OpenAI-style provider: browser headers stripped, and an Anthropic SDK client's key
 * (`x-api-key`, when no `Authorization` is present) sent as `Authorization: Bearer`, Anthropic headers dropped.
 */
export function openAiHeaders(h: LlmHeaders): void {
  stripBrowserHeaders(h);
  keyHeaderToBearer(h, 'x-api-key');
  delete h['anthropic-version'];
  delete h['anthropic-beta'];
}

/** A key sent in header `name` moved to `Authorization: Bearer` (an `Authorization` already there is kept). */
export function keyHeaderToBearer(h: LlmHeaders, name: string): void {
  const key = h[name];
  if (key === undefined) return;
  if (h.authorization === undefined) h.authorization = `Bearer ${Array.isArray(key) ? key[0] : key}`;
  delete h[name];
}

/** True for the wire formats of Gemini's native API (`generateContent`, `streamGenerateContent`, `countTokens`). */
export function isGeminiNative(format: LlmWireFormat | undefined): format is 'geminiNative' | 'geminiCountTokens' {
  return format === 'geminiNative' || format === 'geminiCountTokens';
}

/**
 * Google API keys on Gemini's native endpoints: a key sent as `Authorization: Bearer AIza...` (what an OpenAI SDK or
 * `backendAuth.key` sends) moves to `x-goog-api-key`, since native endpoints take only OAuth tokens as Bearer
 * credentials (BEHAVIOUR.md §2.8). Other Bearer tokens (Google access tokens) stay.
 * The Bearer credential wins over an `x-goog-api-key` already there: per attempt it is the one `backendAuth` set,
 * and a client's key sent beside the gateway's would be the one Google uses.
 */
export function googleApiKeyHeader(h: LlmHeaders): void {
  const token = bearerToken(h);
  if (token === undefined) return;
  if (!token.startsWith('AIza')) return googleTokenOnly(h);
  h['x-goog-api-key'] = token;
  delete h.authorization;
}

/** Where a provider's clients may send their key in the query, and the header it belongs in. */
export interface QueryKey {
  readonly param: string;
  readonly header: string;
}

/** Google's `?key=` (as its REST examples long did): the `x-goog-api-key` header. */
export const GOOGLE_QUERY_KEY: QueryKey = Object.freeze({ param: 'key', header: 'x-goog-api-key' });

/**
 * A client's key sent in the query moved to its header (unless one is there); returns the query without it: a key
 * is kept out of URLs, and the header is where the provider's conventions (and a `backendAuth` key set per attempt)
 * replace it.
 */
export function queryKeyToHeader(h: LlmHeaders, query: string, key: QueryKey): string {
  if (!query.includes(`${key.param}=`)) return query;
  const params = new URLSearchParams(query);
  const value = params.get(key.param);
  if (value === null) return query;
  if (value && h[key.header] === undefined) h[key.header] = value;
  params.delete(key.param);
  const rest = params.toString();
  return rest ? `?${rest}` : '';
}

/** A Google access token (a Bearer credential that is no API key) is the request's only credential. */
export function googleTokenOnly(h: LlmHeaders): void {
  const token = bearerToken(h);
  if (token !== undefined && !token.startsWith('AIza')) delete h['x-goog-api-key'];
}

/** Paths of the OpenAI API (also Gemini's and Vertex's OpenAI-compatible surfaces, under their own prefix). */
export function openAiPath(prefix: string, format: LlmWireFormat): string {
  switch (format) {
    case 'responses':
      return `${prefix}/responses`;
    case 'embeddings':
      return `${prefix}/embeddings`;
    default:
      return `${prefix}/chat/completions`;
  }
}

/** Wire formats of a provider that speaks OpenAI Chat Completions (and maybe more): Messages (and Responses, when not native) clients are translated. */
export function openAiWire(native: readonly LlmWireFormat[]): (client: LlmRouteType) => LlmWireFormat | undefined {
  return (client) => {
    if (client === 'completions' || client === 'messages') return 'completions';
    if ((client === 'responses' || client === 'embeddings') && native.includes(client)) return client;
    // Responses clients of an API without it: through Chat Completions.
    if (client === 'responses') return 'completions';
    return undefined;
  };
}

/** Freeze a provider instance (compiled once per load, shared by every request). */
export function provider(instance: LlmProviderInstance): LlmProviderInstance {
  return Object.freeze(instance);
}
