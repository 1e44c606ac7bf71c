import type { AddressInfo } from 'node:net';
import type { IncomingHttpHeaders } from 'node:http';
import { ipFamily } from '../sdk/ip-family.ts';

/** Names of this machine a browser can use for a loopback server. */
const LOOPBACK = new Set(['localhost', '127.0.0.1', '::1']);
const WILDCARD = new Set(['0.0.0.0', '::']);

/**
 * The Host/Origin check of an admin-side server, built once per listener (ADR 0017). A browser tricked into
 * calling the server under a foreign name (DNS rebinding) or from a foreign page sends that name in `Host` or
 * `Origin`; both must name this server: `localhost`, `127.0.0.1`, `[::1]` or the bound address, and when the
 * server listens on every interface (`0.0.0.0`, `::`) any IP literal, so a Kubernetes probe or a Prometheus
 * scrape addressed to the pod IP still works. DNS names other than `localhost` never pass. The `Host` port is
 * not checked (a `kubectl port-forward 9000:15000` arrives as `localhost:9000`); an `Origin` is another site
 * unless it is the request's own `Host`, or a loopback name or the bound address with the server's port (not any
 * IP literal: on a wildcard server that would be any machine's page). Returns why a request is refused, or
 * undefined to serve it.
 */
export function compileHostCheck(bound: AddressInfo): (headers: IncomingHttpHeaders) => string | undefined {
  const port = String(bound.port);
  const address = bound.address.toLowerCase();
  const anyIp = WILDCARD.has(address);
  // `anyIpOk`: for `Host` only. An `Origin` of another IP on the server's port is another server (an attacker's
  // page on that port), so an Origin passes as an IP literal only when it is the request's own Host.
  const named = (authority: string, anyIpOk: boolean): { port: string | undefined } | undefined => {
    const parsed = splitAuthority(authority.toLowerCase());
    if (!parsed) return undefined;
    const host = parsed.host.startsWith('::ffff:') && ipFamily(parsed.host.slice(7)) === 4 ? parsed.host.slice(7) : parsed.host;
    return LOOPBACK.has(host) || host === address || (anyIpOk && anyIp && ipFamily(host) !== 0) ? parsed : undefined;
  };
  return (headers) => {
    const host = headers.host;
    if (host !== undefined && !named(host, true)) return 'Host';
    const origin = headers.origin;
    if (origin !== undefined) {
      // An origin without a port means the scheme's default port.
      const m = /^(https?):\/\/(\[[^\]]*\]|[^/:]+)(?::(\d+))?$/i.exec(origin);
      const authority = m ? `${m[2]!}:${m[3] ?? (m[1]!.toLowerCase() === 'https' ? '443' : '80')}`.toLowerCase() : undefined;
      const own = authority !== undefined && host !== undefined && (authority === host.toLowerCase() || authority === `${host.toLowerCase()}:80`);
      const site = authority !== undefined && !own ? named(authority, false) : undefined;
      if (!own && site?.port !== port) return 'Origin';
    }
    return undefined;
  };
}

/** `host`, `host:port`, `[v6]` or `[v6]:port`; undefined when malformed. */
export function splitAuthority(authority: string): { host: string; port: string | undefined } | undefined {
  if (authority.startsWith('[')) {
    const end = authority.indexOf(']');
    if (end < 0) return undefined;
    const rest = authority.slice(end + 1);
    if (rest !== '' && !/^:\d+$/.test(rest)) return undefined;
    return { host: authority.slice(1, end), port: rest ? rest.slice(1) : undefined };
  }
  const i = authority.indexOf(':');
  if (i < 0) return authority ? { host: authority, port: undefined } : undefined;
  const port = authority.slice(i + 1);
  if (!/^\d+$/.test(port)) return undefined;
  return { host: authority.slice(0, i), port };
}
