// The HTTP/1.1 response parser of the lean upstream client (ADR 0073): the head parsed in JavaScript from the socket's
// Buffers, the body handed on as slices of them (no copy into a wasm parser, no `Readable`). Strict: whatever undici's
// llhttp rejects by default is rejected here, and a few things it tolerates as well (see ADR 0073).

import { isHttpStatus } from './upstream-errors.ts';

/** Header names remembered per connection (a head's first ones). */
const MAX_NAMES = 32;
/** Largest response head accepted (undici's `maxHeaderSize`), and the longest chunk-size or trailer line. */
export const MAX_HEAD = 16 * 1024;

export interface ResponseSink {
  /** A final (non-1xx) answer's status and raw `[name, value, ...]` headers. */
  head(status: number, raw: string[]): void;
  data(chunk: Buffer): void;
  /** The body ended; `trailers` (raw) when a chunked body carried any. */
  end(trailers: string[] | null): void;
  /**
   * A Content-Length body's last bytes, which end it: `data` and `end` in one call, so the client's response can be
   * ended with its last chunk (one `res.end(chunk)`: no cork tick and no empty final write in node:http).
   */
  last(chunk: Buffer): void;
}

/** A malformed answer; `code` as undici's parser errors read (`upstreamFailure` shows it). */
export class H1ParseError extends Error {
  readonly code: string;
  constructor(message: string, code = 'HPE_INVALID') {
    super(message);
    this.code = code;
  }
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// A field value: visible characters, obs-text, SP and HTAB; no CR, LF, NUL or other controls.
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const CHUNK_SIZE_RE = /^[0-9a-fA-F]{1,12}$/;
const CONTENT_LENGTH_RE = /^\d{1,15}$/;
const CHUNKED_LAST = /(?:^|,)[ \t]*chunked[ \t]*$/i;
const KEEP_ALIVE_TIMEOUT = /(?:^|[\s,;])timeout\s*=\s*(\d+)/i;
const MAX_TRAILERS = 100;
/** The blank line ending a head, as a Buffer: `indexOf` with a string needle converts it on every call. */
const BLANK_LINE = Buffer.from('\r\n\r\n', 'latin1');

/** tchar (RFC 9110 §5.6.2) by character code. */
const TCHAR = new Uint8Array(128);
for (const c of "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") TCHAR[c.charCodeAt(0)] = 1;

/** Where the token starting at `from` ends (the first non-tchar, or `to`). */
function tokenEnd(s: string, from: number, to: number): number {
  let i = from;
  while (i < to) {
    const c = s.charCodeAt(i);
    if (c >= 128 || TCHAR[c] === 0) break;
    i++;
  }
  return i;
}

const isOws = (c: number): boolean => c === 32 || c === 9;

/** Field-value characters only: HTAB, SP, VCHAR, obs-text (the string is latin1: codes <= 255). */
function fieldChars(s: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i);
    if ((c < 32 && c !== 9) || c === 127) return false;
  }
  return true;
}

const isDigit = (c: number): boolean => c >= 48 && c <= 57;

/**
 * The status of `HTTP/1.[01] ddd[ reason]` ending at `eol`, in 100-599 (`isHttpStatus`); a character check (a regex and
 * its match array cost more).
 */
function statusOf(head: string, eol: number): number {
  const v = head.charCodeAt(7);
  const a = head.charCodeAt(9);
  const b = head.charCodeAt(10);
  const c = head.charCodeAt(11);
  const ok =
    eol >= 12 &&
    head.startsWith('HTTP/1.') &&
    (v === 48 || v === 49) &&
    head.charCodeAt(8) === 32 &&
    isDigit(a) && isDigit(b) && isDigit(c) &&
    (eol === 12 || (head.charCodeAt(12) === 32 && fieldChars(head, 13, eol)));
  const status = (a - 48) * 100 + (b - 48) * 10 + (c - 48);
  if (!ok || !isHttpStatus(status)) throw new H1ParseError('invalid status line');
  return status;
}

const HEAD = 0;
const LENGTH = 1;
const CHUNK_SIZE = 2;
const CHUNK_DATA = 3;
const CHUNK_CRLF = 4;
const TRAILERS = 5;
const UNTIL_CLOSE = 6;
const DONE = 7;

