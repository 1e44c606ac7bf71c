/**
 * Agent-card rewriting (BEHAVIOUR.md §4.5): the card an agent serves names its own URLs; through the gateway the
 * card must name the gateway's, or clients would call the agent directly.
 */
import { agentCardBase, plainSegment } from './classify.ts';

/** Where the client asked for the card, and where the gateway fetched it. */
export interface CardRequest {
  /** `scheme://host[:port]` as the client reached the gateway (`Exchange.externalOrigin`: forwarding headers only from trusted proxies). */
  readonly origin: string;
  /** The path the client asked for, before any rewrite, without the query. */
  readonly clientPath: string;
  /** The path the gateway sent upstream, after rewrites. */
  readonly upstreamPath: string;
}

/** The card cannot be rewritten; the message is the reply's (`processing failed: ...`). */
export class AgentCardError extends Error {
  override readonly name = 'AgentCardError';
}

/** Strip `prefix` from `path` at a segment boundary: the rest (`''` or starting with `/`), or undefined. */
export function stripPathPrefix(path: string, prefix: string): string | undefined {
  const p = prefix.replace(/\/+$/, '');
  if (p === '') return path;
  if (path === p) return '';
  return path.startsWith(p) && path.charCodeAt(p.length) === 47 /* / */ ? path.slice(p.length) : undefined;
}

/** `prefix` and `rest` with exactly one `/` at the join; `/` when both are empty. */
export function joinPath(prefix: string, rest: string): string {
  const p = prefix.replace(/\/+$/, '');
  const r = rest.replace(/^\/+/, '');
  if (r === '') return p === '' ? '/' : p;
  return `${p}/${r}`;
}

/**
 * How the gateway maps client paths to upstream paths, read off the card request itself: the longest common
 * tail of segments of the two paths is what the rewrite kept, so the heads are the prefixes it swapped
 * (`/agents/echo/.well-known/agent-card.json` -> `/.well-known/agent-card.json` gives `/agents/echo` <-> ``).
 * Without a rewrite both heads are empty and the mapping is the identity.
 */
export function pathMapping(clientPath: string, upstreamPath: string): { readonly clientPrefix: string; readonly upstreamPrefix: string } {
  const a = clientPath.split('/');
  const b = upstreamPath.split('/');
  let i = a.length - 1;
  let j = b.length - 1;
  // Index 0 is the empty segment before the leading `/`: never part of the common tail. The client's path is as it
  // sent it, the upstream one decoded as the gateway routes it (`%2e` is `.`).
  while (i > 0 && j > 0 && plainSegment(a[i]!) === b[j]) {
    i--;
    j--;
  }
  return { clientPrefix: a.slice(0, i + 1).join('/'), upstreamPrefix: b.slice(0, j + 1).join('/') };
}

/** Rewrites the URLs of one card. Built per card request. */
class CardUrls {
  /** `origin` + the client's card path without the well-known suffix: where clients reach the agent. */
  readonly gatewayBase: string;
  private readonly origin: string;
  private readonly basePath: string;
  private readonly upstreamBase: string;
  private readonly clientPrefix: string;
  private readonly upstreamPrefix: string;

  constructor(request: CardRequest) {
    const mapping = pathMapping(request.clientPath, request.upstreamPath);
    this.clientPrefix = mapping.clientPrefix;
    this.upstreamPrefix = mapping.upstreamPrefix;
    this.origin = request.origin;
    // An extended card comes from an A2A endpoint, not a well-known path: its base is what the rewrite swapped.
    this.basePath = agentCardBase(request.clientPath) ?? mapping.clientPrefix;
    this.gatewayBase = request.origin + this.basePath;
    this.upstreamBase = agentCardBase(request.upstreamPath) ?? mapping.upstreamPrefix;
  }

  /** The gateway path that reaches upstream `path`: the rewrite inverted, or undefined when it cannot reach it. */
  private gatewayPath(path: string): string | undefined {
    const rest = stripPathPrefix(path, this.upstreamPrefix);
    return rest === undefined ? undefined : joinPath(this.clientPrefix, rest);
  }

