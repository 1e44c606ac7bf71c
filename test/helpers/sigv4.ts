// An independent AWS Signature Version 4 checker for tests: node:crypto only, written from the SigV4 specification
// (AWS General Reference, "Create a signed AWS API request"), sharing no code with the gateway's signer. The
// backendAuth tests check both against AWS's published test vectors, then use this one to verify what a test
// upstream received.
import { createHash, createHmac } from 'node:crypto';

export interface SignedRequestView {
  readonly method: string;
  /** Path and query as they arrived (percent-encoded), e.g. `req.url`. */
  readonly url: string;
  /** Lower-case header names. A repeated header may be given as an array of its lines. */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: Uint8Array;
}

export interface SigV4Check {
  readonly ok: boolean;
  readonly problem?: string;
  readonly accessKeyId?: string;
  readonly date?: string;
  readonly region?: string;
  readonly service?: string;
  readonly signedHeaders?: readonly string[];
  readonly signature?: string;
  readonly expected?: string;
  readonly canonicalRequest?: string;
  readonly stringToSign?: string;
  readonly payloadHash?: string;
}

const sha256 = (data: string | Uint8Array): string => createHash('sha256').update(data).digest('hex');
const hmac = (key: string | Buffer, data: string): Buffer => createHmac('sha256', key).update(data, 'utf8').digest();

/** RFC 3986 encoding of everything but the unreserved characters, upper-case hex (SigV4 `UriEncode`). */
function uriEncode(text: string): string {
  let out = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-._~]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** Canonical URI: dot segments and empty segments removed, then every segment encoded again (not for S3). */
export function canonicalUri(path: string, service: string): string {
  if (service === 's3') return path || '/';
  const segments: string[] = [];
  for (const s of path.split('/')) {
    if (s === '' || s === '.') continue;
    if (s === '..') segments.pop();
    else segments.push(s);
  }
  const trailing = segments.length > 0 && path.endsWith('/') ? '/' : '';
  return `/${segments.map(uriEncode).join('/')}${trailing}`;
}

/** Canonical query: each name and value decoded then encoded, sorted by name and then value. */
export function canonicalQuery(query: string): string {
  if (!query) return '';
  const pairs: [string, string][] = [];
  for (const part of query.split('&')) {
    if (!part) continue;
    const eq = part.indexOf('=');
    pairs.push([uriEncode(safeDecode(eq === -1 ? part : part.slice(0, eq))), uriEncode(safeDecode(eq === -1 ? '' : part.slice(eq + 1)))]);
  }
  pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  return pairs.map(([k, v]) => `${k}=${v}`).join('&');
}

const AUTH = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/;

/**
 * Recompute the signature of a received request from its own Authorization header's scope and signed-header list,
 * with `secretAccessKey`, and compare. When `x-amz-content-sha256` is present it must equal the body's hash.
 */
export function verifySigV4(req: SignedRequestView, secretAccessKey: string): SigV4Check {
  const header = (name: string): string | undefined => {
    const v = req.headers[name];
    return Array.isArray(v) ? v.join(',') : v;
  };
  const authorization = header('authorization');
  if (!authorization) return { ok: false, problem: 'no Authorization header' };
  const m = AUTH.exec(authorization);
  if (!m) return { ok: false, problem: `malformed Authorization header: ${authorization}` };
  const [, accessKeyId, date, region, service, signedList, signature] = m as unknown as string[];
  const amzDate = header('x-amz-date');
  if (!amzDate || !amzDate.startsWith(date!)) return { ok: false, problem: `x-amz-date ${amzDate} does not match the credential date ${date}` };
  const signedHeaders = signedList!.split(';');
  if (!signedHeaders.includes('host') || !signedHeaders.includes('x-amz-date')) return { ok: false, problem: 'host and x-amz-date must be signed' };
  const payloadHash = sha256(req.body);
  const declared = header('x-amz-content-sha256');
  if (declared !== undefined && declared !== payloadHash) return { ok: false, problem: `x-amz-content-sha256 ${declared} is not the body's hash ${payloadHash}`, payloadHash };
  const q = req.url.indexOf('?');
  const canonicalHeaders = signedHeaders.map((name) => `${name}:${(header(name) ?? '').trim().replace(/\s+/g, ' ')}\n`).join('');
  const canonicalRequest = [
    req.method.toUpperCase(),
    canonicalUri(q === -1 ? req.url : req.url.slice(0, q), service!),
    canonicalQuery(q === -1 ? '' : req.url.slice(q + 1)),
    canonicalHeaders,
    signedHeaders.join(';'),
    payloadHash,
  ].join('\n');
  const scope = `${date}/${region}/${service}/aws4_request`;
  const stringToSign = `AWS4-HMAC-SHA256\n${amzDate}\n${scope}\n${sha256(canonicalRequest)}`;
  const key = hmac(hmac(hmac(hmac(`AWS4${secretAccessKey}`, date!), region!), service!), 'aws4_request');
  const expected = createHmac('sha256', key).update(stringToSign, 'utf8').digest('hex');
  return {
    ok: expected === signature,
    problem: expected === signature ? undefined : 'signature mismatch',
    accessKeyId,
    date,
    region,
    service,
    signedHeaders,
    signature,
    expected,
    canonicalRequest,
    stringToSign,
    payloadHash,
  };
}
