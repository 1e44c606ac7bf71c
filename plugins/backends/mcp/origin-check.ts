// DNS-rebinding protection of the MCP front (ADR 0010): the `Origin` header of browser requests is checked before
// anything else; requests without one (every non-browser client) pass.
import type { Exchange, Reply } from 'switchyard/sdk';
import { CORS_ALLOWED_ORIGIN } from '../../lib/cors/allowed-origin.ts';
import { TRANSPORT_ERROR, rpcReply } from './http-util.ts';

const DEFAULT_PORT: Record<string, string> = { http: '80', https: '443', ws: '80', wss: '443' };

interface ParsedOrigin {
  readonly scheme: string;
  /** Lower case, IPv6 without brackets. */
  readonly host: string;
  readonly port: string;
}

const unbracket = (host: string): string => (host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host);

/** `scheme://host[:port]` (what browsers send), else undefined (`null`, opaque or malformed origins). */
export function parseOrigin(text: string): ParsedOrigin | undefined {
  const m = /^([a-z][a-z0-9+.-]*):\/\/(\[[0-9a-f:.]+\]|[^/:[\]@?#\s]+)(?::(\d{1,5}))?\/?$/i.exec(text.trim());
  if (!m) return undefined;
  const scheme = m[1]!.toLowerCase();
  const port = m[3] ?? DEFAULT_PORT[scheme] ?? '';
  return { scheme, host: unbracket(m[2]!.toLowerCase()), port: port.replace(/^0+(?=\d)/, '') };
}

/** `localhost`, `*.localhost` (RFC 6761: browsers never resolve them elsewhere), 127.0.0.0/8, `::1`. */
export function isLoopbackName(host: string): boolean {
  const h = unbracket(host.toLowerCase()).replace(/\.$/, '');
  if (h === 'localhost' || h.endsWith('.localhost') || h === '::1' || h === '0:0:0:0:0:0:0:1') return true;
  const v4 = h.startsWith('::ffff:') ? h.slice(7) : h;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4);
}

function isLoopbackAddress(address: string | undefined): boolean {
  return address !== undefined && isLoopbackName(address);
}

/** One `allowedOrigins` entry: `*`, an exact origin, or an http(s) origin with `*` globs in the host. */
function entryTest(entry: string): (origin: string, parsed: ParsedOrigin | undefined) => boolean {
  if (entry === '*') return () => true;
  const pattern = parseOrigin(entry.replace(/\*/g, 'wildcard-placeholder'));
  if (!pattern) {
    const exact = entry.trim().toLowerCase();
    return (origin) => origin.trim().toLowerCase() === exact;
  }
  const host = new RegExp(
    `^${pattern.host
      .split('wildcard-placeholder')
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('[^/:]*')}$`,
  );
  return (_origin, parsed) => parsed !== undefined && parsed.scheme === pattern.scheme && parsed.port === pattern.port && host.test(parsed.host);
}

/** Why a request's Origin was refused (for the access log), or undefined when it may go on. */
export type OriginVerdict = undefined | 'not-allowed' | 'malformed' | 'cross-origin' | 'rebinding';

/**
 * The Origin check of one `mcp` backend, compiled once per config load from its `allowedOrigins`.
 *
 * - No `Origin` header: allowed (non-browser clients; browsers send one on every POST).
 * - The origin is in `allowedOrigins` (`*` = any), or the route's `cors` policy allowed it: allowed.
 * - `allowedOrigins` is set and the origin is not in it: refused (the list is complete, same-origin included).
 * - Otherwise the origin must be the request's own (`Host` host and port, the scheme's default port when absent),
 *   and on a connection that arrived over loopback the `Host` must be a loopback name: a page whose name was rebound
 *   to 127.0.0.1 is same-origin to itself, but its `Host` is its own name, not `localhost`.
 */
export class OriginGuard {
  private readonly tests: ((origin: string, parsed: ParsedOrigin | undefined) => boolean)[] | undefined;

  constructor(allowedOrigins: readonly string[] | undefined) {
    this.tests = allowedOrigins && allowedOrigins.length > 0 ? allowedOrigins.map(entryTest) : undefined;
  }

  verdict(ex: Exchange): OriginVerdict {
    const raw = ex.req.headers.origin;
    const origin = Array.isArray(raw) ? raw[0] : raw;
    if (origin === undefined) return undefined;
    const parsed = parseOrigin(origin);
    if (this.tests?.some((t) => t(origin, parsed))) return undefined;
    if (ex.get(CORS_ALLOWED_ORIGIN) === origin) return undefined;
    if (this.tests) return 'not-allowed';
    if (!parsed) return 'malformed';
    const hostname = unbracket(ex.hostname.toLowerCase());
    const hostHeader = ex.req.headers.host ?? '';
    const m = /:(\d{1,5})$/.exec(hostHeader);
    const hostPort = (m && !hostHeader.endsWith(']') ? m[1]! : (DEFAULT_PORT[parsed.scheme] ?? '')).replace(/^0+(?=\d)/, '');
    if (parsed.host !== hostname || parsed.port !== hostPort) return 'cross-origin';
    if (isLoopbackAddress(ex.req.socket?.localAddress) && !isLoopbackName(hostname)) return 'rebinding';
    return undefined;
  }

  /** The 403 for a refused Origin (JSON-RPC error, as the SDK servers answer), else undefined. */
  check(ex: Exchange): Reply | undefined {
    const verdict = this.verdict(ex);
    if (!verdict) return undefined;
    ex.logField('mcp.originRefused', verdict);
    const origin = String(ex.req.headers.origin);
    return rpcReply(403, TRANSPORT_ERROR, `Forbidden: Origin ${origin} is not allowed to use this MCP endpoint (${REASONS[verdict]})`);
  }
}

const REASONS: Record<Exclude<OriginVerdict, undefined>, string> = {
  'not-allowed': 'not in allowedOrigins',
  malformed: 'not a scheme://host[:port] origin',
  'cross-origin': 'another origin than the Host; list it in allowedOrigins or allow it with a cors policy',
  rebinding: 'a non-loopback Host on a loopback connection: possible DNS rebinding',
};
