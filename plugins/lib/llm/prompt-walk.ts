// The prompt estimate and the client's output cap read from a request's bytes (docs/perf.md "Virtual keys, session
// 10"): a route with token limits (`localRateLimit` tokens, virtual keys) needs only these two figures, so the `ai`
// backend need not parse the whole body for them when its picked fields (request-fields.ts) are otherwise enough.
// Exactly `estimatePromptTokens(JSON.parse(text))` and `maxOutputTokens(JSON.parse(text))` (test: prompt-walk.test.ts),
// or undefined when the walk cannot tell cheaply (an escaped key below the top level): the caller parses then.
import { answers, MAX_DEPTH, PROMPT_FIELDS, SKIP } from './estimate.ts';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** What a token limiter is given before the call. */
export interface PromptFigures {
  /** `estimatePromptTokens` of the parsed body. */
  readonly tokens: number;
  /** `maxOutputTokens` of the parsed body. */
  readonly maxOutputTokens: number | undefined;
}

/** Output-cap fields in the order `maxOutputTokens` prefers them; the last is `generationConfig.maxOutputTokens`. */
const CAP_FIELDS = ['max_completion_tokens', 'max_tokens', 'max_output_tokens'] as const;

/** Thrown inside the walk when it cannot answer exactly (caught in `promptFigures`). */
const GIVE_UP = Symbol('give up');

/**
 * The keys of the objects being walked, as (from, to, share) triples: one array for every walk (a walk is synchronous),
 * so objects make no array of their own.
 */
const STACK: number[] = [];

/** Byte-level view of one text that `JSON.parse` accepts (the caller checked it: `requestFields`). */
class Scan {
  b: Buffer;
  i = 0;
  /** The top of STACK. */
  top = 0;
  /** Whether the last string read was plain ASCII without escapes (its length is its byte count). */
  plain = true;
  /** `generationConfig.candidateCount` read by `generationCap`. */
  candidates: number | undefined = undefined;
  constructor(b: Buffer) {
    this.b = b;
  }

  blank(): void {
    const b = this.b;
    let c = b[this.i];
    while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = b[++this.i];
  }

  /** The bytes [nameFrom, nameTo) of the member name `name()` read last (a nested object's names replace it). */
  nameFrom = 0;
  nameTo = 0;

  /** Past a member's name (at `i`, its quote) and its colon, to its value. */
  name(): void {
    this.nameFrom = this.i + 1;
    this.string();
    this.nameTo = this.i - 1;
    this.blank();
    this.i++; // the colon
    this.blank();
  }

  /** Past a string starting at `i` (its quote). */
  string(): void {
    const b = this.b;
    let i = this.i + 1;
    let plain = true;
    for (;;) {
      const c = b[i];
      // Past the end: not a text requestFields took (the walk is never given one); given up rather than looping.
      if (c === undefined) throw GIVE_UP;
      if (c === QUOTE) break;
      if (c === BACKSLASH) {
        plain = false;
        i += 2;
        continue;
      }
      if (c >= 0x80) plain = false;
      i++;
    }
    this.plain = plain;
    this.i = i + 1;
  }

  /** The length (UTF-16 units, as JavaScript counts) of the string that ends at `i`, which started at `from`. */
  stringLength(from: number): number {
    if (this.plain) return this.i - from - 2;
    // Escapes or non-ASCII: decoded as the whole text would be (a string's bounds are ASCII quotes, where UTF-8 decoding
    // restarts, so decoding it alone gives the same characters).
    return (JSON.parse(this.b.toString('utf8', from, this.i)) as string).length;
  }

  /** Past any value (a scalar, or a container however deep). */
  skip(): void {
    const b = this.b;
    let depth = 0;
    for (;;) {
      const c = b[this.i];
      if (c === undefined) throw GIVE_UP;
      if (c === QUOTE) {
        this.string();
        if (depth === 0) return;
        continue;
      }
      if (c === 0x7b || c === 0x5b) depth++;
      else if (c === 0x7d || c === 0x5d) {
        // At depth 0 this closes the container the scalar was in: not ours.
        if (depth === 0) return;
        this.i++;
        if (--depth === 0) return;
        continue;
      } else if (depth === 0 && (c === 0x2c || c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09)) return;
      this.i++;
    }
  }

