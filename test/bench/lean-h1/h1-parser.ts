// An HTTP/1.1 response parser in JavaScript (the gate prototype of issue 15 items 2-3, docs/perf.md "Lean upstream
// client, session 8"): the head parsed from the socket's Buffers, the body handed on chunk by chunk as slices.

export const MAX_HEAD = 16 * 1024; // undici's maxHeaderSize

export interface ResponseSink {
  /** A final (non-1xx) status line and its raw `[name, value, …]` headers. */
  head(status: number, raw: string[], keepAlive: boolean, keepAliveMs: number): void;
  data(chunk: Buffer): void;
  /** The body ended; `trailers` when a chunked body carried any. */
  end(trailers: string[] | null): void;
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// A field value: visible characters, obs-text, SP and HTAB (no CR, LF, NUL or other controls).
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const STATUS_LINE = /^HTTP\/1\.([01]) ([1-9]\d\d)(?: [\t\x20-\x7e\x80-\xff]*)?$/;
const KEEP_ALIVE_TIMEOUT = /(?:^|[\s,])timeout\s*=\s*(\d+)/i;

const HEAD = 0;
const LENGTH = 1;
const CHUNK_SIZE = 2;
const CHUNK_DATA = 3;
const CHUNK_CRLF = 4;
const TRAILERS = 5;
const UNTIL_CLOSE = 6;
const DONE = 7;

export class ParseError extends Error {
  readonly code = 'HPE_INVALID';
}

/** One response at a time on one connection (no pipelining). */
export class H1ResponseParser {
  private state = DONE;
  private pending: Buffer | null = null;
  private remaining = 0;
  private noBody = false;
  private keepAlive = true;
  private trailers: string[] | null = null;
  private sink: ResponseSink | null = null;

  /** Expect the answer to a request (`head`: a HEAD request, whose answer has no body). */
  expect(sink: ResponseSink, head: boolean): void {
    this.sink = sink;
    this.noBody = head;
    this.state = HEAD;
    this.pending = null;
    this.trailers = null;
  }

  get idle(): boolean {
    return this.state === DONE;
  }

  /** Bytes after DONE are an error the caller sees as `true` (the upstream sent more than one answer). */
  execute(chunk: Buffer): boolean {
    let at = 0;
    const len = chunk.length;
    while (at < len) {
      switch (this.state) {
        case HEAD: {
          let buf = chunk;
          let from = at;
          if (this.pending !== null) {
            buf = Buffer.concat([this.pending, chunk.subarray(at)]);
            from = 0;
          }
          const end = buf.indexOf('\r\n\r\n', Math.max(from, 0), 'latin1');
          if (end === -1) {
            if (buf.length - from > MAX_HEAD) throw new ParseError('response head larger than 16 KiB');
            this.pending = from === 0 ? buf : buf.subarray(from);
            return false;
          }
          if (end - from + 4 > MAX_HEAD) throw new ParseError('response head larger than 16 KiB');
          const consumedOfChunk = this.pending === null ? end + 4 - at : end + 4 - this.pending.length;
          this.pending = null;
          this.parseHead(buf.toString('latin1', from, end));
          at += consumedOfChunk;
          break;
        }
        case LENGTH: {
          const n = Math.min(this.remaining, len - at);
          this.remaining -= n;
          this.sink!.data(at === 0 && n === len ? chunk : chunk.subarray(at, at + n));
          at += n;
          if (this.remaining === 0) this.finish();
          break;
        }
        case UNTIL_CLOSE:
          this.sink!.data(at === 0 ? chunk : chunk.subarray(at));
          return false;
        case CHUNK_SIZE:
        case CHUNK_CRLF:
        case TRAILERS:
          at = this.chunkLine(chunk, at);
          break;
        case CHUNK_DATA: {
          const n = Math.min(this.remaining, len - at);
          this.remaining -= n;
          this.sink!.data(chunk.subarray(at, at + n));
          at += n;
          if (this.remaining === 0) this.state = CHUNK_CRLF;
          break;
        }
        default:
          return true;
      }
    }
    return false;
  }

  /** The connection ended: a close-delimited body is complete; anything else unfinished is an error. */
  closed(): boolean {
    if (this.state === UNTIL_CLOSE) {
      this.finish();
      return true;
    }
    return this.state === DONE;
  }

  private finish(): void {
    this.state = DONE;
    const sink = this.sink!;
    this.sink = null;
    sink.end(this.trailers);
  }

