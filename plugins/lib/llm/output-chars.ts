// The output a streamed answer has carried so far, in characters, read from each event's raw JSON text without
// parsing it (a passed-through stream parses only the events that carry usage, ADR 0060), and what a stream cut
// before its usage is charged, estimated from it (ADR 0150).
import type { LlmUsage } from './usage.ts';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;

const isSpace = (c: number): boolean => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;

/**
 * The characters of the string values of members named in `keys` (`"text": "..."`, at any depth), an escape counted
 * as one character. A key's name never matches inside a string value, where its quotes would be escaped. Linear in
 * `data`; a value that is not a string (an object, a number) is not counted.
 */
export function outputChars(data: string, keys: readonly string[]): number {
  let n = 0;
  for (const key of keys) {
    const needle = `"${key}"`;
    let at = data.indexOf(needle);
    while (at !== -1) {
      let i = at + needle.length;
      while (i < data.length && isSpace(data.charCodeAt(i))) i++;
      if (data.charCodeAt(i) === COLON) {
        i++;
        while (i < data.length && isSpace(data.charCodeAt(i))) i++;
        if (data.charCodeAt(i) === QUOTE) {
          i++;
          for (; i < data.length; i++) {
            const c = data.charCodeAt(i);
            if (c === QUOTE) break;
            if (c === BACKSLASH) i += data.charCodeAt(i + 1) === 0x75 ? 5 : 1;
            n++;
          }
        }
      }
      at = data.indexOf(needle, i);
    }
  }
  return n;
}

/** What a request allows, for a cut stream's estimate: its prompt estimate and the most output it allows. */
export interface RequestFigures {
  readonly promptTokens: number;
  readonly maxOutputTokens: number | undefined;
}

/**
 * The counts a stream cut before its end adds to the usage its provider `reported`: the output by `outputChars` / 4
 * (the prompt estimate's rule), at most what the request allows, when more than the output reported (or none was);
 * the input by the prompt's estimate when none was reported. Empty when the provider's counts stand.
 */
export function cutUsage(reported: LlmUsage, outputChars: number, figures: RequestFigures | undefined): LlmUsage {
  const add: LlmUsage = {};
  let output = Math.ceil(outputChars / 4);
  if (figures?.maxOutputTokens !== undefined) output = Math.min(output, figures.maxOutputTokens);
  if (reported.outputTokens === undefined || output > reported.outputTokens) add.outputTokens = output;
  if (reported.inputTokens === undefined && figures !== undefined) add.inputTokens = figures.promptTokens;
  return add;
}
