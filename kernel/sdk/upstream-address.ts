/**
 * One reading of an upstream address as written in a config (ADR 0030, BEHAVIOUR.md DECIDED 12), for every plugin
 * that dials something: a `host` backend, `ai.hostOverride`, MCP targets, external services (`extAuthz`,
 * `remoteRateLimit`, the guardrail webhook) and guard endpoints.
 *
 * `host` is `name`, `name:port`, `[v6]:port` or `http(s)://name[:port][/path]`. The scheme decides TLS; without
 * one the connection uses TLS only when `backendTLS` applies. Without a port it is 80 (443 with TLS), unless the
 * caller requires one. A path is read only where the caller takes one. Credentials in a URL are refused.
 */
import { ipFamily } from './ip-family.ts';

/** Where an address lives, resolved. */
export interface UpstreamAddress {
  readonly secure: boolean;
  /** The scheme written in `host`, if any. */
  readonly scheme: 'http' | 'https' | undefined;
  /** The host name or IP, without brackets. */
  readonly host: string;
  readonly port: number;
  /** `host:port` as it is dialled (IPv6 literals in brackets). */
  readonly authority: string;
  /** `http(s)://host:port`: the key of a connection pool. */
  readonly origin: string;
  /** The path (and query) from a URL `host` or the `path` field; `defaultPath` (or `/`) otherwise. */
  readonly path: string;
  /** Whether a path was written (in the URL or in `path`). */
  readonly pathGiven: boolean;
}

/** An address that cannot be read: a sentence, and the field it is about. */
export interface AddressProblem {
  readonly message: string;
  readonly field: 'host' | 'port' | 'path';
}

/** How a caller reads `host`. */
export interface AddressRules {
  /** `backendTLS` applies to the connection: an address without a scheme then uses TLS. */
  readonly tls: boolean;
  /** A separate `port` field, as some forms allow (only when `host` carries none). */
  readonly port?: number;
  /** A separate `path` field (only where `paths` is `allow`, and when `host` is not a URL). */
  readonly path?: string;
  /** `refuse` (the default): an origin only; `allow`: a URL's path or the `path` field is the endpoint. */
  readonly paths?: 'refuse' | 'allow';
  /** The path when none is written (with `paths: allow`). Default `/`. */
  readonly defaultPath?: string;
  /** The port must be written (an external service has no well-known port). */
  readonly requirePort?: boolean;
  /** Appended to the "takes no path" message: what to use instead. */
  readonly pathHint?: string;
}

const SCHEME = /^([a-z][a-z0-9+.-]*):\/\//i;
const HOST_CHARS = /^[A-Za-z0-9._-]+$/;

function problem(message: string, field: AddressProblem['field'] = 'host'): AddressProblem {
  return { message, field };
}