  /** A CRLF-ended line of chunked framing (size line, the CRLF after data, a trailer line). */
  private chunkLine(chunk: Buffer, at: number): number {
    const nl = chunk.indexOf(10, at);
    const pendingLen = this.pending === null ? 0 : this.pending.length;
    if (nl === -1) {
      if (pendingLen + chunk.length - at > MAX_HEAD) throw new ParseError('chunk framing line too long');
      this.pending = this.pending === null ? Buffer.from(chunk.subarray(at)) : Buffer.concat([this.pending, chunk.subarray(at)]);
      return chunk.length;
    }
    let line: string;
    if (this.pending === null) line = chunk.toString('latin1', at, nl);
    else {
      line = this.pending.toString('latin1', 0, pendingLen) + chunk.toString('latin1', at, nl);
      this.pending = null;
    }
    if (line.length === 0 || line.charCodeAt(line.length - 1) !== 13) throw new ParseError('bare LF in chunked framing');
    line = line.slice(0, -1);
    if (this.state === CHUNK_CRLF) {
      if (line.length !== 0) throw new ParseError('chunk data longer than its size');
      this.state = CHUNK_SIZE;
    } else if (this.state === CHUNK_SIZE) {
      const semi = line.indexOf(';');
      const hex = semi === -1 ? line : line.slice(0, semi);
      if (!/^[0-9a-fA-F]{1,12}$/.test(hex)) throw new ParseError('invalid chunk size');
      if (semi !== -1 && !FIELD_VALUE.test(line.slice(semi))) throw new ParseError('invalid chunk extension');
      const size = parseInt(hex, 16);
      if (size === 0) this.state = TRAILERS;
      else {
        this.remaining = size;
        this.state = CHUNK_DATA;
      }
    } else if (line.length === 0) this.finish();
    else {
      const colon = line.indexOf(':');
      const name = colon <= 0 ? '' : line.slice(0, colon);
      const value = colon <= 0 ? '' : line.slice(colon + 1).trim();
      if (!TOKEN.test(name) || !FIELD_VALUE.test(value)) throw new ParseError('invalid trailer');
      const list = (this.trailers ??= []);
      list.push(name, value);
      if (list.length > 200) throw new ParseError('too many trailers');
    }
    return nl + 1;
  }

  private parseHead(head: string): void {
    const lines = head.split('\r\n');
    const m = STATUS_LINE.exec(lines[0]!);
    if (m === null) throw new ParseError('invalid status line');
    const status = Number(m[2]);
    const http10 = m[1] === '0';
    const raw: string[] = [];
    let length = -1;
    let chunked = false;
    let te = false;
    let close = http10;
    let keepAliveMs = 0;
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i]!;
      const colon = line.indexOf(':');
      if (colon <= 0) throw new ParseError('invalid header line');
      const name = line.slice(0, colon);
      if (!TOKEN.test(name)) throw new ParseError('invalid header name');
      const value = line.slice(colon + 1).trim();
      if (!FIELD_VALUE.test(value)) throw new ParseError('invalid header value');
      raw.push(name, value);
      if (name.length === 14 && name.toLowerCase() === 'content-length') {
        if (length !== -1) throw new ParseError('duplicate Content-Length');
        if (!/^\d{1,15}$/.test(value)) throw new ParseError('invalid Content-Length');
        length = Number(value);
      } else if (name.length === 17 && name.toLowerCase() === 'transfer-encoding') {
        te = true;
        chunked = /(?:^|,)\s*chunked\s*$/i.test(value);
      } else if (name.length === 10 && name.toLowerCase() === 'connection') {
        const v = value.toLowerCase();
        if (v.includes('close')) close = true;
        else if (http10 && v.includes('keep-alive')) close = false;
      } else if (name.length === 10 && name.toLowerCase() === 'keep-alive') {
        const t = KEEP_ALIVE_TIMEOUT.exec(value);
        if (t !== null) keepAliveMs = Number(t[1]) * 1000;
      }
    }
    if (te && length !== -1) throw new ParseError('Content-Length with Transfer-Encoding');
    if (status < 200) {
      if (status === 101) throw new ParseError('unexpected 101 answer');
      return; // 1xx: the final answer follows (state stays HEAD)
    }
    const noBody = this.noBody || status === 204 || status === 304;
    if (!noBody && te && !chunked) close = true;
    this.keepAlive = !close;
    this.sink!.head(status, raw, !close, keepAliveMs);
    if (this.sink === null) return; // the sink gave up
    if (noBody || (length === 0 && !te)) this.finish();
    else if (chunked) this.state = CHUNK_SIZE;
    else if (length > 0) {
      this.remaining = length;
      this.state = LENGTH;
    } else {
      this.keepAlive = false;
      this.state = UNTIL_CLOSE;
    }
  }

  /** Whether the connection may carry another request after the answer that just finished. */
  get reusable(): boolean {
    return this.keepAlive;
  }
}
