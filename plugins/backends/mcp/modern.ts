/**
 * The 2026-07-28 protocol revision ("modern era") on the client side of the gateway: request classification and the
 * standard-header checks (SEP-2243, SEP-2575), result shaping (`resultType`, cache hints, `serverInfo` in `_meta`),
 * and the capability view a modern client gets. The rules follow the SDK v2 server's inbound validation ladder
 * (`@modelcontextprotocol/server`, `classifyInboundRequest` / `validateStandardRequestHeaders`), re-implemented here
 * because the server package is not a runtime dependency.
 */
import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  LOG_LEVEL_META_KEY,
  PROTOCOL_VERSION_META_KEY,
  SERVER_INFO_META_KEY,
  SUBSCRIPTION_ID_META_KEY,
  SUPPORTED_PROTOCOL_VERSIONS as LEGACY_VERSIONS,
} from '@modelcontextprotocol/core/internal';
import { RpcCode } from './jsonrpc.ts';
import type { RpcId, RpcMessage } from './jsonrpc.ts';

export { CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, LOG_LEVEL_META_KEY, PROTOCOL_VERSION_META_KEY, SERVER_INFO_META_KEY, SUBSCRIPTION_ID_META_KEY };

/** The first (and only) modern revision the gateway serves. */
export const MODERN_VERSION = '2026-07-28';
export const MODERN_VERSIONS: readonly string[] = [MODERN_VERSION];
/** Legacy revisions (the `initialize` handshake), oldest first as the SDK lists them. */
export const LEGACY_PROTOCOL_VERSIONS: readonly string[] = [...LEGACY_VERSIONS];
/** The newest legacy revision: what the gateway offers legacy targets it initializes for modern clients. */
export const LATEST_LEGACY_VERSION = [...LEGACY_VERSIONS].sort().at(-1)!;
/** Every revision the gateway speaks. */
export const ALL_VERSIONS: readonly string[] = [...LEGACY_VERSIONS, MODERN_VERSION];

/** Revision identifiers are ISO dates: anything from 2026-07-28 on belongs to the modern era. */
export const isModernVersion = (v: string): boolean => v >= MODERN_VERSION;

/** JSON-RPC codes of the 2026-07-28 revision. */
export const ModernCode = {
  headerMismatch: -32020,
  missingClientCapability: -32021,
  unsupportedVersion: -32022,
} as const;

/** Methods the 2026-07-28 revision removed: answered 404 + method-not-found (BEHAVIOUR §4.4). */
export const REMOVED_METHODS: ReadonlySet<string> = new Set(['initialize', 'ping', 'logging/setLevel', 'resources/subscribe', 'resources/unsubscribe']);

/** Which body field `Mcp-Name` mirrors, per method (SEP-2243, SEP-2663). */
export const MCP_NAME_SOURCE: Readonly<Record<string, string>> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
  'tasks/get': 'taskId',
  'tasks/update': 'taskId',
  'tasks/cancel': 'taskId',
};

/** Results that carry `ttlMs`/`cacheScope` on this revision. */
const CACHEABLE = new Set(['tools/list', 'prompts/list', 'resources/list', 'resources/templates/list', 'resources/read', 'server/discover']);

/** Methods whose result may be `input_required` (multi round-trip requests, SEP-2322). */
export const INPUT_REQUIRED_METHODS: ReadonlySet<string> = new Set(['tools/call', 'prompts/get', 'resources/read']);

/** The server-to-client requests of the legacy era that become embedded input requests, and the capability each needs. */
export const INPUT_REQUEST_CAPABILITY: Readonly<Record<string, string>> = {
  'sampling/createMessage': 'sampling',
  'elicitation/create': 'elicitation',
  'roots/list': 'roots',
};

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The `_meta` object of a message's params. */
export function metaOf(params: unknown): Json | undefined {
  if (!isObject(params)) return undefined;
  return isObject(params._meta) ? params._meta : undefined;
}

/** The revision a message's `_meta` envelope claims (present key = a claim, even with a bad value). */
function claimOf(m: RpcMessage): { claimed: boolean; version: string | undefined } {
  const meta = metaOf(m.params);
  if (!meta || !(PROTOCOL_VERSION_META_KEY in meta)) return { claimed: false, version: undefined };
  const v = meta[PROTOCOL_VERSION_META_KEY];
  return { claimed: true, version: typeof v === 'string' ? v : undefined };
}

