import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';

/** Credentials as the signer wants them (a static set or what the default chain resolved). */
export interface AwsCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
  readonly expiration?: Date;
}

/** One request to sign, as it will be sent. */
export interface SignInput {
  readonly method: string;
  /** Path and query exactly as sent (percent-encoded). */
  readonly path: string;
  /** Headers to send, lower-case names; `host` must be present. Not modified. */
  readonly headers: IncomingHttpHeaders | Readonly<Record<string, string | string[] | undefined>>;
  readonly body: Uint8Array | undefined;
}

export interface SignOptions {
  readonly service: string;
  readonly region: string;
  /** Default now. */
  readonly signingDate?: Date;
  /**
   * Add `x-amz-content-sha256` (signed) with the body's hash. Default true. The published SigV4 test suite predates
   * the header, so its vectors are checked with this off.
   */
  readonly contentSha256?: boolean;
}

/** SHA-256 of the empty payload. */
export const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

/** Headers the client may have sent that belong to the signature; the signature replaces them. */
export const SIGNATURE_HEADERS = ['authorization', 'x-amz-date', 'x-amz-security-token', 'x-amz-content-sha256'] as const;

/**
 * Not signed: forwarding headers are commonly rewritten by proxies between the gateway and AWS, and a changed
 * signed header fails the request; `x-request-id` is settled by the kernel when it forwards (ADR 0025), after
 * signing. (The signer also skips `user-agent`, hop-by-hop headers and the like.)
 */
const UNSIGNABLE = new Set(['x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'x-forwarded-port', 'forwarded', 'via', 'x-request-id']);

function decode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** The query string (without `?`) as the signer's map of decoded names to values. `+` stays a literal plus. */
function parseQuery(text: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
  if (!text) return out;
  for (const part of text.split('&')) {
    if (!part) continue;
    const eq = part.indexOf('=');
    const name = decode(eq === -1 ? part : part.slice(0, eq));
    const value = eq === -1 ? '' : decode(part.slice(eq + 1));
    const prev = out[name];
    out[name] = prev === undefined ? value : Array.isArray(prev) ? [...prev, value] : [prev, value];
  }
  return out;
}

/** A SigV4 signer (HMACs by @aws-crypto/sha256-js) over a credentials provider. */
export function createSigner(credentials: () => Promise<AwsCredentials>, service: string): SignatureV4 {
  // Double-encoding of the path is right for every service but S3, which signs the path as sent.
  return new SignatureV4({ credentials, region: 'us-east-1', service, sha256: Sha256, uriEscapePath: service !== 's3', applyChecksum: false });
}

/**
 * Sign one request. Returns the headers to set on it: `authorization`, `x-amz-date`, and when they apply
 * `x-amz-security-token` and `x-amz-content-sha256`. The body hash covers exactly `input.body`.
 */
export async function signRequest(signer: SignatureV4, input: SignInput, options: SignOptions): Promise<Record<string, string>> {
  const q = input.path.indexOf('?');
  const path = q === -1 ? input.path : input.path.slice(0, q);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(input.headers)) {
    if (value === undefined) continue;
    const lower = name.toLowerCase();
    if ((SIGNATURE_HEADERS as readonly string[]).includes(lower)) continue;
    // Repeated header lines reach AWS as one value joined by commas (SigV4 canonical form).
    headers[lower] = Array.isArray(value) ? value.join(',') : String(value);
  }
  const host = headers.host;
  if (!host) throw new Error('the request has no Host header to sign');
  let payloadHash: string | undefined;
  if (options.contentSha256 !== false) {
    // node:crypto here: the body may be megabytes, and the pure-JS hash is for the small HMAC inputs.
    payloadHash = input.body && input.body.length > 0 ? createHash('sha256').update(input.body).digest('hex') : EMPTY_SHA256;
    headers['x-amz-content-sha256'] = payloadHash;
  }
  const hostname = host.startsWith('[') ? host.slice(1, host.indexOf(']')) : host.replace(/:\d+$/, '');
  const request = {
    method: input.method.toUpperCase(),
    protocol: 'https:',
    hostname,
    path,
    query: parseQuery(q === -1 ? '' : input.path.slice(q + 1)),
    headers,
    body: input.body && input.body.length > 0 ? input.body : undefined,
  };
  const signed = (await signer.sign(request as never, {
    signingDate: options.signingDate ?? new Date(),
    signingService: options.service,
    signingRegion: options.region,
    unsignableHeaders: UNSIGNABLE,
  })) as unknown as { headers: Record<string, string> };
  const out: Record<string, string> = { authorization: signed.headers.authorization!, 'x-amz-date': signed.headers['x-amz-date']! };
  const token = signed.headers['x-amz-security-token'];
  if (token) out['x-amz-security-token'] = token;
  if (payloadHash) out['x-amz-content-sha256'] = payloadHash;
  return out;
}