/** One response at a time on one connection (no pipelining): `expect` it, feed `execute`, then `closed` at EOF. */
export class H1ResponseParser {
  private state = DONE;
  /**
   * Bytes of an unfinished head or framing line: `acc[0, accLen)`. One buffer grown by doubling up to MAX_HEAD and
   * appended to, so a head dripped a byte per read costs linear copying (a concat per read was quadratic).
   */
  private acc: Buffer | null = null;
  private accLen = 0;
  private remaining = 0;
  private headRequest = false;
  private trailers: string[] | null = null;
  private sink: ResponseSink | null = null;
  /**
   * The last answer's header names by position. An upstream sends the same names in the same order, so a name is
   * compared in place with the one before it: no character check and no slice per name, and the same string each
   * time (undici's lower-case lookup then finds it interned) (docs/perf.md "Plain route CPU, session 9").
   */
  private readonly names: string[] = [];
  /** `names[k]` lower-cased, for the framing headers' checks; undefined until needed. */
  private readonly lowers: (string | undefined)[] = [];
  /** Whether any byte of the current answer arrived. */
  started = false;
  /** The connection may carry another request after this answer. */
  keepAlive = true;
  /** The upstream's `Keep-Alive: timeout=` in ms, or 0. */
  keepAliveHintMs = 0;

  /** Expect the answer to a request (`headRequest`: the answer has no body). */
  expect(sink: ResponseSink, headRequest: boolean): void {
    this.sink = sink;
    this.headRequest = headRequest;
    this.state = HEAD;
    this.accLen = 0;
    this.trailers = null;
    this.started = false;
    this.keepAlive = true;
    this.keepAliveHintMs = 0;
  }

  /** Nothing is expected (the answer ended, or none was asked for). */
  get done(): boolean {
    return this.state === DONE;
  }

  /** Stop handing anything on (the caller gave up on the answer). */
  detach(): void {
    this.sink = null;
    this.state = DONE;
  }

  /** Feed bytes read from the socket. Throws H1ParseError; returns false when bytes came after the answer ended. */
  execute(chunk: Buffer): boolean {
    this.started = true;
    let at = 0;
    const len = chunk.length;
    while (at < len) {
      switch (this.state) {
        case HEAD:
          at = this.headBytes(chunk, at);
          break;
        case LENGTH: {
          const n = Math.min(this.remaining, len - at);
          this.remaining -= n;
          const data = at === 0 && n === len ? chunk : chunk.subarray(at, at + n);
          at += n;
          if (this.remaining !== 0) this.sink!.data(data);
          else {
            this.state = DONE;
            const sink = this.sink!;
            this.sink = null;
            sink.last(data);
          }
          break;
        }
        case UNTIL_CLOSE:
          this.sink!.data(at === 0 ? chunk : chunk.subarray(at));
          return true;
        case CHUNK_DATA: {
          const n = Math.min(this.remaining, len - at);
          this.remaining -= n;
          this.sink!.data(chunk.subarray(at, at + n));
          at += n;
          if (this.remaining === 0) this.state = CHUNK_CRLF;
          break;
        }
        case DONE:
          return false;
        default:
          at = this.framingLine(chunk, at);
      }
    }
    return true;
  }

  /** The connection ended: true when that completed the answer (a close-delimited body), false when it cut it short. */
  closed(): boolean {
    if (this.state === UNTIL_CLOSE) {
      this.finish();
      return true;
    }
    return this.state === DONE;
  }

  private finish(): void {
    this.state = DONE;
    const sink = this.sink;
    this.sink = null;
    sink?.end(this.trailers);
  }

  /** Append `chunk[from, to)` to the pending bytes (callers keep the total within MAX_HEAD). */
  private append(chunk: Buffer, from: number, to: number): void {
    const need = this.accLen + to - from;
    let acc = this.acc;
    if (acc === null || acc.length < need) {
      const grown = Buffer.allocUnsafe(Math.min(MAX_HEAD, Math.max(need, acc === null ? 512 : acc.length * 2)));
      if (acc !== null) acc.copy(grown, 0, 0, this.accLen);
      this.acc = acc = grown;
    }
    chunk.copy(acc, this.accLen, from, to);
    this.accLen = need;
  }