/** What a modern client declares on each request. */
export interface ModernClient {
  readonly clientInfo: Json | undefined;
  readonly clientCapabilities: Json;
}

/** A decision about one POST: legacy traffic, a modern message, or a rejection (HTTP status + JSON-RPC error). */
export type Classified =
  | { readonly kind: 'legacy' }
  | { readonly kind: 'modern'; readonly message: RpcMessage; readonly client: ModernClient | undefined }
  | { readonly kind: 'reject'; readonly status: number; readonly code: number; readonly message: string; readonly data?: unknown; readonly id: RpcId | null };

/** Strip optional whitespace around a header value (RFC 9110 §5.5). */
const ows = (v: string | undefined): string | undefined => (v === undefined ? undefined : v.replace(/^[ \t]+|[ \t]+$/g, ''));

const BASE64_PREFIX = '=?base64?';
const BASE64_SUFFIX = '?=';
const CANONICAL_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Decode an `Mcp-Name` value (`=?base64?…?=` wraps non-ASCII); undefined when the wrapping is invalid. */
export function decodeHeaderValue(value: string): string | undefined {
  if (!(value.startsWith(BASE64_PREFIX) && value.endsWith(BASE64_SUFFIX))) return value;
  const b64 = value.slice(BASE64_PREFIX.length, value.length - BASE64_SUFFIX.length);
  if (!CANONICAL_BASE64.test(b64)) return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(b64, 'base64'));
  } catch {
    return undefined;
  }
}

/** Encode a value for `Mcp-Name` as the SDK does: plain when safe visible ASCII, else base64-wrapped. */
export function encodeHeaderValue(value: string): string {
  let safe = value === value.trim();
  for (let i = 0; safe && i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (!(c === 9 || (c >= 32 && c <= 126))) safe = false;
  }
  return safe ? value : `${BASE64_PREFIX}${Buffer.from(value, 'utf8').toString('base64')}${BASE64_SUFFIX}`;
}

function reject(status: number, code: number, message: string, id: RpcId | null | undefined, data?: unknown): Classified {
  return { kind: 'reject', status, code, message, data, id: id ?? null };
}

function mismatch(header: string, body: string, id: RpcId | null | undefined): Classified {
  return reject(400, ModernCode.headerMismatch, `Bad Request: the request headers and body disagree: ${body}`, id, { mismatch: { header, body } });
}

export interface ModernHeaders {
  readonly protocolVersion: string | undefined;
  readonly method: string | undefined;
  readonly name: string | undefined;
}

/**
 * Classify one parsed POST body (BEHAVIOUR §4.4; the SDK v2 ladder): body-primary (a `_meta` protocol-version claim
 * makes a request modern), the `MCP-Protocol-Version` header as a cross-check; then, for modern requests, the
 * supported-revision gate and the standard headers (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` ↔ body).
 */
