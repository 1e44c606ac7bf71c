import { ipFamily } from './ip-family.ts';
import type { PeerCertificate } from 'node:tls';

// Subject-alternative-name matching for `backendTLS.subjectAltNames`, shared by the kernel's HTTP upstreams and
// plugins that open TLS connections of their own (gRPC to ext_authz / rate limit services).

/** One subject alternative name: its type (`DNS`, `IP`, `URI`, or another OpenSSL label) and value. */
export interface AltName {
  readonly type: string;
  readonly value: string;
}

/**
 * Split a certificate's `subjectaltname` (`DNS:a, IP Address:127.0.0.1, URI:spiffe://x`). Node JSON-quotes a
 * value that holds a comma or a quote (`DNS:"a, b"`), so quoted values are unescaped rather than split.
 */
export function parseCertAltNames(text: string | undefined): AltName[] {
  const out: AltName[] = [];
  if (!text) return out;
  let i = 0;
  while (i < text.length) {
    while (text[i] === ' ' || text[i] === ',') i++;
    if (i >= text.length) break;
    const colon = text.indexOf(':', i);
    if (colon < 0) break;
    const type = text.slice(i, colon);
    let value: string;
    i = colon + 1;
    if (text[i] === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      try {
        value = JSON.parse(text.slice(i, j + 1)) as string;
      } catch {
        value = text.slice(i + 1, j);
      }
      i = j + 1;
    } else {
      const end = text.indexOf(', ', i);
      value = end < 0 ? text.slice(i) : text.slice(i, end);
      i = end < 0 ? text.length : end;
    }
    out.push({ type: type === 'IP Address' ? 'IP' : type, value });
  }
  return out;
}

/** An accepted-name entry of `subjectAltNames`: `DNS:`, `IP:`/`IP Address:`, `URI:` or a bare name (see the schema). */
export function parseAcceptedAltName(entry: string): AltName {
  const typed = /^(DNS|IP Address|IP|URI):(.*)$/i.exec(entry.trim());
  if (typed) {
    const t = typed[1]!.toUpperCase();
    return { type: t === 'IP ADDRESS' ? 'IP' : t, value: typed[2]!.trim() };
  }
  const value = entry.trim();
  const bare = value.startsWith('[') && value.endsWith(']') ? value.slice(1, -1) : value;
  if (ipFamily(bare)) return { type: 'IP', value: bare };
  if (value.includes('://')) return { type: 'URI', value };
  return { type: 'DNS', value };
}

function canonicalIp(ip: string): string | undefined {
  const bare = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  const family = ipFamily(bare);
  if (family === 4) return bare;
  if (family === 6) return new URL(`http://[${bare}]/`).hostname;
  return undefined;
}

function dnsMatches(pattern: string, name: string): boolean {
  const p = pattern.toLowerCase().replace(/\.$/, '');
  const n = name.toLowerCase().replace(/\.$/, '');
  if (p === n) return true;
  // A certificate wildcard covers exactly one leftmost label.
  if (p.startsWith('*.') && p.length > 2) {
    const dot = n.indexOf('.');
    return dot > 0 && n.slice(dot + 1) === p.slice(2);
  }
  return false;
}

/** Whether the certificate carries any of the accepted names. */
export function certHasAltName(cert: PeerCertificate, accepted: readonly string[]): boolean {
  const names = parseCertAltNames(cert.subjectaltname);
  return accepted.some((entry) => {
    const want = parseAcceptedAltName(entry);
    return names.some((have) => {
      if (have.type !== want.type) return false;
      if (want.type === 'DNS') return dnsMatches(have.value, want.value);
      if (want.type === 'IP') {
        const a = canonicalIp(have.value);
        return a !== undefined && a === canonicalIp(want.value);
      }
      return have.value === want.value;
    });
  });
}

