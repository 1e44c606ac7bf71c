import type { ConnectionOptions } from 'node:tls';
import type { buildConnector as BuildConnector } from 'undici';
import { undiciClient } from './undici-core.ts';
import { certHasAltName } from '../sdk/index.ts';
import { ipFamily } from '../sdk/ip-family.ts';
import type { UpstreamTls } from '../sdk/index.ts';

/** The name SNI carries for an upstream: `hostname` when set, else the host; none for an IP literal (RFC 6066). */
export function sniName(tls: UpstreamTls | undefined, host: string): string | undefined {
  const name = tls?.servername || host;
  return isIpLiteral(name) ? undefined : name;
}

/**
 * Node TLS connect options for one HTTP/1.1 connection to an upstream, from the resolved `backendTLS` settings.
 *
 * The name check always runs against the configured name (`hostname`, else the origin's host), never against
 * whatever name the HTTP client derived from the request's Host header; `servername` is `''` for an IP literal so
 * no client fills SNI in from the Host header.
 */
export function tlsConnectOptions(tls: UpstreamTls | undefined, host: string): ConnectionOptions {
  const expected = tls?.servername ?? host;
  const options: ConnectionOptions = { servername: sniName(tls, host) ?? '' };
  if (tls?.ca) options.ca = tls.ca;
  if (tls?.cert) options.cert = tls.cert;
  if (tls?.key) options.key = tls.key;
  // Only HTTP/1.1 can be spoken on a connection opened with these options (upgrades); pools negotiate h2 themselves.
  if (tls?.alpn?.length) options.ALPNProtocols = ['http/1.1'];
  if (tls?.insecure) {
    options.rejectUnauthorized = false;
    options.checkServerIdentity = () => undefined;
  } else {
    // Node checks the chain first (rejectUnauthorized defaults to true) and calls this only for a trusted chain.
    options.rejectUnauthorized = true;
    if (tls?.subjectAltNames?.length) {
      const accepted = tls.subjectAltNames;
      options.checkServerIdentity = (_name, cert) =>
        certHasAltName(cert, accepted)
          ? undefined
          : Object.assign(new Error(`certificate subject alternative names (${cert.subjectaltname ?? 'none'}) match none of: ${accepted.join(', ')}`), {
              code: 'ERR_TLS_CERT_ALTNAME_INVALID',
              reason: 'subjectAltNames mismatch',
              cert,
            });
    } else if (tls?.insecureHost) {
      options.checkServerIdentity = () => undefined;
    } else {
      // node:tls only when a TLS upstream connects: a cleartext config never loads it (docs/perf.md, session 10b).
      options.checkServerIdentity = (_name, cert) => process.getBuiltinModule('node:tls').checkServerIdentity(expected, cert);
    }
  }
  return options;
}

/**
 * The connector of an upstream pool. It pins SNI to the configured name: undici would otherwise take SNI (and the
 * name it verifies) from each request's Host header. ALPN follows `alpn` (or `http2`) within what undici speaks (h2, http/1.1).
 */
export function tlsConnector(tls: UpstreamTls | undefined, host: string, http2 = false): BuildConnector.connector {
  const alpn = tls?.alpn ?? [];
  // `http.version: HTTP/2.0` offers h2 (ADR 0151) as `alpn: [h2]` does; undici then offers h2 and http/1.1.
  const allowH2 = http2 || alpn.includes('h2');
  const base = undiciClient().buildConnector({
    ...(tlsConnectOptions(tls, host) as BuildConnector.BuildOptions),
    allowH2,
  } as BuildConnector.BuildOptions);
  const servername = sniName(tls, host);
  return (opts, callback) => base({ ...opts, servername: servername ?? '' }, callback);
}

export function isIpLiteral(host: string): boolean {
  return ipFamily(host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host) !== 0;
}
