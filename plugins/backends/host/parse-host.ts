/** A `host` backend value resolved to an origin. */
export interface HostTarget {
  readonly secure: boolean;
  readonly host: string;
  readonly port: number;
  readonly origin: string;
}

/**
 * Accepts `name`, `name:port`, `[v6]:port`, `http://name[:port]`, `https://name[:port]` (BEHAVIOUR.md DECIDED 12).
 * Without a scheme the connection is TLS only when `backendTLS` applies.
 */
export function parseHost(value: string, tlsConfigured: boolean): HostTarget | string {
  let secure = tlsConfigured;
  let rest = value.trim();
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(rest);
  if (scheme) {
    const s = scheme[1]!.toLowerCase();
    if (s !== 'http' && s !== 'https') return `unsupported scheme \`${s}\` (use http or https)`;
    secure = s === 'https';
    rest = rest.slice(scheme[0].length);
    if (/[/?#]/.test(rest.replace(/\/$/, ''))) return 'a `host` backend takes no path; use `urlRewrite` to change the path';
    rest = rest.replace(/\/$/, '');
  }
  let host: string;
  let portText: string | undefined;
  const v6 = /^\[([0-9a-fA-F:.]+)\](?::(\d+))?$/.exec(rest);
  if (v6) {
    host = v6[1]!;
    portText = v6[2];
  } else {
    const parts = rest.split(':');
    if (parts.length > 2) return 'an IPv6 address must be written in brackets, like `[::1]:8080`';
    host = parts[0]!;
    portText = parts[1];
  }
  if (!host || !/^[A-Za-z0-9.\-_:]+$/.test(host)) return `\`${value}\` is not a valid host`;
  const port = portText === undefined ? (secure ? 443 : 80) : Number(portText);
  if (!Number.isInteger(port) || port < 1 || port > 65535) return `port \`${portText}\` is out of range`;
  const hostPart = host.includes(':') ? `[${host}]` : host;
  return { secure, host, port, origin: `${secure ? 'https' : 'http'}://${hostPart}:${port}` };
}
