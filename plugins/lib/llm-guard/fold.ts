import type { Span } from './pii.ts';

/**
 * The text as a model reads it, for pattern guards (ADR 0159): each code point in its compatibility form (NFKC:
 * full-width digits and letters, mathematical alphanumerics, ligatures, circled digits become their plain forms) and
 * the invisible ones (zero-width spaces and joiners, soft hyphens, bidi controls, variation selectors, tag
 * characters: Unicode's default-ignorable code points) left out. `back` maps a span of the folded text to the span of
 * the original text it came from, so a mask covers the original characters, the invisible ones inside included.
 */
export interface FoldedText {
  readonly text: string;
  back(span: Span): Span;
}

const IGNORABLE = /^\p{Default_Ignorable_Code_Point}$/u;
const HAS_IGNORABLE = /\p{Default_Ignorable_Code_Point}/u;
/** Only text outside ASCII can fold to something else. */
const NOT_ASCII = /[^\x00-\x7f]/;

/** Folded forms of the code points met so far (a text repeats few distinct ones; at most MAX_CACHED kept). */
const CACHE = new Map<number, string>();
const MAX_CACHED = 65_536;

function foldedCodePoint(cp: number, original: string): string {
  let folded = CACHE.get(cp);
  if (folded === undefined) {
    folded = IGNORABLE.test(original) ? '' : original.normalize('NFKC');
    if (CACHE.size >= MAX_CACHED) CACHE.clear();
    CACHE.set(cp, folded);
  }
  return folded;
}

/** The folded view of `text`, or undefined when it is the text itself (plain ASCII, or nothing that folds). */
export function foldText(text: string): FoldedText | undefined {
  // Most text needs no walk: ASCII, or already in its compatibility form with nothing invisible.
  if (!NOT_ASCII.test(text) || (!HAS_IGNORABLE.test(text) && text.normalize('NFKC') === text)) return undefined;
  const pieces: string[] = [];
  // For each UTF-16 unit of the folded text: where its code point starts in `text`.
  let from = new Uint32Array(text.length + 16);
  let n = 0;
  let changed = false;
  for (let i = 0; i < text.length; ) {
    const cp = text.codePointAt(i)!;
    const size = cp > 0xffff ? 2 : 1;
    let folded: string;
    if (cp < 0x80) folded = text[i]!;
    else {
      const original = size === 1 ? text[i]! : text.slice(i, i + 2);
      folded = foldedCodePoint(cp, original);
      if (folded !== original) changed = true;
    }
    if (n + folded.length > from.length) {
      const grown = new Uint32Array(from.length * 2 + folded.length);
      grown.set(from);
      from = grown;
    }
    for (let k = 0; k < folded.length; k++) from[n++] = i;
    pieces.push(folded);
    i += size;
  }
  if (!changed) return undefined;
  // A span's end: the end of the code point its last unit came from.
  const endOf = (start: number): number => start + (text.codePointAt(start)! > 0xffff ? 2 : 1);
  return { text: pieces.join(''), back: (s) => ({ start: from[s.start]!, end: endOf(from[s.end - 1]!) }) };
}