  /** Head bytes from `at`: parsed once the blank line arrives. Returns where the head's bytes end in `chunk`. */
  private headBytes(chunk: Buffer, at: number): number {
    const len = chunk.length;
    const held = this.accLen;
    if (held === 0) {
      const end = chunk.indexOf(BLANK_LINE, at);
      if (end !== -1) {
        if (end - at + 4 > MAX_HEAD) throw new H1ParseError('response head larger than 16 KiB', 'UND_ERR_HEADERS_OVERFLOW');
        this.parseHead(chunk.toString('latin1', at, end));
        return end + 4;
      }
      if (len - at > MAX_HEAD) throw new H1ParseError('response head larger than 16 KiB', 'UND_ERR_HEADERS_OVERFLOW');
      // A head ended by bare LFs would otherwise wait for the headers deadline: refused now, as llhttp refuses it.
      if (chunk.indexOf('\n\n', at, 'latin1') !== -1) throw new H1ParseError('bare LF in the response head');
      this.append(chunk, at, len);
      return len;
    }
    // Copy no more than fits under the cap: a head whose blank line lies past it is refused either way.
    this.append(chunk, at, at + Math.min(len - at, MAX_HEAD - held));
    const acc = this.acc!.subarray(0, this.accLen);
    // Search from just before the new bytes: the blank line may straddle two reads.
    const end = acc.indexOf(BLANK_LINE, Math.max(0, held - 3));
    if (end === -1) {
      if (held + len - at > MAX_HEAD) throw new H1ParseError('response head larger than 16 KiB', 'UND_ERR_HEADERS_OVERFLOW');
      if (acc.indexOf('\n\n', Math.max(0, held - 1), 'latin1') !== -1) throw new H1ParseError('bare LF in the response head');
      return len;
    }
    this.accLen = 0;
    this.parseHead(acc.toString('latin1', 0, end));
    return at + end + 4 - held;
  }

  /** A CRLF-ended line of chunked framing: a size line, the CRLF after a chunk's data, a trailer or the last line. */
  private framingLine(chunk: Buffer, at: number): number {
    const nl = chunk.indexOf(10, at);
    const held = this.accLen;
    if (nl === -1) {
      if (held + chunk.length - at > MAX_HEAD) throw new H1ParseError('chunked framing line too long');
      this.append(chunk, at, chunk.length);
      return chunk.length;
    }
    if (held + nl - at > MAX_HEAD) throw new H1ParseError('chunked framing line too long');
    let line: string;
    if (held === 0) line = chunk.toString('latin1', at, nl);
    else {
      this.append(chunk, at, nl);
      line = this.acc!.toString('latin1', 0, this.accLen);
      this.accLen = 0;
    }
    if (line.length === 0 || line.charCodeAt(line.length - 1) !== 13) throw new H1ParseError('bare LF in chunked framing');
    line = line.slice(0, -1);
    if (this.state === CHUNK_CRLF) {
      if (line.length !== 0) throw new H1ParseError('chunk data longer than its size');
      this.state = CHUNK_SIZE;
    } else if (this.state === CHUNK_SIZE) this.chunkSize(line);
    else if (line.length === 0) this.finish();
    else this.trailer(line);
    return nl + 1;
  }

  private chunkSize(line: string): void {
    const semi = line.indexOf(';');
    const hex = semi === -1 ? line : line.slice(0, semi);
    if (!CHUNK_SIZE_RE.test(hex)) throw new H1ParseError('invalid chunk size');
    if (semi !== -1 && !FIELD_VALUE.test(line.slice(semi))) throw new H1ParseError('invalid chunk extension');
    const size = parseInt(hex, 16);
    if (size === 0) this.state = TRAILERS;
    else {
      this.remaining = size;
      this.state = CHUNK_DATA;
    }
  }

  private trailer(line: string): void {
    const colon = line.indexOf(':');
    const name = colon <= 0 ? '' : line.slice(0, colon);
    const value = line.slice(colon + 1).trim();
    if (!TOKEN.test(name) || !FIELD_VALUE.test(value)) throw new H1ParseError('invalid trailer line');
    const list = (this.trailers ??= []);
    if (list.length >= MAX_TRAILERS * 2) throw new H1ParseError('too many trailers');
    list.push(name, value);
  }