  /** `chars` of estimate.ts over the value at `i`: string lengths, keys in SKIP left out, nothing past MAX_DEPTH. */
  chars(depth: number): number {
    const b = this.b;
    const c = b[this.i];
    if (c === QUOTE) {
      const from = this.i;
      this.string();
      return this.stringLength(from);
    }
    if ((c !== 0x7b && c !== 0x5b) || depth >= MAX_DEPTH) {
      this.skip();
      return 0;
    }
    this.i++;
    this.blank();
    let n = 0;
    if (c === 0x5b) {
      if (b[this.i] === 0x5d) {
        this.i++;
        return 0;
      }
      for (;;) {
        n += this.chars(depth + 1);
        this.blank();
        if (b[this.i++] === 0x5d) return n;
        if (this.i >= b.length) throw GIVE_UP;
        this.blank();
      }
    }
    if (b[this.i] === 0x7d) {
      this.i++;
      return 0;
    }
    // An object: a repeated key keeps its last value (as JSON.parse does), so each key's share is kept to replace it:
    // (from, to, share) triples on the shared stack from `base` (objects inside the value use it above and give it back).
    const base = this.top;
    for (;;) {
      this.name();
      if (!this.plain) throw GIVE_UP;
      const keyFrom = this.nameFrom;
      const keyTo = this.nameTo;
      const share = skipKey(b, keyFrom, keyTo) ? (this.skip(), 0) : this.chars(depth + 1);
      const seen = findKey(b, base, this.top, keyFrom, keyTo);
      if (seen === -1) {
        const top = this.top;
        STACK[top] = keyFrom;
        STACK[top + 1] = keyTo;
        STACK[top + 2] = share;
        this.top = top + 3;
        n += share;
      } else {
        n += share - STACK[seen + 2]!;
        STACK[seen + 2] = share;
      }
      this.blank();
      if (b[this.i++] === 0x7d) {
        this.top = base;
        return n;
      }
      if (this.i >= b.length) throw GIVE_UP;
      this.blank();
    }
  }

  /** A JSON number at `i` as JavaScript reads it, or undefined for any other value (skipped). */
  number(): number | undefined {
    const b = this.b;
    const from = this.i;
    const c = b[from];
    if (c !== 0x2d && (c === undefined || c < 0x30 || c > 0x39)) {
      this.skip();
      return undefined;
    }
    this.skip();
    // A plain integer (the usual cap) without making a string; anything else as JavaScript reads the text.
    let v = 0;
    for (let k = from; k < this.i; k++) {
      const d = b[k]! - 0x30;
      if (d < 0 || d > 9 || k - from > 14) return Number(b.toString('latin1', from, this.i));
      v = v * 10 + d;
    }
    return v;
  }

  /** `generationConfig.maxOutputTokens` of the object at `i` (its last occurrence), or undefined; `candidates` too. */
  generationCap(): number | undefined {
    const b = this.b;
    this.candidates = undefined;
    if (b[this.i] !== 0x7b) {
      this.skip();
      return undefined;
    }
    this.i++;
    this.blank();
    let cap: number | undefined;
    if (b[this.i] === 0x7d) {
      this.i++;
      return undefined;
    }
    for (;;) {
      this.name();
      if (!this.plain) throw GIVE_UP;
      if (keyIs(b, this.nameFrom, this.nameTo, 'maxOutputTokens')) cap = this.number();
      else if (keyIs(b, this.nameFrom, this.nameTo, 'candidateCount')) this.candidates = this.number();
      else this.skip();
      this.blank();
      if (b[this.i++] === 0x7d) return cap;
      if (this.i >= b.length) throw GIVE_UP;
      this.blank();
    }
  }
}

function keyIs(b: Buffer, from: number, to: number, key: string): boolean {
  if (to - from !== key.length) return false;
  for (let k = 0; k < key.length; k++) if (b[from + k] !== key.charCodeAt(k)) return false;
  return true;
}

