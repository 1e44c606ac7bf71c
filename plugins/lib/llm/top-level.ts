// Picking a few top-level members out of a JSON object's bytes without parsing the rest (ADR 0060): the usage and
// model of a passed-through answer, whose bytes go to the client untouched.
import type { Obj } from './json.ts';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJ = 0x7b;
const CLOSE_OBJ = 0x7d;
const OPEN_ARR = 0x5b;
const CLOSE_ARR = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;

const isBlank = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/** Past this many bytes a string's end is looked for by `indexOf` (memchr) rather than byte by byte. */
const LONG = 32;

/** The index after the string that opens at `at` (its `"`), or -1 when it does not end. */
function stringEnd(b: Buffer, at: number, end: number): number {
  let i = at + 1;
  const short = Math.min(end, i + LONG);
  for (; i < short; i++) {
    const c = b[i]!;
    if (c === QUOTE) return i + 1;
    if (c === BACKSLASH) i++;
  }
  // A long string (an answer's text): jump from quote to quote, an escaped one (odd backslashes before it) skipped.
  for (;;) {
    if (i >= end) return -1;
    const q = b.indexOf(QUOTE, i);
    if (q === -1) return -1;
    let backslashes = 0;
    for (let k = q - 1; k > at && b[k] === BACKSLASH; k--) backslashes++;
    if ((backslashes & 1) === 0) return q + 1;
    i = q + 1;
  }
}

/** The index after the value that starts at `at`, or -1 when its brackets or strings do not close. */
function valueEnd(b: Buffer, at: number, end: number): number {
  const c = b[at]!;
  if (c === QUOTE) return stringEnd(b, at, end);
  if (c !== OPEN_OBJ && c !== OPEN_ARR) {
    // A number or literal: up to the next delimiter (JSON.parse of a picked member checks it).
    let i = at;
    while (i < end) {
      const d = b[i]!;
      if (d === COMMA || d === CLOSE_OBJ || d === CLOSE_ARR || isBlank(d)) break;
      i++;
    }
    return i;
  }
  let depth = 0;
  for (let i = at; i < end; i++) {
    const d = b[i]!;
    if (d === QUOTE) {
      i = stringEnd(b, i, end);
      if (i === -1) return -1;
      i--;
    } else if (d === OPEN_OBJ || d === OPEN_ARR) depth++;
    else if (d === CLOSE_OBJ || d === CLOSE_ARR) {
      if (--depth === 0) return i + 1;
    }
  }
  return -1;
}

/** A picked value: a string of plain characters decoded as it is, anything else parsed (which checks it). */
function memberValue(b: Buffer, from: number, to: number): unknown {
  if (b[from] === QUOTE) {
    let plain = true;
    for (let i = from + 1; i < to - 1; i++) {
      const c = b[i]!;
      if (c === BACKSLASH || c < 0x20) {
        plain = false;
        break;
      }
    }
    if (plain) return b.toString('utf8', from + 1, to - 1);
  }
  return JSON.parse(b.toString('utf8', from, to)) as unknown;
}

/** Whether the key bytes b[from, to) (no quotes) are `key` (plain ASCII keys; an escaped key never matches). */
function keyIs(b: Uint8Array, from: number, to: number, key: string): boolean {
  if (to - from !== key.length) return false;
  for (let i = 0; i < key.length; i++) if (b[from + i] !== key.charCodeAt(i)) return false;
  return true;
}

/**
 * The members named `keys` of the JSON object text `b`, each parsed (the last of a duplicated key, as
 * `JSON.parse`); undefined when `b` is not an object this walk can follow (the caller parses it whole then). Only the
 * object's structure and the picked values are checked: a malformed member elsewhere goes unnoticed.
 */
export function pickTopLevel(b: Buffer, keys: readonly string[]): Obj | undefined {
  const end = b.length;
  let i = 0;
  while (i < end && isBlank(b[i]!)) i++;
  if (b[i] !== OPEN_OBJ) return undefined;
  i++;
  const out: Obj = {};
  let first = true;
  for (;;) {
    while (i < end && isBlank(b[i]!)) i++;
    if (first && b[i] === CLOSE_OBJ) break;
    first = false;
    if (b[i] !== QUOTE) return undefined;
    const keyFrom = i + 1;
    let keyTo = keyFrom;
    for (; keyTo < end; keyTo++) {
      const c = b[keyTo]!;
      if (c === QUOTE) break;
      // An escaped key (`"mo\u0064el"`) is one JSON.parse would decode: such a text is parsed whole.
      if (c === BACKSLASH) return undefined;
    }
    if (keyTo >= end) return undefined;
    i = keyTo + 1;
    while (i < end && isBlank(b[i]!)) i++;
    if (b[i] !== COLON) return undefined;
    i++;
    while (i < end && isBlank(b[i]!)) i++;
    if (i >= end) return undefined;
    const valueFrom = i;
    i = valueEnd(b, i, end);
    if (i === -1 || i === valueFrom) return undefined;
    // Indexed: a `for...of` makes an iterator and its results per member where the walk is not optimised.
    for (let k = 0; k < keys.length; k++) {
      const key = keys[k]!;
      if (keyIs(b, keyFrom, keyTo, key)) {
        out[key] = memberValue(b, valueFrom, i);
        break;
      }
    }
    while (i < end && isBlank(b[i]!)) i++;
    if (b[i] === COMMA) {
      i++;
      continue;
    }
    if (b[i] === CLOSE_OBJ) break;
    return undefined;
  }
  i++;
  while (i < end && isBlank(b[i]!)) i++;
  return i === end ? out : undefined;
}
