import type { X509Certificate } from 'node:crypto';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';

// The client certificate a mutual-TLS listener verified (`tls.root`), as CEL's `source` shows it (BEHAVIOUR 10,
// ADR 0140). Only a connection whose certificate the listener's CA verified has one: nothing comes from headers.
// Parsed on first read and kept with the connection, so requests that never read it cost nothing and keep-alive
// requests parse it once.

const kVerified = Symbol('switchyard.verifiedClientCertificate');

type Marked = Socket & { [kVerified]?: VerifiedClientCertificate };

/** `CN=x\nO=y` (node:crypto's multi-line form, values escaped as RFC 4514 does) as its lines. */
function nameParts(name: string): string[] {
  return name === '' ? [] : name.split('\n');
}

/** An attribute value as node:crypto writes it (RFC 4514 escapes: `\\,` and `\\0A`-style hex bytes) as its text. */
function unescapeDn(value: string): string {
  if (!value.includes('\\')) return value;
  const bytes: number[] = [];
  for (let i = 0; i < value.length; i++) {
    const hex = value[i] === '\\' ? /^[0-9A-Fa-f]{2}/.exec(value.slice(i + 1, i + 3)) : null;
    if (hex) {
      bytes.push(parseInt(hex[0], 16));
      i += 2;
    } else {
      if (value[i] === '\\' && i + 1 < value.length) i++;
      const ch = String.fromCodePoint(value.codePointAt(i)!);
      bytes.push(...Buffer.from(ch, 'utf8'));
      i += ch.length - 1;
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

/** The value of a `TYPE:value` or `TYPE="quoted"` entry. */
function unquote(value: string): string {
  if (!value.startsWith('"')) return value;
  try {
    return JSON.parse(value) as string;
  } catch {
    return value;
  }
}

/** node:crypto's `subjectAltName` (`DNS:a, URI:spiffe://x, IP Address:1.2.3.4`; values with a comma quoted) as [type, value] pairs. */
function altNames(text: string | undefined): [string, string][] {
  const out: [string, string][] = [];
  if (!text) return out;
  const entry = /([A-Za-z ]+):("(?:[^"\\]|\\.)*"|[^,]*)(?:, |$)/y;
  let m: RegExpExecArray | null;
  while (entry.lastIndex < text.length && (m = entry.exec(text)) !== null) out.push([m[1]!, unquote(m[2]!)]);
  return out;
}

export class VerifiedClientCertificate {
  readonly #socket: TLSSocket;
  #x509: X509Certificate | null | undefined = undefined;
  #sans: [string, string][] | undefined = undefined;

  constructor(socket: TLSSocket) {
    this.#socket = socket;
  }

  /** The leaf certificate; null once the connection is gone before the first read. */
  get x509(): X509Certificate | null {
    if (this.#x509 === undefined) this.#x509 = this.#socket.getPeerX509Certificate() ?? null;
    return this.#x509;
  }

  /** The subject as `O=Agents, CN=agent-1` (the certificate's order). */
  get subject(): string | undefined {
    const x = this.x509;
    return x ? nameParts(x.subject).join(', ') : undefined;
  }

  get issuer(): string | undefined {
    const x = this.x509;
    return x ? nameParts(x.issuer).join(', ') : undefined;
  }

  /** The subject's common name (the last one, the most specific, when there are several). */
  get subjectCn(): string | undefined {
    const x = this.x509;
    const cn = x ? nameParts(x.subject).findLast((p) => p.startsWith('CN=')) : undefined;
    return cn === undefined ? undefined : unescapeDn(cn.slice(3));
  }

  /** The subject alternative names' values (DNS names, URIs, IP addresses, emails), in the certificate's order. */
  get subjectAltNames(): string[] | undefined {
    const x = this.x509;
    if (!x) return undefined;
    this.#sans ??= altNames(x.subjectAltName);
    return this.#sans.map(([, value]) => value);
  }

  /** The first `spiffe://` URI SAN (an X.509-SVID carries exactly one URI SAN). */
  get spiffeId(): string | undefined {
    if (!this.x509) return undefined;
    this.#sans ??= altNames(this.x509.subjectAltName);
    return this.#sans.find(([type, value]) => type === 'URI' && /^spiffe:\/\//i.test(value))?.[1];
  }

  /** The leaf certificate in PEM. */
  get pem(): string | undefined {
    return this.x509?.toString();
  }
}

/** After the handshake of a mutual-TLS listener's connection whose certificate its CA verified. */
export function markVerifiedClient(socket: TLSSocket): void {
  (socket as Marked)[kVerified] = new VerifiedClientCertificate(socket);
}

/** The verified client certificate of a request's connection; undefined without mutual TLS. */
export function verifiedClientCertificate(socket: Socket | null): VerifiedClientCertificate | undefined {
  return (socket as Marked | null)?.[kVerified];
}
