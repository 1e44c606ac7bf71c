// A gateway-made error answered to a gRPC client (ADR 0178, BEHAVIOUR.md section 7): a trailers-only gRPC answer
// (HTTP 200, the status and message in the head) instead of an HTTP error status, which a gRPC client can only read
// as a guess from gRPC's HTTP fallback table (a 403 read as UNKNOWN by some clients, the message lost).
import { Readable } from 'node:stream';
import type { Reply } from '../sdk/index.ts';
import { destroyBody } from '../sdk/index.ts';
import type { ExchangeImpl } from './exchange-impl.ts';
import { grpcMediaType } from '../upstream/trailers.ts';

/** Longest `grpc-message` taken from a direct response's body (characters, before encoding). */
const MAX_MESSAGE = 1024;
/** Longest `grpc-message` sent (characters, encoded). */
const MAX_ENCODED = 1024;

/**
 * gRPC's status for a gateway-made HTTP status: gRPC's HTTP-to-gRPC table (http-grpc-status-mapping.md) as the
 * reference applies it, with 407 as 401 and a route without a backend UNAVAILABLE (not UNKNOWN for its 500).
 */
function grpcCode(status: number, type: string | undefined): number {
  if (type === 'no_backend') return 14;
  switch (status) {
    case 400:
      return 13; // INTERNAL
    case 401:
    case 407:
      return 16; // UNAUTHENTICATED
    case 403:
      return 7; // PERMISSION_DENIED
    case 404:
      return 12; // UNIMPLEMENTED
    case 429:
    case 502:
    case 503:
    case 504:
      return 14; // UNAVAILABLE
    default:
      return 2; // UNKNOWN
  }
}

/**
 * gRPC's percent-encoding of `grpc-message`: UTF-8 bytes outside printable ASCII, and `%`, as `%XX`. A message that
 * needs none (the usual one) is returned as it is. At most MAX_ENCODED characters, cut before a whole character
 * (never inside a `%XX` or a character's bytes, which grpc-js would show still encoded): text that grows 9-fold
 * (3-byte UTF-8) would pass grpc-js's 8 KiB metadata limit, and the client would get RESOURCE_EXHAUSTED instead.
 */
export function grpcMessage(text: string): string {
  let plain = true;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x25) {
      plain = false;
      break;
    }
  }
  if (plain) return text.length > MAX_ENCODED ? text.slice(0, MAX_ENCODED) : text;
  let out = '';
  let whole = 0; // out's length at the last character's end
  for (const byte of Buffer.from(text, 'utf8')) {
    // A continuation byte (10xxxxxx) goes on its character; any other starts one.
    if ((byte & 0xc0) !== 0x80) whole = out.length;
    out += byte >= 0x20 && byte <= 0x7e && byte !== 0x25 ? String.fromCharCode(byte) : `%${byte < 16 ? '0' : ''}${byte.toString(16).toUpperCase()}`;
    if (out.length > MAX_ENCODED) return out.slice(0, whole);
  }
  return out;
}

/** What a gateway-made error says: its message, else a direct response's text body, else the status's reason. */
function messageOf(reply: Reply): string {
  if (reply.error !== undefined) return reply.error.message;
  const body = reply.body;
  const text = typeof body === 'string' ? body : body instanceof Uint8Array ? Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8') : '';
  if (text !== '') return text.length > MAX_MESSAGE ? text.slice(0, MAX_MESSAGE) : text;
  return process.getBuiltinModule('node:http').STATUS_CODES[reply.status] ?? `HTTP ${reply.status}`;
}

/**
 * Turn a gateway-made error reply (a status of 400 or more) into a trailers-only gRPC answer when the request is
 * gRPC's (a POST with a gRPC content type); false (the reply untouched) for any other request. The reply's other
 * headers (`WWW-Authenticate`, the rate limit's) stay; its body goes. The status is logged (and on the span) as
 * `grpc.status`, over HTTP/1.1 too.
 */
export function grpcAnswer(ex: ExchangeImpl, reply: Reply): boolean {
  // gRPC calls are POSTs; a CONNECT answered 200 would read as a tunnel opened.
  if (ex.method !== 'POST') return false;
  const media = grpcMediaType(ex.headers['content-type']);
  if (media === undefined) return false;
  const code = grpcCode(reply.status, reply.error?.type);
  const message = grpcMessage(messageOf(reply));
  const headers = reply.headers;
  delete headers['content-length'];
  delete headers['content-encoding'];
  delete headers['transfer-encoding'];
  headers['content-type'] = media;
  headers['grpc-status'] = String(code);
  headers['grpc-message'] = message;
  if (reply.body instanceof Readable) destroyBody(reply.body);
  reply.body = null;
  reply.status = 200;
  ex.logField('grpc.status', code);
  return true;
}