export function classify(messages: readonly RpcMessage[], batch: boolean, h: ModernHeaders): Classified {
  const headerVersion = ows(h.protocolVersion);
  const headerMethod = ows(h.method);
  const headerModern = headerVersion !== undefined && isModernVersion(headerVersion);
  if (batch) {
    if (messages.some((m) => claimOf(m).claimed) || headerModern) {
      return reject(400, RpcCode.invalidRequest, 'Bad Request: JSON-RPC batches may not contain requests for protocol revision 2026-07-28 or later', null);
    }
    return { kind: 'legacy' };
  }
  const m = messages[0]!;
  const id = m.id;
  if (m.method === undefined) {
    // A posted response: legacy traffic (answers to server-to-client requests), never modern.
    if (headerModern) return reject(400, RpcCode.invalidRequest, 'Bad Request: JSON-RPC responses cannot be posted on protocol revision 2026-07-28', id);
    return { kind: 'legacy' };
  }
  const claim = claimOf(m);
  const isNotification = m.id === undefined || m.id === null;
  if (m.method === 'initialize' && !(claim.version !== undefined && isModernVersion(claim.version))) {
    if (headerModern) return mismatch(headerVersion, 'an initialize request (legacy handshake) was sent with a modern MCP-Protocol-Version header', id);
    return { kind: 'legacy' };
  }
  let version: string | undefined;
  if (claim.claimed) {
    if (claim.version === undefined) {
      return reject(400, RpcCode.invalidParams, `Invalid _meta envelope for protocol revision ${MODERN_VERSION}: ${PROTOCOL_VERSION_META_KEY}: expected a protocol version string`, id);
    }
    if (!isModernVersion(claim.version)) return { kind: 'legacy' };
    if (headerVersion !== undefined && headerVersion !== claim.version) {
      return mismatch(headerVersion, `the body envelope names protocol version ${claim.version} but the MCP-Protocol-Version header names ${headerVersion}`, id);
    }
    version = claim.version;
  } else if (headerModern) {
    if (isNotification) version = headerVersion;
    else {
      const meta = metaOf(m.params);
      const missing = meta === undefined ? ['_meta'] : [PROTOCOL_VERSION_META_KEY, ...(isObject(meta[CLIENT_CAPABILITIES_META_KEY]) ? [] : [CLIENT_CAPABILITIES_META_KEY])];
      return reject(
        400,
        RpcCode.invalidParams,
        `Invalid params: the MCP-Protocol-Version header names protocol revision ${headerVersion}, but the request is missing the required per-request envelope key(s): ${missing.join(', ')}`,
        id,
        { envelope: { missing } },
      );
    }
  } else return { kind: 'legacy' };

  if (headerMethod !== undefined && headerMethod !== m.method) {
    return mismatch(headerMethod, `the body names method ${m.method} but the Mcp-Method header names ${headerMethod}`, id);
  }
  if (!MODERN_VERSIONS.includes(version!)) {
    // The versions a modern request may name: what `server/discover` lists (legacy ones go through `initialize`).
    return reject(400, ModernCode.unsupportedVersion, `Unsupported protocol version: ${version} (supported: ${MODERN_VERSIONS.join(', ')})`, id, {
      supported: [...MODERN_VERSIONS],
      requested: version,
    });
  }
  if (isNotification) return { kind: 'modern', message: m, client: undefined };

  // The envelope: protocol version (checked), client capabilities (required), client info (optional).
  const meta = metaOf(m.params)!;
  const caps = meta[CLIENT_CAPABILITIES_META_KEY];
  if (!(CLIENT_CAPABILITIES_META_KEY in meta)) {
    return reject(400, RpcCode.invalidParams, `Invalid _meta envelope for protocol revision ${MODERN_VERSION}: ${CLIENT_CAPABILITIES_META_KEY}: missing`, id, {
      envelope: { key: CLIENT_CAPABILITIES_META_KEY, problem: 'missing' },
    });
  }
  if (!isObject(caps)) {
    return reject(400, RpcCode.invalidParams, `Invalid _meta envelope for protocol revision ${MODERN_VERSION}: ${CLIENT_CAPABILITIES_META_KEY}: expected an object`, id, {
      envelope: { key: CLIENT_CAPABILITIES_META_KEY, problem: 'expected an object' },
    });
  }
  const info = meta[CLIENT_INFO_META_KEY];
  if (info !== undefined && !(isObject(info) && typeof info.name === 'string' && typeof info.version === 'string')) {
    return reject(400, RpcCode.invalidParams, `Invalid _meta envelope for protocol revision ${MODERN_VERSION}: ${CLIENT_INFO_META_KEY}: expected {name, version}`, id, {
      envelope: { key: CLIENT_INFO_META_KEY, problem: 'expected an Implementation object' },
    });
  }

  // Standard headers (SEP-2243): present, and `Mcp-Name` equal to the body field it mirrors.
  if (headerVersion === undefined) {
    return mismatch('(missing)', `the body envelope names protocol version ${version} but the required MCP-Protocol-Version header is absent`, id);
  }
  if (headerMethod === undefined) return mismatch('(missing)', `the body names method ${m.method} but the required Mcp-Method header is absent`, id);
  const field = Object.hasOwn(MCP_NAME_SOURCE, m.method) ? MCP_NAME_SOURCE[m.method] : undefined;
  if (field !== undefined) {
    const raw = isObject(m.params) ? m.params[field] : undefined;
    const bodyValue = typeof raw === 'string' ? raw : undefined;
    const nameHeader = ows(h.name);
    if (nameHeader === undefined) {
      if (bodyValue !== undefined) return mismatch('(missing)', `the body carries params.${field}="${bodyValue}" but the required Mcp-Name header is absent`, id);
    } else {
      const decoded = decodeHeaderValue(nameHeader);
      if (decoded === undefined) return mismatch(nameHeader, 'the Mcp-Name header carries an invalid Base64 sentinel value', id);
      if (bodyValue !== undefined && decoded !== bodyValue) {
        return mismatch(nameHeader, `the body carries params.${field}="${bodyValue}" but the Mcp-Name header names "${decoded}"`, id);
      }
    }
  }
  return { kind: 'modern', message: m, client: { clientInfo: isObject(info) ? info : undefined, clientCapabilities: caps } };
}

