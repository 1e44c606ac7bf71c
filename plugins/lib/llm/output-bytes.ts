// The output a streamed answer has carried so far, in UTF-8 bytes, read from each event's raw JSON text without
// parsing it (a passed-through stream parses only the events that carry usage, ADR 0060), and what a stream cut
// before its usage is charged, estimated from it (ADR 0150; bytes rather than characters: ADR 0157).
import type { LlmUsage } from './usage.ts';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

const isSpace = (c: number): boolean => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;

/** UTF-8 bytes of one UTF-16 code unit (a surrogate is half of a 4-byte character). */
const utf8Bytes = (u: number): number => (u < 0x80 ? 1 : u < 0x800 || (u >= 0xd800 && u <= 0xdfff) ? 2 : 3);

/**
 * The UTF-8 bytes of the string starting after the quote at `i` in `data` (an escape counted as the character it
 * stands for), and where it ends (at its closing quote, or the end of `data`).
 */
function stringBytes(data: string, i: number): { bytes: number; end: number } {
  let bytes = 0;
  for (; i < data.length; i++) {
    const c = data.charCodeAt(i);
    if (c === QUOTE) break;
    if (c === BACKSLASH) {
      if (data.charCodeAt(i + 1) === 0x75) {
        bytes += utf8Bytes(Number.parseInt(data.slice(i + 2, i + 6), 16) || 0);
        i += 5;
      } else {
        bytes++;
        i++;
      }
    } else bytes += utf8Bytes(c);
  }
  return { bytes, end: i };
}

/** The UTF-8 bytes of the JSON object or array text opening at `i` (its strings as they decode), and where it ends. */
function structureBytes(data: string, i: number): { bytes: number; end: number } {
  let bytes = 0;
  let depth = 0;
  for (; i < data.length; i++) {
    const c = data.charCodeAt(i);
    if (c === QUOTE) {
      const s = stringBytes(data, i + 1);
      bytes += s.bytes + 2;
      i = s.end;
      continue;
    }
    bytes++;
    if (c === OPEN_BRACE || c === OPEN_BRACKET) depth++;
    else if ((c === CLOSE_BRACE || c === CLOSE_BRACKET) && --depth === 0) break;
  }
  return { bytes, end: i };
}

/**
 * The UTF-8 bytes of the string values of members named in `keys` (`"text": "..."`, at any depth), and the JSON text
 * of the object or array values of members named in `structures` (Gemini's function-call `args`: what Chat
 * Completions carries as an `arguments` string). A key's name never matches inside a string value, where its quotes
 * would be escaped. Linear in `data`; other values are not counted.
 */
export function outputBytes(data: string, keys: readonly string[], structures: readonly string[] = []): number {
  let n = 0;
  for (const key of keys) n += valueBytes(data, key, false);
  for (const key of structures) n += valueBytes(data, key, true);
  return n;
}

/** The bytes of the values of every member named `key`: its strings, or (`structure`) its objects and arrays. */
function valueBytes(data: string, key: string, structure: boolean): number {
  const needle = `"${key}"`;
  let n = 0;
  let at = data.indexOf(needle);
  while (at !== -1) {
    let i = at + needle.length;
    while (i < data.length && isSpace(data.charCodeAt(i))) i++;
    if (data.charCodeAt(i) === COLON) {
      i++;
      while (i < data.length && isSpace(data.charCodeAt(i))) i++;
      const c = data.charCodeAt(i);
      const value = !structure ? (c === QUOTE ? stringBytes(data, i + 1) : undefined) : c === OPEN_BRACE || c === OPEN_BRACKET ? structureBytes(data, i) : undefined;
      if (value !== undefined) {
        n += value.bytes;
        i = value.end;
      }
    }
    at = data.indexOf(needle, i);
  }
  return n;
}

/** What a request allows, for a cut stream's estimate: its prompt estimate and the most output it allows. */
export interface RequestFigures {
  readonly promptTokens: number;
  readonly maxOutputTokens: number | undefined;
}

/**
 * The counts a stream cut before its end adds to the usage its provider `reported`: the output by its UTF-8 bytes / 4
 * (tokenizers split bytes: about 4 to a token in English, fewer in code and other scripts), at most what the request
 * allows, when more than the output reported (or none was); the input by the prompt's estimate when none was
 * reported. Empty when the provider's counts stand.
 */
export function cutUsage(reported: LlmUsage, outputBytes: number, figures: RequestFigures | undefined): LlmUsage {
  const add: LlmUsage = {};
  let output = Math.ceil(outputBytes / 4);
  if (figures?.maxOutputTokens !== undefined) output = Math.min(output, figures.maxOutputTokens);
  if (reported.outputTokens === undefined || output > reported.outputTokens) add.outputTokens = output;
  if (reported.inputTokens === undefined && figures !== undefined) add.inputTokens = figures.promptTokens;
  return add;
}