/** Read a `host` value (and the optional `port` and `path` fields next to it) by the rules above. */
export function parseUpstreamAddress(value: string, rules: AddressRules): UpstreamAddress | AddressProblem {
  const text = value.trim();
  const allowPath = rules.paths === 'allow';
  const defaultPath = rules.defaultPath ?? '/';
  const scheme = SCHEME.exec(text);
  let schemeName: 'http' | 'https' | undefined;
  let path: string | undefined;
  let host: string;
  let portText: string | undefined;
  if (scheme) {
    const s = scheme[1]!.toLowerCase();
    if (s !== 'http' && s !== 'https') return problem(`unsupported scheme \`${s}\` (use http or https, or no scheme)`);
    schemeName = s;
    if (rules.port !== undefined) return problem('when `host` is a URL, give the port inside it, not in `port`', 'port');
    if (rules.path !== undefined) return problem('when `host` is a URL, give the path inside it, not in `path`', 'path');
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      return problem(`\`${text}\` is not a valid URL`);
    }
    if (url.username || url.password) return problem('credentials in the URL are not supported; use `backendAuth`');
    // What follows the authority as written: none, or a lone `/` where only an origin is taken, is no path.
    const after = text.slice(scheme[0].length).replace(/^[^/?#]*/, '');
    if (after !== '' && !(after === '/' && !allowPath)) {
      if (!allowPath) return problem(`\`${text}\` has a path; the address is an origin only${rules.pathHint ? `: ${rules.pathHint}` : ''}`);
      path = url.pathname + url.search;
    }
    host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    // The URL drops a port that is the scheme's default; it was still written.
    const written = /:\d+$/.test(text.slice(scheme[0].length).replace(/[/?#].*$/, ''));
    portText = url.port !== '' ? url.port : written ? (s === 'https' ? '443' : '80') : undefined;
  } else {
    const v6 = /^\[([0-9a-fA-F:.]+)\](?::(\d*))?$/.exec(text);
    if (v6) {
      host = v6[1]!;
      portText = v6[2];
      if (ipFamily(host) !== 6) return problem(`\`${text}\` is not an IPv6 address`);
    } else {
      const parts = text.split(':');
      if (parts.length > 2) return problem('an IPv6 address must be written in brackets, like `[::1]:8080`');
      host = parts[0]!;
      portText = parts[1];
      if (!host || !HOST_CHARS.test(host)) return problem(`\`${text}\` is not a valid host`);
    }
  }
  if (!host || (!host.includes(':') && !HOST_CHARS.test(host))) return problem(`\`${text}\` is not a valid host`);
  let port: number | undefined;
  if (portText !== undefined) {
    if (rules.port !== undefined) return problem('the port is given twice (in `host` and in `port`)', 'port');
    if (!/^\d{1,5}$/.test(portText)) return problem(`port \`${portText}\` is out of range`, 'port');
    port = Number(portText);
  } else port = rules.port;
  const secure = schemeName ? schemeName === 'https' : rules.tls;
  if (port === undefined) {
    if (rules.requirePort) return problem(`\`${text}\` is not a \`host:port\` address`);
    port = secure ? 443 : 80;
  }
  if (!Number.isInteger(port) || port < 1 || port > 65535) return problem(`port \`${port}\` is out of range`, 'port');
  if (!schemeName && rules.path !== undefined) {
    if (!allowPath) return problem('the address is an origin only; it takes no `path`', 'path');
    path = rules.path === '' ? undefined : rules.path.startsWith('/') ? rules.path : `/${rules.path}`;
  }
  const hostPart = host.includes(':') ? `[${host}]` : host;
  const authority = `${hostPart}:${port}`;
  return {
    secure,
    scheme: schemeName,
    host,
    port,
    authority,
    origin: `${secure ? 'https' : 'http'}://${authority}`,
    path: path ?? defaultPath,
    pathGiven: path !== undefined,
  };
}

/** `service`: a Kubernetes-style service reference. Without a control plane it resolves by DNS. */
export interface ServiceRef {
  /** `<namespace>/<hostname>`, or the two apart. */
  readonly name: string | { readonly namespace: string; readonly hostname: string };
  readonly port: number;
}

/** A problem at a path below the address (`['service', 'port']`). */
export interface ServiceRefProblem {
  readonly message: string;
  readonly sub: readonly (string | number)[];
}

const DNS_LABEL = '[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?';
const DNS_NAME = new RegExp(`^${DNS_LABEL}(?:\\.${DNS_LABEL})*\\.?$`);

/**
 * The `host:port` a `service` reference dials: `<hostname>:<port>`, the hostname being the service's DNS name
 * (`ratelimit.default.svc.cluster.local`).
 */
export function serviceAuthority(ref: ServiceRef): string | ServiceRefProblem {
  let namespace: string;
  let hostname: string;
  let hostSub: (string | number)[];
  let nsSub: (string | number)[];
  if (typeof ref.name === 'string') {
    const parts = ref.name.split('/');
    if (parts.length !== 2) {
      return { message: `\`${ref.name}\` is not a service name: write \`<namespace>/<hostname>\` (exactly one \`/\`), or \`{namespace, hostname}\``, sub: ['service', 'name'] };
    }
    [namespace, hostname] = parts as [string, string];
    hostSub = nsSub = ['service', 'name'];
  } else {
    namespace = ref.name.namespace;
    hostname = ref.name.hostname;
    hostSub = ['service', 'name', 'hostname'];
    nsSub = ['service', 'name', 'namespace'];
  }
  namespace = namespace.trim();
  hostname = hostname.trim();
  if (!namespace) return { message: 'the service namespace is empty', sub: nsSub };
  if (!hostname) return { message: 'the service hostname is empty', sub: hostSub };
  const v6 = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  if (ipFamily(v6) === 0 && (hostname.length > 254 || !DNS_NAME.test(hostname))) {
    return { message: `\`${hostname}\` is not a host name (the service's DNS name, such as \`ratelimit.${namespace}.svc.cluster.local\`)`, sub: hostSub };
  }
  const port = ref.port;
  if (!Number.isInteger(port) || port < 1 || port > 65535) return { message: `port ${String(port)} is out of range (1-65535)`, sub: ['service', 'port'] };
  return `${ipFamily(v6) === 6 ? `[${v6}]` : hostname}:${port}`;
}