  private parseHead(head: string): void {
    let eol = head.indexOf('\r\n');
    if (eol === -1) eol = head.length;
    const status = statusOf(head, eol);
    const http10 = head.charCodeAt(7) === 48;
    const raw: string[] = [];
    let length = -1;
    let te = false;
    let chunked = false;
    let close = http10;
    let hint = 0;
    const names = this.names;
    // Character loops over the one head string, no split or regex per line: ~3× cheaper on an nginx head.
    for (let at = eol + 2, k = 0; at < head.length; at = eol + 2, k++) {
      eol = head.indexOf('\r\n', at);
      if (eol === -1) eol = head.length;
      // The same name as the last answer's at this position (tokens: the match cannot run past the line's end).
      const known = names[k];
      let colon: number;
      let name: string;
      if (known !== undefined && head.startsWith(known, at) && head.charCodeAt(at + known.length) === 58) {
        colon = at + known.length;
        name = known;
      } else {
        colon = tokenEnd(head, at, eol);
        // Also refuses obs-fold (a line starting with SP/HTAB) and whitespace before the colon.
        if (colon === at || colon === eol || head.charCodeAt(colon) !== 58) throw new H1ParseError('invalid header name', 'HPE_INVALID_HEADER_TOKEN');
        name = head.slice(at, colon);
        if (k < MAX_NAMES) {
          names[k] = name;
          this.lowers[k] = undefined;
        }
      }
      let from = colon + 1;
      let to = eol;
      while (from < to && isOws(head.charCodeAt(from))) from++;
      while (to > from && isOws(head.charCodeAt(to - 1))) to--;
      if (!fieldChars(head, from, to)) throw new H1ParseError('invalid header value', 'HPE_INVALID_HEADER_TOKEN');
      const value = head.slice(from, to);
      raw.push(name, value);
      const n = name.length;
      if (n !== 14 && n !== 17 && n !== 10) continue;
      // Lower-cased once per remembered name (cleared when the name at this position changes).
      let lower = k < MAX_NAMES ? this.lowers[k] : undefined;
      if (lower === undefined) {
        lower = name.toLowerCase();
        if (k < MAX_NAMES) this.lowers[k] = lower;
      }
      if (lower === 'content-length') {
        if (length !== -1) throw new H1ParseError('duplicate Content-Length', 'HPE_UNEXPECTED_CONTENT_LENGTH');
        if (!CONTENT_LENGTH_RE.test(value)) throw new H1ParseError('invalid Content-Length', 'HPE_INVALID_CONTENT_LENGTH');
        length = Number(value);
      } else if (lower === 'transfer-encoding') {
        te = true;
        chunked = CHUNKED_LAST.test(value); // the last line's last coding decides
      } else if (lower === 'connection') {
        const v = value.toLowerCase();
        if (v.includes('close')) close = true;
        else if (http10 && v.includes('keep-alive')) close = false;
      } else if (lower === 'keep-alive') {
        const t = KEEP_ALIVE_TIMEOUT.exec(value);
        if (t !== null) hint = Number(t[1]) * 1000;
      }
    }
    if (te && length !== -1) throw new H1ParseError('Content-Length with Transfer-Encoding', 'HPE_UNEXPECTED_CONTENT_LENGTH');
    if (status < 200) {
      if (status === 101) throw new H1ParseError('unexpected 101 answer to a request without Upgrade');
      return; // 1xx: not relayed; the final answer follows
    }
    const noBody = this.headRequest || status === 204 || status === 304;
    if (!noBody && te && !chunked) close = true; // read until close (RFC 9112 §6.3)
    if (!noBody && !te && length === -1) close = true;
    this.keepAlive = !close;
    this.keepAliveHintMs = hint;
    this.sink!.head(status, raw);
    if (this.sink === null) return; // detached while handling the head
    if (noBody || (!te && length === 0)) this.finish();
    else if (te) this.state = chunked ? CHUNK_SIZE : UNTIL_CLOSE;
    else if (length > 0) {
      this.remaining = length;
      this.state = LENGTH;
    } else this.state = UNTIL_CLOSE;
  }
}
