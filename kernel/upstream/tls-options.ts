import { checkServerIdentity } from 'node:tls';
import type { ConnectionOptions, PeerCertificate } from 'node:tls';
import type { UpstreamTls } from '../sdk/index.ts';

function sanMatches(cert: PeerCertificate, accepted: readonly string[]): boolean {
  const names = (cert.subjectaltname ?? '').split(/,\s*/).map((entry) => entry.replace(/^(DNS|IP Address|URI):/, ''));
  return accepted.some((want) => names.includes(want));
}

/** Node TLS connect options for an upstream, from the resolved `backendTLS` settings. */
export function tlsConnectOptions(tls: UpstreamTls | undefined, host: string): ConnectionOptions {
  const options: ConnectionOptions = { servername: tls?.servername ?? (isIpLiteral(host) ? undefined : host) };
  if (!tls) return options;
  if (tls.ca) options.ca = tls.ca;
  if (tls.cert) options.cert = tls.cert;
  if (tls.key) options.key = tls.key;
  if (tls.alpn?.length) options.ALPNProtocols = tls.alpn;
  if (tls.insecure) {
    options.rejectUnauthorized = false;
  } else if (tls.subjectAltNames?.length) {
    const accepted = tls.subjectAltNames;
    options.checkServerIdentity = (_name, cert) =>
      sanMatches(cert, accepted) ? undefined : new Error(`certificate SANs (${cert.subjectaltname ?? 'none'}) match none of ${accepted.join(', ')}`);
  } else if (tls.insecureHost) {
    options.checkServerIdentity = () => undefined;
  } else if (tls.servername) {
    const name = tls.servername;
    options.checkServerIdentity = (_host, cert) => checkServerIdentity(name, cert);
  }
  return options;
}

export function isIpLiteral(host: string): boolean {
  return /^\d{1,3}(\.\d{1,3}){3}$/.test(host) || host.includes(':');
}
