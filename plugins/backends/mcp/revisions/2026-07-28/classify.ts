/**
 * Which revision one POST belongs to, and the 2026-07-28 request checks (BEHAVIOUR §4.4): the body's `_meta` claim,
 * the standard headers (SEP-2243, SEP-2575). The rules follow the SDK v2 server's inbound validation ladder
 * (`@modelcontextprotocol/server`, `classifyInboundRequest` / `validateStandardRequestHeaders`), re-implemented here
 * because the server package is not a runtime dependency.
 */
import { RpcCode } from '../../jsonrpc.ts';
import type { RpcId, RpcMessage } from '../../jsonrpc.ts';
import { CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, Code20260728, MCP_NAME_SOURCE, PROTOCOL_VERSION_META_KEY, REV_2026_07_28, VERSIONS_2026_07_28, isAtLeast20260728, metaOf } from './protocol.ts';
import type { ClientEnvelope } from './protocol.ts';

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The revision a message's `_meta` envelope claims (present key = a claim, even with a bad value). */
function claimOf(m: RpcMessage): { claimed: boolean; version: string | undefined } {
  const meta = metaOf(m.params);
  if (!meta || !(PROTOCOL_VERSION_META_KEY in meta)) return { claimed: false, version: undefined };
  const v = meta[PROTOCOL_VERSION_META_KEY];
  return { claimed: true, version: typeof v === 'string' ? v : undefined };
}

/** A decision about one POST: an `initialize`-revision message, a 2026-07-28 one, or a rejection (HTTP status + JSON-RPC error). */
export type Classified =
  | { readonly kind: 'legacy' }
  | { readonly kind: '2026-07-28'; readonly message: RpcMessage; readonly client: ClientEnvelope | undefined }
  | { readonly kind: 'reject'; readonly status: number; readonly code: number; readonly message: string; readonly data?: unknown; readonly id: RpcId | null };

/** Strip optional whitespace around a header value (RFC 9110 §5.5). */
const ows = (v: string | undefined): string | undefined => (v === undefined ? undefined : v.replace(/^[ \t]+|[ \t]+$/g, ''));

const BASE64_PREFIX = '=?base64?';
const BASE64_SUFFIX = '?=';
const CANONICAL_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Decode an `Mcp-Name` value (`=?base64?...?=` wraps non-ASCII); undefined when the wrapping is invalid. */
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
  return reject(400, Code20260728.headerMismatch, `Bad Request: the request headers and body disagree: ${body}`, id, { mismatch: { header, body } });
}

export interface StandardHeaders {
  readonly protocolVersion: string | undefined;
  readonly method: string | undefined;
  readonly name: string | undefined;
}

/**
 * Classify one parsed POST body (BEHAVIOUR §4.4; the SDK v2 ladder): body-primary (a `_meta` protocol-version claim
 * of 2026-07-28 or later makes a request one of that revision), the `MCP-Protocol-Version` header as a cross-check; then, for those, the
 * supported-revision gate and the standard headers (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` <-> body).
 */
export function classify(messages: readonly RpcMessage[], batch: boolean, h: StandardHeaders): Classified {
  const headerVersion = ows(h.protocolVersion);
  const headerMethod = ows(h.method);
  const header2026 = headerVersion !== undefined && isAtLeast20260728(headerVersion);
  if (batch) {
    if (messages.some((m) => claimOf(m).claimed) || header2026) {
      return reject(400, RpcCode.invalidRequest, 'Bad Request: JSON-RPC batches may not contain requests for protocol revision 2026-07-28 or later', null);
    }
    return { kind: 'legacy' };
  }
  const m = messages[0]!;
  const id = m.id;
  if (m.method === undefined) {
    // A posted response: `initialize`-revision traffic (answers to server-to-client requests), never 2026-07-28.
    if (header2026) return reject(400, RpcCode.invalidRequest, 'Bad Request: JSON-RPC responses cannot be posted on protocol revision 2026-07-28', id);
    return { kind: 'legacy' };
  }
  const claim = claimOf(m);
  const isNotification = m.id === undefined || m.id === null;
  if (m.method === 'initialize' && !(claim.version !== undefined && isAtLeast20260728(claim.version))) {
    if (header2026) return mismatch(headerVersion, 'an initialize request (legacy handshake) was sent with a 2026-07-28 MCP-Protocol-Version header', id);
    return { kind: 'legacy' };
  }
  let version: string | undefined;
  if (claim.claimed) {
    if (claim.version === undefined) {
      return reject(400, RpcCode.invalidParams, `Invalid _meta envelope for protocol revision ${REV_2026_07_28}: ${PROTOCOL_VERSION_META_KEY}: expected a protocol version string`, id);
    }
    if (!isAtLeast20260728(claim.version)) return { kind: 'legacy' };
    if (headerVersion !== undefined && headerVersion !== claim.version) {
      return mismatch(headerVersion, `the body envelope names protocol version ${claim.version} but the MCP-Protocol-Version header names ${headerVersion}`, id);
    }
    version = claim.version;
  } else if (header2026) {
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
  if (!VERSIONS_2026_07_28.includes(version!)) {
    // The versions a 2026-07-28 request may name: what `server/discover` lists (older ones go through `initialize`).
    return reject(400, Code20260728.unsupportedVersion, `Unsupported protocol version: ${version} (supported: ${VERSIONS_2026_07_28.join(', ')})`, id, {
      supported: [...VERSIONS_2026_07_28],
      requested: version,
    });
  }
  if (isNotification) return { kind: '2026-07-28', message: m, client: undefined };

  // The envelope: protocol version (checked), client capabilities (required), client info (optional).
  const meta = metaOf(m.params)!;
  const caps = meta[CLIENT_CAPABILITIES_META_KEY];
  if (!(CLIENT_CAPABILITIES_META_KEY in meta)) {
    return reject(400, RpcCode.invalidParams, `Invalid _meta envelope for protocol revision ${REV_2026_07_28}: ${CLIENT_CAPABILITIES_META_KEY}: missing`, id, {
      envelope: { key: CLIENT_CAPABILITIES_META_KEY, problem: 'missing' },
    });
  }
  if (!isObject(caps)) {
    return reject(400, RpcCode.invalidParams, `Invalid _meta envelope for protocol revision ${REV_2026_07_28}: ${CLIENT_CAPABILITIES_META_KEY}: expected an object`, id, {
      envelope: { key: CLIENT_CAPABILITIES_META_KEY, problem: 'expected an object' },
    });
  }
  const info = meta[CLIENT_INFO_META_KEY];
  if (info !== undefined && !(isObject(info) && typeof info.name === 'string' && typeof info.version === 'string')) {
    return reject(400, RpcCode.invalidParams, `Invalid _meta envelope for protocol revision ${REV_2026_07_28}: ${CLIENT_INFO_META_KEY}: expected {name, version}`, id, {
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
  return { kind: '2026-07-28', message: m, client: { clientInfo: isObject(info) ? info : undefined, clientCapabilities: caps } };
}

/** True when an `MCP-Protocol-Version` header names 2026-07-28 or later (for GET/DELETE: the header alone decides). */
export const headerIs20260728 = (v: string | undefined): boolean => {
  const t = ows(v);
  return t !== undefined && isAtLeast20260728(t);
};