/** True when the request's headers or body say it belongs to the modern era (for GET/DELETE: the header alone). */
export const headerIsModern = (v: string | undefined): boolean => {
  const t = ows(v);
  return t !== undefined && isModernVersion(t);
};

/**
 * Shape a result for a modern client: `resultType` (default `complete`), cache hints on cacheable results (always
 * `ttlMs: 0`, `cacheScope: private`: what a client sees can depend on per-request authorization, BEHAVIOUR §4.4), and
 * the answering server's identity in `_meta` when the result does not carry one (`override`: in any case; the
 * gateway's own identity when it aggregates several targets).
 */
export function shapeResult(method: string, result: Json, serverInfo: Json | undefined, override = false): Json {
  const out: Json = { ...result };
  if (typeof out.resultType !== 'string') out.resultType = 'complete';
  if (out.resultType === 'complete' && CACHEABLE.has(method)) {
    out.ttlMs = 0;
    out.cacheScope = 'private';
  } else if (out.resultType !== 'complete') {
    delete out.ttlMs;
    delete out.cacheScope;
  }
  if (serverInfo) {
    if (out._meta === undefined) out._meta = { [SERVER_INFO_META_KEY]: serverInfo };
    else if (isObject(out._meta) && (override || out._meta[SERVER_INFO_META_KEY] === undefined)) out._meta = { ...out._meta, [SERVER_INFO_META_KEY]: serverInfo };
  }
  return out;
}

/** Server capabilities of the 2026-07-28 schema, from a legacy `initialize` answer's. */
const MODERN_CAPABILITY_KEYS = ['experimental', 'logging', 'completions', 'prompts', 'resources', 'tools', 'extensions'];

/**
 * The capabilities a modern client is offered for a target (or the gateway) whose change notifications it cannot
 * receive: the 2026-07-28 revision delivers them on `subscriptions/listen`, which the gateway serves only by passing
 * it to a single modern target; so `listChanged` and `subscribe` are left out.
 */
export function modernCapabilities(caps: Json | undefined): Json {
  const out: Json = {};
  if (!caps) return out;
  for (const key of MODERN_CAPABILITY_KEYS) {
    const v = caps[key];
    if (v === undefined || v === null) continue;
    if (isObject(v) && (key === 'tools' || key === 'prompts' || key === 'resources')) {
      const { listChanged: _l, subscribe: _s, ...rest } = v;
      out[key] = rest;
    } else out[key] = v;
  }
  return out;
}

/** `_meta` without the per-request envelope keys (for legacy targets, which predate them). */
export function withoutEnvelope(meta: Json): Json | undefined {
  const out: Json = {};
  let n = 0;
  for (const [k, v] of Object.entries(meta)) {
    if (k === PROTOCOL_VERSION_META_KEY || k === CLIENT_INFO_META_KEY || k === CLIENT_CAPABILITIES_META_KEY || k === LOG_LEVEL_META_KEY) continue;
    out[k] = v;
    n++;
  }
  return n > 0 ? out : undefined;
}

const LOG_LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];

/** Whether a log message at `level` may go to a request that asked for `wanted` (unset: none, SEP-2575). */
export function logWanted(wanted: unknown, level: unknown): boolean {
  if (typeof wanted !== 'string') return false;
  const w = LOG_LEVELS.indexOf(wanted);
  const l = LOG_LEVELS.indexOf(typeof level === 'string' ? level : '');
  return w !== -1 && (l === -1 || l >= w);
}
