// A chat request's dispatch fields read from its bytes (ADR 0070): the whole text is checked to be JSON by a strict
// walk that builds nothing, and only `model`, `stream` and `stream_options` are taken out. The `ai` backend parses
// the whole body only when something needs it (a policy, a translation, token limits, content capture).
import type { Obj } from './json.ts';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;

/** Past this nesting depth the walk gives up (the caller parses the text whole, which answers as today). */
const MAX_DEPTH = 64;

/** `stream_options` is only asked whether it is there: its value, when present, is this marker. */
export const PRESENT: unique symbol = Symbol('present');

/** What dispatch reads from a request before the whole body is needed. */
export interface RequestFields extends Obj {
  model?: unknown;
  stream?: unknown;
  stream_options?: unknown;
}

/** A walk over one text: `i` the next byte; every step returns false at the first byte JSON.parse would refuse. */
class Walk {
  i = 0;
  readonly b: Buffer;
  readonly end: number;
  constructor(b: Buffer) {
    this.b = b;
    this.end = b.length;
  }

  blank(): void {
    const b = this.b;
    let i = this.i;
    for (; i < this.end; i++) {
      const c = b[i]!;
      if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) break;
    }
    this.i = i;
  }

  /** A string starting at `i` (its `"`); `plain` tells whether it had no escape. Control characters are refused. */
  string(): boolean {
    const b = this.b;
    const end = this.end;
    let i = this.i + 1;
    this.plain = true;
    for (;;) {
      if (i >= end) return false;
      const c = b[i]!;
      if (c === QUOTE) break;
      if (c < 0x20) return false;
      if (c === BACKSLASH) {
        this.plain = false;
        const e = b[i + 1];
        if (e === 0x75) {
          // \uXXXX: four hex digits (lone surrogates are accepted by JSON.parse, so by this walk too).
          for (let k = i + 2; k < i + 6; k++) if (k >= end || !isHex(b[k]!)) return false;
          i += 6;
          continue;
        }
        if (e !== QUOTE && e !== BACKSLASH && e !== 0x2f && e !== 0x62 && e !== 0x66 && e !== 0x6e && e !== 0x72 && e !== 0x74) return false;
        i += 2;
        continue;
      }
      i++;
    }
    this.i = i + 1;
    return true;
  }
  plain = true;

  number(): boolean {
    const b = this.b;
    let i = this.i;
    if (b[i] === MINUS) i++;
    const first = b[i];
    if (first === ZERO) i++;
    else if (first !== undefined && first > ZERO && first <= NINE) while (isDigit(b[i])) i++;
    else return false;
    if (b[i] === DOT) {
      i++;
      if (!isDigit(b[i])) return false;
      while (isDigit(b[i])) i++;
    }
    if (b[i] === 0x65 || b[i] === 0x45) {
      i++;
      if (b[i] === PLUS || b[i] === MINUS) i++;
      if (!isDigit(b[i])) return false;
      while (isDigit(b[i])) i++;
    }
    this.i = i;
    return true;
  }

  literal(word: Buffer): boolean {
    const b = this.b;
    const i = this.i;
    if (i + word.length > this.end) return false;
    for (let k = 0; k < word.length; k++) if (b[i + k] !== word[k]) return false;
    this.i = i + word.length;
    return true;
  }

  value(depth: number): boolean {
    const c = this.b[this.i];
    if (c === QUOTE) return this.string();
    if (c === 0x7b) return this.object(depth + 1);
    if (c === 0x5b) return this.array(depth + 1);
    if (c === 0x74) return this.literal(TRUE);
    if (c === 0x66) return this.literal(FALSE);
    if (c === 0x6e) return this.literal(NULL);
    return this.number();
  }

  object(depth: number): boolean {
    if (depth > MAX_DEPTH) return false;
    this.i++;
    this.blank();
    if (this.b[this.i] === 0x7d) {
      this.i++;
      return true;
    }
    for (;;) {
      if (this.b[this.i] !== QUOTE || !this.string()) return false;
      this.blank();
      if (this.b[this.i] !== COLON) return false;
      this.i++;
      this.blank();
      if (!this.value(depth)) return false;
      this.blank();
      const c = this.b[this.i];
      this.i++;
      if (c === 0x7d) return true;
      if (c !== COMMA) return false;
      this.blank();
    }
  }

  array(depth: number): boolean {
    if (depth > MAX_DEPTH) return false;
    this.i++;
    this.blank();
    if (this.b[this.i] === 0x5d) {
      this.i++;
      return true;
    }
    for (;;) {
      if (!this.value(depth)) return false;
      this.blank();
      const c = this.b[this.i];
      this.i++;
      if (c === 0x5d) return true;
      if (c !== COMMA) return false;
      this.blank();
    }
  }
}

const TRUE = Buffer.from('true');
const FALSE = Buffer.from('false');
const NULL = Buffer.from('null');

const isDigit = (c: number | undefined): boolean => c !== undefined && c >= ZERO && c <= NINE;
const isHex = (c: number): boolean => (c >= ZERO && c <= NINE) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);

/** Whether the key b[from, to) (its bytes inside the quotes, no escapes) is `key`. */
function keyIs(b: Buffer, from: number, to: number, key: string): boolean {
  if (to - from !== key.length) return false;
  for (let k = 0; k < key.length; k++) if (b[from + k] !== key.charCodeAt(k)) return false;
  return true;
}

/**
 * The dispatch fields of a JSON object text, or undefined when the text is not one this walk accepts: not JSON, not
 * an object, nested past 64 levels, an escaped top-level key or an escaped `model` (the caller then parses the text
 * whole, which gives today's answer and error message). Accepts only texts `JSON.parse` accepts (of the UTF-8 decoded
 * bytes; test: request-fields.test.ts); a duplicated key reads as its last occurrence, as `JSON.parse` keeps it.
 * `model` is the string or, when not a string, `null` (dispatch treats both as absent); `stream` is true only for
 * the literal `true`; `stream_options` is `PRESENT` when the member is there.
 */
export function requestFields(b: Buffer): RequestFields | undefined {
  const w = new Walk(b);
  w.blank();
  if (b[w.i] !== 0x7b) return undefined;
  w.i++;
  w.blank();
  const out: RequestFields = {};
  if (b[w.i] === 0x7d) w.i++;
  else {
    for (;;) {
      if (b[w.i] !== QUOTE) return undefined;
      const keyFrom = w.i + 1;
      if (!w.string() || !w.plain) return undefined;
      const keyTo = w.i - 1;
      w.blank();
      if (b[w.i] !== COLON) return undefined;
      w.i++;
      w.blank();
      const valueFrom = w.i;
      if (!w.value(1)) return undefined;
      const len = keyTo - keyFrom;
      if (len === 5 && keyIs(b, keyFrom, keyTo, 'model')) {
        if (b[valueFrom] !== QUOTE) out.model = null;
        else if (!w.plain) return undefined;
        else out.model = b.toString('utf8', valueFrom + 1, w.i - 1);
      } else if (len === 6 && keyIs(b, keyFrom, keyTo, 'stream')) out.stream = b[valueFrom] === 0x74;
      else if (len === 14 && keyIs(b, keyFrom, keyTo, 'stream_options')) out.stream_options = PRESENT;
      w.blank();
      const c = b[w.i];
      w.i++;
      if (c === 0x7d) break;
      if (c !== COMMA) return undefined;
      w.blank();
    }
  }
  w.blank();
  return w.i === b.length ? out : undefined;
}
