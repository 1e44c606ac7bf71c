/** An `ai.hostOverride` resolved to an origin. */
export interface HostOverride {
  readonly secure: boolean;
  readonly origin: string;
}

/**
 * `host:port`, `[v6]:port`, `host` or `http(s)://host[:port]`. Without a scheme the connection is TLS only when
 * `backendTLS` applies (BEHAVIOUR.md DECIDED 12). Returns an error message for anything else.
 */
export function parseHostOverride(value: string, tlsConfigured: boolean): HostOverride | string {
  let rest = value.trim().replace(/\/$/, '');
  let secure = tlsConfigured;
  const scheme = /^(https?):\/\//i.exec(rest);
  if (scheme) {
    secure = scheme[1]!.toLowerCase() === 'https';
    rest = rest.slice(scheme[0].length);
  }
  const m = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::(\d{1,5}))?$/.exec(rest);
  if (!m) return `\`${value}\` is not a host: expected \`host:port\``;
  const port = m[2] === undefined ? (secure ? 443 : 80) : Number(m[2]);
  if (port < 1 || port > 65535) return `port \`${m[2]}\` is out of range`;
  return { secure, origin: `${secure ? 'https' : 'http'}://${m[1]}:${port}` };
}