/** SKIP's names by length (compared byte by byte: no string made per key). */
const SKIP_BY_LENGTH: string[][] = [];
for (const name of SKIP) (SKIP_BY_LENGTH[name.length] ??= []).push(name);

/** Whether the plain key b[from, to) is one whose value is not prompt text. */
function skipKey(b: Buffer, from: number, to: number): boolean {
  const names = SKIP_BY_LENGTH[to - from];
  if (names === undefined) return false;
  for (let k = 0; k < names.length; k++) if (keyIs(b, from, to, names[k]!)) return true;
  return false;
}

/** Index in STACK of an earlier key of the same object (its triples in [base, top)) with the same bytes, or -1. */
function findKey(b: Buffer, base: number, top: number, from: number, to: number): number {
  const len = to - from;
  for (let k = base; k < top; k += 3) {
    const f = STACK[k]!;
    if (STACK[k + 1]! - f !== len) continue;
    let same = true;
    for (let j = 0; j < len; j++) {
      if (b[f + j] !== b[from + j]) {
        same = false;
        break;
      }
    }
    if (same) return k;
  }
  return -1;
}

const EMPTY = Buffer.alloc(0);
/** One scan, its per-field figures and caps, reused by every walk (synchronous, so never two at once). */
const SCAN = new Scan(EMPTY);
const FIELDS = new Array<number>(PROMPT_FIELDS.length).fill(0);
const CAPS: (number | undefined)[] = [undefined, undefined, undefined, undefined];

/**
 * The prompt estimate and output cap of a JSON object text already checked by `requestFields` (whose top-level keys
 * are plain), or undefined when a nested key is escaped (the caller parses the body whole).
 */
export function promptFigures(b: Buffer): PromptFigures | undefined {
  const s = SCAN;
  s.b = b;
  s.i = 0;
  s.top = 0;
  const fields = FIELDS.fill(0);
  const caps = CAPS.fill(undefined);
  s.candidates = undefined;
  let choices: number | undefined;
  try {
    s.blank();
    s.i++;
    s.blank();
    if (b[s.i] !== 0x7d) {
      for (;;) {
        s.name();
        const field = topField(b, s.nameFrom, s.nameTo);
        // Repeated top-level keys: the last occurrence replaces the earlier ones.
        if (field >= 0) fields[field] = s.chars(0);
        else if (field === -6) choices = s.number();
        else if (field <= -2) caps[-field - 2] = field === -5 ? s.generationCap() : s.number();
        else s.skip();
        s.blank();
        if (b[s.i++] === 0x7d) break;
        if (s.i >= b.length) throw GIVE_UP;
        s.blank();
      }
    }
  } catch (err) {
    if (err === GIVE_UP) return undefined;
    throw err;
  }
  finally {
    s.b = EMPTY; // the body is not kept past the walk
    if (STACK.length > 3 * 1024) STACK.length = 0;
  }
  let n = 0;
  for (let f = 0; f < fields.length; f++) n += fields[f]!;
  let cap: number | undefined;
  for (let c = 0; c < caps.length; c++) {
    const v = caps[c];
    if (typeof v === 'number' && v >= 0) {
      cap = v * answers(choices, s.candidates);
      break;
    }
  }
  return { tokens: Math.ceil(n / 4), maxOutputTokens: cap };
}

/**
 * A top-level key: its index in PROMPT_FIELDS, -2 to -4 for CAP_FIELDS, -5 for `generationConfig`, -6 for `n`, -1
 * for others.
 */
function topField(b: Buffer, from: number, to: number): number {
  for (let f = 0; f < PROMPT_FIELDS.length; f++) if (keyIs(b, from, to, PROMPT_FIELDS[f]!)) return f;
  for (let f = 0; f < CAP_FIELDS.length; f++) if (keyIs(b, from, to, CAP_FIELDS[f]!)) return -2 - f;
  if (keyIs(b, from, to, 'n')) return -6;
  return keyIs(b, from, to, 'generationConfig') ? -5 : -1;
}
