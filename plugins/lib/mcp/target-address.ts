/** The connection fields shared by the HTTP-based MCP transports (`sse`, `mcp`, `openapi`). */
export interface TargetAddressConfig {
  host: string;
  port?: number;
  path?: string;
}

/** Where an HTTP-based MCP target lives. */
export interface TargetAddress {
  /** `http(s)://host:port`, the pool key. */
  readonly origin: string;
  readonly secure: boolean;
  /** Path (and query) of the MCP endpoint. */
  readonly path: string;
  /** The full endpoint URL. */
  readonly url: URL;
}

/**
 * Resolve a target's connection form (BEHAVIOUR.md §2.5.1): either `host: "http(s)://name[:port]/path"` (the scheme
 * decides TLS, the URL's path is the endpoint), or `host` (`name` or `name:port`) with optional `port` and `path`.
 * Without a scheme the connection uses TLS only when `backendTLS` applies; without a port it is 80 or 443; without a
 * path it is `defaultPath`. Returns an error sentence, with the offending field, when the form is invalid.
 */
export function parseTargetAddress(
  config: TargetAddressConfig,
  tlsConfigured: boolean,
  defaultPath: string,
): TargetAddress | { error: string; field: 'host' | 'port' | 'path' } {
  const host = config.host.trim();
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(host);
  if (scheme) {
    const s = scheme[1]!.toLowerCase();
    if (s !== 'http' && s !== 'https') return { error: `unsupported scheme \`${s}\` (use http or https)`, field: 'host' };
    if (config.port !== undefined) return { error: 'when `host` is a URL, give the port inside it, not in `port`', field: 'port' };
    if (config.path !== undefined) return { error: 'when `host` is a URL, give the path inside it, not in `path`', field: 'path' };
    let url: URL;
    try {
      url = new URL(host);
    } catch {
      return { error: `\`${host}\` is not a valid URL`, field: 'host' };
    }
    if (url.username || url.password) return { error: 'credentials in the URL are not supported; use `backendAuth`', field: 'host' };
    const path = url.pathname === '/' && !host.replace(/^[a-z]+:\/\/[^/]*/i, '').startsWith('/') ? defaultPath : url.pathname;
    return build(url.protocol === 'https:', url.hostname.replace(/^\[|\]$/g, ''), url.port ? Number(url.port) : undefined, path + url.search);
  }
  let name = host;
  let port = config.port;
  const v6 = /^\[([0-9a-fA-F:.]+)\](?::(\d+))?$/.exec(host);
  if (v6) {
    name = v6[1]!;
    if (v6[2] !== undefined) {
      if (port !== undefined) return { error: 'the port is given twice (in `host` and in `port`)', field: 'port' };
      port = Number(v6[2]);
    }
  } else {
    const parts = host.split(':');
    if (parts.length > 2) return { error: 'an IPv6 address must be written in brackets, like `[::1]`', field: 'host' };
    name = parts[0]!;
    if (parts[1] !== undefined) {
      if (port !== undefined) return { error: 'the port is given twice (in `host` and in `port`)', field: 'port' };
      port = Number(parts[1]);
    }
  }
  if (!name || !/^[A-Za-z0-9.\-_:]+$/.test(name)) return { error: `\`${host}\` is not a valid host`, field: 'host' };
  if (port !== undefined && (!Number.isInteger(port) || port < 1 || port > 65535)) return { error: `port \`${port}\` is out of range`, field: 'port' };
  let path = config.path ?? defaultPath;
  if (path === '') path = defaultPath;
  if (!path.startsWith('/')) path = `/${path}`;
  return build(tlsConfigured, name, port, path);
}

function build(secure: boolean, host: string, port: number | undefined, path: string): TargetAddress {
  const p = port ?? (secure ? 443 : 80);
  const hostPart = host.includes(':') ? `[${host}]` : host;
  const origin = `${secure ? 'https' : 'http'}://${hostPart}:${p}`;
  return { origin, secure, path, url: new URL(path, origin) };
}