  /**
   * A2A v1.0 interface URL: gateway origin + the interface path mapped back through the rewrite (relative to
   * the agent's base, segment-aware). A path the rewrite cannot produce is appended to the gateway base. URLs
   * that are not http(s) (a gRPC `host:port`) are left alone.
   */
  interfaceUrl(url: string): string {
    const parsed = httpUrl(url);
    if (!parsed) return url;
    const path = this.gatewayPath(parsed.pathname) ?? joinPath(this.basePath, parsed.pathname);
    return this.origin + path + parsed.search;
  }

  /**
   * A2A v0.3 `url`: the gateway base. When the agent's URL lies below its card's base (`.../a2a/jsonrpc` next to
   * `/.well-known/agent-card.json`), the part below the base is kept so the endpoint stays the same one.
   */
  legacyUrl(url: unknown): string {
    const parsed = typeof url === 'string' ? httpUrl(url) : undefined;
    if (!parsed) return this.gatewayBase;
    const below = stripPathPrefix(parsed.pathname, this.upstreamBase);
    if (below === undefined || below === '' || below === '/') return this.gatewayBase;
    return this.origin + (this.gatewayPath(parsed.pathname) ?? joinPath(this.basePath, below)) + parsed.search;
  }
}

function httpUrl(value: string): URL | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  return url.protocol === 'http:' || url.protocol === 'https:' ? url : undefined;
}

/**
 * A gRPC interface (v1.0 `protocolBinding`, v0.3 `transport`): a gRPC call's path is its service's, not below the
 * card's, so the card's route gives no gateway address for it (a gRPC route, if any, is the operator's own); it is
 * left as the agent wrote it, like a `host:port` URL.
 */
