/** Blanks, quotes, `=` and control characters (C0, DEL, C1): a value holding one is quoted. */
const NEEDS_QUOTES = /[\s"=\u0000-\u001f\u007f-\u009f]/;
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;
const escapeControl = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/**
 * Control characters as `\uXXXX`: a text line never carries one raw (a value a client chose, such as an LLM model
 * name, could otherwise write terminal escapes or a line break into the log).
 */
export function escapeControls(s: string): string {
  CONTROL.lastIndex = 0;
  return CONTROL.test(s) ? s.replace(CONTROL, escapeControl) : s;
}

/** A `key=value` value: bare when safe, JSON-quoted when it holds blanks, quotes, `=` or control characters. */
export function textValue(v: unknown): string {
  const s = typeof v === 'string' ? v : v instanceof Error ? v.message : JSON.stringify(v);
  // JSON escapes C0 controls, not DEL and C1: those are escaped the same way.
  return s !== undefined && NEEDS_QUOTES.test(s) ? escapeControls(JSON.stringify(s)) : String(s);
}

const INITIAL = 64 * 1024;
/** A burst can grow the buffer; past this it is given back after the flush. */
const KEEP = 1024 * 1024;

/**
 * The bytes of the log lines of one event-loop turn, written in place into one reused Buffer (issue 15): the access
 * log writes its fields here one by one, so a line costs no strings, no concatenation and no batch `join`. Plain
 * ASCII values are copied by a JS loop (short values: cheaper than a call into C++); anything else goes through the
 * same `textValue` as the string formatter, so the bytes are the same.
 */
export class LogBytes {
  buf: Buffer = Buffer.allocUnsafe(INITIAL);
  len = 0;

  private ensure(n: number): void {
    if (this.len + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.len + n));
    this.buf.copy(next, 0, 0, this.len);
    this.buf = next;
  }

  /** The bytes so far, copied (the stream may keep a chunk after `write` returns), and the buffer emptied. */
  take(): Buffer {
    const chunk = Buffer.from(this.buf.subarray(0, this.len));
    this.len = 0;
    if (this.buf.length > KEEP) this.buf = Buffer.allocUnsafe(INITIAL);
    return chunk;
  }

  /** The bytes so far dropped (the stream is not keeping up), the buffer given back if a burst grew it. */
  clear(): void {
    this.len = 0;
    if (this.buf.length > KEEP) this.buf = Buffer.allocUnsafe(INITIAL);
  }

  /** A string as UTF-8, unescaped. */
  utf8(s: string): void {
    this.ensure(s.length * 3);
    this.len += this.buf.write(s, this.len);
  }

  /** A value written as is (`${v}`): the line's own text and the fields it never quotes (method, address, ids). */
  raw(v: unknown): void {
    const s = typeof v === 'string' ? v : `${v as string}`;
    const n = s.length;
    this.ensure(n);
    const b = this.buf;
    const at = this.len;
    for (let i = 0; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c > 0x7f) return this.utf8(s); // Not ASCII: UTF-8 by the encoder, from the start of `s` again.
      b[at + i] = c;
    }
    this.len = at + n;
  }

  /**
   * A `key=value` value as `textValue` writes it: bare when safe, JSON-quoted otherwise. Printable ASCII without
   * `"` and `=` is copied here; anything else goes through `textValue` itself.
   */
  value(v: unknown): void {
    if (typeof v !== 'string') {
      // Numbers and booleans (the LLM fields: counts, cost, streaming): their text never needs quotes.
      if (typeof v === 'number' && Number.isFinite(v)) return Number.isInteger(v) && v >= 0 ? this.uint(v) : this.raw(String(v));
      if (typeof v === 'boolean') return this.raw(v ? 'true' : 'false');
      return this.utf8(textValue(v));
    }
    const n = v.length;
    this.ensure(n);
    const b = this.buf;
    const at = this.len;
    for (let i = 0; i < n; i++) {
      const c = v.charCodeAt(i);
      if (c <= 0x20 || c > 0x7e || c === 0x22 || c === 0x3d) return this.utf8(textValue(v));
      b[at + i] = c;
    }
    this.len = at + n;
  }

  /** A non-negative integer's digits. */
  uint(n: number): void {
    if (!(n >= 0 && n < 1e15 && Number.isInteger(n))) return this.raw(n);
    this.ensure(16);
    const b = this.buf;
    let digits = 1;
    for (let m = n; m >= 10; m = Math.floor(m / 10)) digits++;
    let at = this.len + digits;
    this.len = at;
    do {
      const d = n % 10;
      b[--at] = 0x30 + d;
      n = (n - d) / 10;
    } while (n > 0);
  }

  /** `fixed2(ms)` (access-log.ts) without the string. */
  fixed2(ms: number): void {
    if (!(ms >= 0 && ms < 1e12)) return this.raw(ms.toFixed(2));
    const hundredths = Math.round(ms * 100);
    const frac = hundredths % 100;
    this.uint((hundredths - frac) / 100);
    this.ensure(3);
    const b = this.buf;
    b[this.len] = 0x2e;
    b[this.len + 1] = 0x30 + ((frac / 10) | 0);
    b[this.len + 2] = 0x30 + (frac % 10);
    this.len += 3;
  }

  /** Bytes encoded once: the line's own text, a route's part. */
  bytes(chunk: Uint8Array): void {
    const n = chunk.length;
    this.ensure(n);
    const b = this.buf;
    const at = this.len;
    if (n > 32) b.set(chunk, at);
    else for (let i = 0; i < n; i++) b[at + i] = chunk[i]!; // `set` costs more than this loop on the short ones.
    this.len = at + n;
  }

  newline(): void {
    this.ensure(1);
    this.buf[this.len++] = 0x0a;
  }
}
