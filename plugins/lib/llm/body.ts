import { promisify } from 'node:util';
import * as zlib from 'node:zlib';
import type { Transform } from 'node:stream';

type Decoder = (buf: Buffer, options: zlib.ZlibOptions & zlib.BrotliOptions) => Promise<Buffer>;

const gunzip = promisify(zlib.gunzip) as Decoder;
const inflate = promisify(zlib.inflate) as Decoder;
const inflateRaw = promisify(zlib.inflateRaw) as Decoder;
const brotli = promisify(zlib.brotliDecompress) as Decoder;
// zstd is in node:zlib from Node 22.15 / 23.8.
const zstdFn = (zlib as unknown as { zstdDecompress?: (b: Buffer, o: object, cb: (e: Error | null, r: Buffer) => void) => void }).zstdDecompress;
const zstd = zstdFn ? (promisify(zstdFn) as Decoder) : undefined;

/** Thrown for a `Content-Encoding` the gateway cannot decode (415). */
export class UnsupportedEncodingError extends Error {}
/** Thrown when the decoded body exceeds the limit (413). */
export class DecodedTooLargeError extends Error {}
/** Thrown when the body is not valid for its encoding (400). */
export class BadEncodingError extends Error {}

function decoderFor(encoding: string): Decoder | undefined {
  switch (encoding) {
    case 'gzip':
    case 'x-gzip':
      return gunzip;
    case 'deflate':
      // HTTP's `deflate` is zlib-wrapped; some clients send raw deflate.
      return (buf, o) => inflate(buf, o).catch(() => inflateRaw(buf, o));
    case 'br':
      return brotli;
    case 'zstd':
      return zstd;
    default:
      return undefined;
  }
}

/** The encodings of a `Content-Encoding` value, in the order they were applied (identity left out). */
export function encodings(header: string | string[] | undefined): string[] {
  if (header === undefined) return [];
  const value = Array.isArray(header) ? header.join(',') : header;
  return value
    .split(',')
    .map((e) => e.trim().toLowerCase())
    .filter((e) => e && e !== 'identity');
}

/** Undo a request body's `Content-Encoding` (gzip, deflate, br, zstd), with the decoded size bounded by `limit`. */
export async function decodeBody(body: Buffer, header: string | string[] | undefined, limit: number): Promise<Buffer> {
  const list = encodings(header);
  for (const e of list) if (!decoderFor(e)) throw new UnsupportedEncodingError(`unsupported content encoding \`${e}\``);
  let out = body;
  for (let i = list.length - 1; i >= 0; i--) {
    try {
      out = await decoderFor(list[i]!)!(out, { maxOutputLength: limit });
    } catch (err) {
      if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError) throw new DecodedTooLargeError(`decoded request body exceeds ${limit} bytes`);
      throw new BadEncodingError(`invalid ${list[i]} body: ${(err as Error).message}`);
    }
  }
  return out;
}

/** A streaming decoder for a response's `Content-Encoding`, or undefined when there is nothing (or nothing known) to undo. */
export function responseDecoder(header: string | string[] | undefined): Transform | undefined {
  const list = encodings(header);
  if (list.length !== 1) return undefined;
  switch (list[0]) {
    case 'gzip':
    case 'x-gzip':
      return zlib.createGunzip();
    case 'deflate':
      return zlib.createInflate();
    case 'br':
      return zlib.createBrotliDecompress();
    case 'zstd': {
      const create = (zlib as unknown as { createZstdDecompress?: () => Transform }).createZstdDecompress;
      return create?.();
    }
    default:
      return undefined;
  }
}