function isGrpc(binding: unknown): boolean {
  return typeof binding === 'string' && binding.toUpperCase() === 'GRPC';
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Rewrite a parsed agent card in place: every `supportedInterfaces[].url` (A2A v1.0) and the top-level `url` with
 * its `additionalInterfaces[].url` (A2A v0.3). A card with neither field is an error.
 */
export function rewriteAgentCard(card: unknown, request: CardRequest): Record<string, unknown> {
  if (!isObject(card)) throw new AgentCardError("processing failed: agent card missing URL (no 'url' or 'supportedInterfaces' field)");
  const urls = new CardUrls(request);
  // ProtoJSON parsers (a2a-js's included) take a v1.0 field under its proto name too: `supported_interfaces`.
  const interfaces = card.supportedInterfaces ?? card.supported_interfaces;
  const hasLegacyUrl = typeof card.url === 'string';
  if (interfaces === undefined && !hasLegacyUrl) {
    throw new AgentCardError("processing failed: agent card missing URL (no 'url' or 'supportedInterfaces' field)");
  }
  // The origins the agent serves its HTTP interfaces on: its other URLs there (icon, docs, OAuth) name it too.
  const agentOrigins = new Set<string>();
  const note = (url: string): void => {
    const parsed = httpUrl(url);
    if (parsed) agentOrigins.add(parsed.origin);
  };
  if (interfaces !== undefined) {
    if (!Array.isArray(interfaces)) throw new AgentCardError('processing failed: agent card supportedInterfaces is not an array');
    for (const entry of interfaces) {
      if (isObject(entry) && typeof entry.url === 'string' && !isGrpc(entry.protocolBinding ?? entry.protocol_binding)) {
        note(entry.url);
        entry.url = urls.interfaceUrl(entry.url);
      }
    }
  }
  if (hasLegacyUrl) {
    // The top-level url serves the preferred transport.
    if (!isGrpc(card.preferredTransport)) {
      note(card.url as string);
      card.url = urls.legacyUrl(card.url);
    }
    const additional = card.additionalInterfaces;
    if (Array.isArray(additional)) {
      for (const entry of additional) {
        if (isObject(entry) && typeof entry.url === 'string' && !isGrpc(entry.transport)) {
          note(entry.url);
          entry.url = urls.legacyUrl(entry.url);
        }
      }
    }
  }
  rewriteOtherUrls(card, agentOrigins, urls);
  return card;
}

/** Card fields done above, and the JWS signatures, which cover the agent's bytes: not walked. */
const WALKED_APART: ReadonlySet<string> = new Set(['url', 'supportedInterfaces', 'supported_interfaces', 'additionalInterfaces', 'signatures']);

/**
 * Every other URL field of the card (`iconUrl`, `documentationUrl`, `provider.url`, the security schemes'
 * `tokenUrl`, `openIdConnectUrl`, ...: any key ending in `url`) on one of the agent's own origins is mapped through
 * the rewrite like an interface, so the card gives clients no internal address. URLs on other origins (an identity
 * provider), free text and extension `uri`s (identifiers clients match, not addresses) are the agent's own.
 * Iterative: a card may nest deeper than the stack.
 */
function rewriteOtherUrls(card: Record<string, unknown>, agentOrigins: ReadonlySet<string>, urls: CardUrls): void {
  if (agentOrigins.size === 0) return;
  const stack: unknown[] = [card];
  let node: unknown;
  while ((node = stack.pop()) !== undefined) {
    if (Array.isArray(node)) {
      for (const item of node) if (typeof item === 'object' && item !== null) stack.push(item);
      continue;
    }
    if (!isObject(node)) continue;
    for (const [key, value] of Object.entries(node)) {
      if (node === card && WALKED_APART.has(key)) continue;
      if (typeof value === 'string') {
        if (/url$/i.test(key) && agentOrigins.has(httpUrl(value)?.origin ?? '')) node[key] = urls.interfaceUrl(value);
      } else if (typeof value === 'object' && value !== null) {
        stack.push(value);
      }
    }
  }
}

/**
 * Parse, rewrite and serialise a card body; throws AgentCardError with the reply message. `inResult`: the body is a
 * JSON-RPC answer whose `result` is the card (an extended card); an answer without `result` (an error) is left
 * alone (undefined).
 */
export function rewriteAgentCardBody(body: Buffer, request: CardRequest, seen?: (card: Record<string, unknown>) => void, inResult = false): string | undefined {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    throw new AgentCardError('processing failed: agent card invalid JSON');
  }
  if (inResult) {
    if (!isObject(value) || value.result === undefined) return undefined;
    value.result = rewriteAgentCard(value.result, request);
    return serialise(value);
  }
  const rewritten = rewriteAgentCard(value, request);
  seen?.(rewritten);
  return serialise(rewritten);
}

/** Whether a parsed value has an agent card's shape: v1.0 `supportedInterfaces` (or `supported_interfaces`), or a v0.3 `url` beside `skills`. */
function isCardShaped(value: unknown): value is Record<string, unknown> {
  return isObject(value) && (Array.isArray(value.supportedInterfaces ?? value.supported_interfaces) || (typeof value.url === 'string' && Array.isArray(value.skills)));
}

/**
 * The answer to a call the gateway could not name (a body it could not read as JSON, or too large to read) when it
 * carries an agent card anyway, bare or as a JSON-RPC `result`: rewritten. Undefined when it is no card (not JSON,
 * or another answer), which then passes unchanged.
 */
export function rewriteCardIfAny(body: Buffer, request: CardRequest): string | undefined {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
  if (isCardShaped(value)) return serialise(rewriteAgentCard(value, request));
  if (!isObject(value) || !isCardShaped(value.result)) return undefined;
  value.result = rewriteAgentCard(value.result, request);
  return serialise(value);
}

/** JSON text of a parsed card: JSON.parse takes any depth, JSON.stringify recurses and can run out of stack. */
function serialise(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch {
    throw new AgentCardError('processing failed: agent card nested too deeply');
  }
}
