import { LOG_LEVELS } from '../../runtime.ts';

/**
 * The 2026-07-28 protocol revision's vocabulary: its versions and error codes, the methods it removed or changed,
 * result shaping (`resultType`, cache hints, `serverInfo` in `_meta`), the capability view its clients get, and the
 * per-request `_meta` envelope. Request classification is classify.ts.
 */

// The revision's `_meta` keys, as the MCP SDK names them (its client's public exports of the same names;
// test/mcp/protocol-constants.test.ts keeps them equal). Spelled out here: the SDK's v2 exports them only from
// `@modelcontextprotocol/core/internal` (not a public entry) or from the whole client, which the `mcp` backend
// would otherwise load for six strings.
export const PROTOCOL_VERSION_META_KEY = 'io.modelcontextprotocol/protocolVersion';
export const CLIENT_INFO_META_KEY = 'io.modelcontextprotocol/clientInfo';
export const CLIENT_CAPABILITIES_META_KEY = 'io.modelcontextprotocol/clientCapabilities';
export const LOG_LEVEL_META_KEY = 'io.modelcontextprotocol/logLevel';
export const SERVER_INFO_META_KEY = 'io.modelcontextprotocol/serverInfo';
export const SUBSCRIPTION_ID_META_KEY = 'io.modelcontextprotocol/subscriptionId';

/** The revision this folder implements. */
export const REV_2026_07_28 = '2026-07-28';
/** The per-request-envelope revisions the gateway serves (what `server/discover` lists): this one alone so far. */
export const VERSIONS_2026_07_28: readonly string[] = [REV_2026_07_28];

/** Revision identifiers are ISO dates: anything from 2026-07-28 on has the per-request envelope and no `initialize`. */
export const isAtLeast20260728 = (v: string): boolean => v >= REV_2026_07_28;

/** JSON-RPC codes of the 2026-07-28 revision. */
export const Code20260728 = {
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

/** The server-to-client requests of the `initialize` revisions that become embedded input requests, and the capability each needs. */
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

/** What a 2026-07-28 client declares on each request (its `_meta` envelope). */
export interface ClientEnvelope {
  readonly clientInfo: Json | undefined;
  readonly clientCapabilities: Json;
}

/**
 * Shape a result for a 2026-07-28 client: `resultType` (default `complete`), cache hints on cacheable results (always
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
const CAPABILITY_KEYS_20260728 = ['experimental', 'logging', 'completions', 'prompts', 'resources', 'tools', 'extensions'];

/**
 * The capabilities a 2026-07-28 client is offered for a target (or the gateway) whose change notifications it cannot
 * receive: the 2026-07-28 revision delivers them on `subscriptions/listen`, which the gateway serves only by passing
 * it to a single 2026-07-28 target; so `listChanged` and `subscribe` are left out.
 */
export function capabilities20260728(caps: Json | undefined): Json {
  const out: Json = {};
  if (!caps) return out;
  for (const key of CAPABILITY_KEYS_20260728) {
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

/** Whether a log message at `level` may go to a request that asked for `wanted` (unset: none, SEP-2575). */
export function logWanted(wanted: unknown, level: unknown): boolean {
  if (typeof wanted !== 'string') return false;
  const w = LOG_LEVELS.indexOf(wanted);
  const l = LOG_LEVELS.indexOf(typeof level === 'string' ? level : '');
  return w !== -1 && (l === -1 || l >= w);
}
