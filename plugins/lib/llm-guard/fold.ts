import type { Span } from './pii.ts';

/**
 * The text as a model reads it, for pattern guards (ADR 0159): each code point in its compatibility form (NFKC:
 * full-width digits and letters, mathematical alphanumerics, ligatures, circled digits become their plain forms),
 * Cyrillic and Greek look-alikes of Latin letters as those letters (`LOOKALIKES`, ADR 0181), and
 * the invisible ones (zero-width spaces and joiners, soft hyphens, bidi controls, variation selectors, tag
 * characters: Unicode's default-ignorable code points) left out. `back` maps a span of the folded text to the span of
 * the original text it came from, so a mask covers the original characters, the invisible ones inside included.
 */
export interface FoldedText {
  readonly text: string;
  back(span: Span): Span;
}

const IGNORABLE = /^\p{Default_Ignorable_Code_Point}$/u;
/** Only text outside ASCII can fold; text already in NFKC with nothing invisible in it has nothing to fold. */
const NOT_ASCII = /[^\x00-\x7f]/;
const HAS_IGNORABLE = /\p{Default_Ignorable_Code_Point}/u;

/**
 * Letters of other scripts that look like a Latin letter, as the Latin letter they look like (ADR 0181): the
 * Cyrillic and Greek entries of Unicode's confusables data (UTS #39) whose prototype is one basic Latin letter, case
 * kept (an upper-case look-alike becomes the upper-case letter, so a case-sensitive rule still reads its case). Not
 * the full skeleton: Latin text itself is never changed (`I` stays `I`, `rn` stays `rn`), so a rule written in plain
 * Latin still matches plain Latin. Applied after NFKC, so a mathematical Greek capital alpha folds to `A` too.
 */
export const LOOKALIKES: ReadonlyMap<number, string> = new Map([
  // Cyrillic small: a e o p c y x s i j d q w h palochka
  [0x0430, 'a'], [0x0435, 'e'], [0x043e, 'o'], [0x0440, 'p'], [0x0441, 'c'], [0x0443, 'y'], [0x0445, 'x'],
  [0x0455, 's'], [0x0456, 'i'], [0x0458, 'j'], [0x0501, 'd'], [0x051b, 'q'], [0x051d, 'w'], [0x04bb, 'h'], [0x04cf, 'l'],
  // Cyrillic capital: A B E K M H O P C T X S I J Q W Y palochka
  [0x0410, 'A'], [0x0412, 'B'], [0x0415, 'E'], [0x041a, 'K'], [0x041c, 'M'], [0x041d, 'H'], [0x041e, 'O'], [0x0420, 'P'],
  [0x0421, 'C'], [0x0422, 'T'], [0x0425, 'X'], [0x0405, 'S'], [0x0406, 'I'], [0x0408, 'J'], [0x051a, 'Q'], [0x051c, 'W'],
  [0x04ae, 'Y'], [0x04c0, 'I'],
  // Greek capital: A B E Z H I K M N O P T Y X
  [0x0391, 'A'], [0x0392, 'B'], [0x0395, 'E'], [0x0396, 'Z'], [0x0397, 'H'], [0x0399, 'I'], [0x039a, 'K'], [0x039c, 'M'],
  [0x039d, 'N'], [0x039f, 'O'], [0x03a1, 'P'], [0x03a4, 'T'], [0x03a5, 'Y'], [0x03a7, 'X'],
  // Greek small: o a i v p u y (omicron, alpha, iota, nu, rho, upsilon, gamma)
  [0x03bf, 'o'], [0x03b1, 'a'], [0x03b9, 'i'], [0x03bd, 'v'], [0x03c1, 'p'], [0x03c5, 'u'], [0x03b3, 'y'],
]);
/**
 * Text holding a Greek or Cyrillic letter (where every look-alike is) is walked even when it is in NFKC. One range:
 * a native scan of 1 MiB of other text takes well under a millisecond, a class of the single letters several.
 */
const HAS_LOOKALIKE = /[\u0391-\u051d]/;

/** A code point's NFKC form with look-alike letters as the Latin ones (each maps to one unit: lengths are kept). */
function latinOf(nfkc: string): string {
  let out = nfkc;
  for (let k = 0; k < nfkc.length; k++) {
    const to = LOOKALIKES.get(nfkc.charCodeAt(k));
    if (to !== undefined) out = out.slice(0, k) + to + out.slice(k + 1);
  }
  return out;
}

/** Per BMP code point: 0 not met yet, 1 folds to itself, 2 folds to `BMP_FOLDED` (ADR 0165: one lookup a unit). */
const BMP_STATE = new Uint8Array(0x10000);
/** The few thousand BMP code points that fold, as met (a 64K-slot array would take ~512 KiB at load). */
const BMP_FOLDED = new Map<number, string>();
/** Folded forms of the astral code points met so far (bounded). */
const ASTRAL = new Map<number, string>();
const MAX_ASTRAL = 65_536;

function foldOne(original: string): string {
  return IGNORABLE.test(original) ? '' : latinOf(original.normalize('NFKC'));
}

/** The folded form of a BMP code unit that is no surrogate, or undefined when it folds to itself. */
function foldBmp(c: number): string | undefined {
  let state = BMP_STATE[c]!;
  if (state === 0) {
    const folded = foldOne(String.fromCharCode(c));
    state = folded.length === 1 && folded.charCodeAt(0) === c ? 1 : 2;
    if (state === 2) BMP_FOLDED.set(c, folded);
    BMP_STATE[c] = state;
  }
  return state === 1 ? undefined : BMP_FOLDED.get(c);
}

function foldAstral(cp: number, original: string): string {
  let folded = ASTRAL.get(cp);
  if (folded === undefined) {
    folded = foldOne(original);
    if (ASTRAL.size >= MAX_ASTRAL) ASTRAL.clear();
    ASTRAL.set(cp, folded);
  }
  return folded;
}

/**
 * Where the folded text came from, as segments in folded order: `at` is where a segment starts in the folded text,
 * `from` where it starts in the original; `size` is 0 for a stretch that maps unit for unit (text copied, and code
 * points folded to one unit each, such as full-width letters), else the original length (1 or 2 units) of the one
 * code point all its units come from (a ligature that became two letters, an astral letter). Only a change of length
 * starts a segment, so a long text holds few.
 */
class Origins {
  readonly at: number[] = [0];
  readonly from: number[] = [0];
  readonly size: number[] = [0];
  add(at: number, from: number, size: number): void {
    this.at.push(at);
    this.from.push(from);
    this.size.push(size);
  }
  /** The segment holding folded unit `u` (the last one starting at or before it). */
  private find(u: number): number {
    let lo = 0;
    let hi = this.at.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.at[mid]! <= u) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }
  /** Where the code point of folded unit `u` starts in the original, and where it ends. */
  span(u: number, text: string): Span {
    const k = this.find(u);
    const size = this.size[k]!;
    if (size > 0) return { start: this.from[k]!, end: this.from[k]! + size };
    let start = this.from[k]! + (u - this.at[k]!);
    // The second unit of a pair copied as it was: its code point starts one unit before.
    if (isLow(text.charCodeAt(start)) && start > 0 && isHigh(text.charCodeAt(start - 1))) start--;
    return { start, end: start + (text.codePointAt(start)! > 0xffff ? 2 : 1) };
  }
}

const isHigh = (c: number): boolean => c >= 0xd800 && c <= 0xdbff;
const isLow = (c: number): boolean => c >= 0xdc00 && c <= 0xdfff;

/**
 * The folded text, put together as pieces: stretches of the original as slices, folded code points as UTF-16 units
 * in a buffer (a text of single-character pieces is slow to build by `+=` or to join).
 */
class Builder {
  private readonly pieces: string[] = [];
  private buf = new Uint16Array(256);
  private used = 0;
  private surrogates = false;
  length = 0;
  /** `t` from `from` to `to`: a long stretch as a slice, a short one (between folded characters) as units. */
  slice(t: string, from: number, to: number): void {
    if (to - from < SHORT) return this.units(t, from, to);
    this.flush();
    this.pieces.push(t.slice(from, to));
    this.length += to - from;
  }
  units(t: string, from = 0, to = t.length): void {
    if (this.used + to - from > this.buf.length) {
      const grown = new Uint16Array(Math.max(this.buf.length * 2, this.used + to - from));
      grown.set(this.buf.subarray(0, this.used));
      this.buf = grown;
    }
    for (let k = from; k < to; k++) {
      const c = t.charCodeAt(k);
      if (c >= 0xd800 && c <= 0xdfff) this.surrogates = true;
      this.buf[this.used++] = c;
    }
    this.length += to - from;
  }
  private flush(): void {
    if (this.used === 0) return;
    // A TextDecoder would turn a lone surrogate of the original into U+FFFD: with surrogates, code by code.
    if (!this.surrogates) this.pieces.push(UTF16.decode(this.buf.subarray(0, this.used)));
    else for (let k = 0; k < this.used; k += CHUNK) this.pieces.push(String.fromCharCode(...this.buf.subarray(k, Math.min(k + CHUNK, this.used))));
    this.used = 0;
    this.surrogates = false;
  }
  toString(): string {
    this.flush();
    return this.pieces.join('');
  }
}
const UTF16 = new TextDecoder('utf-16le');
/** Units turned into a string per call (arguments spread onto the stack). */
const CHUNK = 4096;
/** Stretches shorter than this are copied unit by unit; ASCII runs longer than this are skipped by a native scan. */
const SHORT = 64;
/** The next code unit outside ASCII (a native scan skips ASCII stretches). */
const NEXT_NOT_ASCII = /[^\x00-\x7f]/g;

/** The folded view of `text`, or undefined when it is the text itself (nothing in it folds). */
export function foldText(text: string): FoldedText | undefined {
  // Most text needs no walk (native scans): ASCII, or already in its compatibility form with nothing invisible.
  if (!NOT_ASCII.test(text) || (!HAS_IGNORABLE.test(text) && !HAS_LOOKALIKE.test(text) && text.normalize('NFKC') === text)) return undefined;
  const out = new Builder();
  const origins = new Origins();
  /** Original offset minus folded offset in the current unit-for-unit segment. */
  let linear = 0;
  let copied = 0;
  let changed = false;
  let ascii = 0;
  for (let i = 0; i < text.length; ) {
    let c = text.charCodeAt(i);
    if (c < 0x80) {
      if (++ascii < SHORT) {
        i++;
        continue;
      }
      NEXT_NOT_ASCII.lastIndex = i;
      if (NEXT_NOT_ASCII.exec(text) === null) break;
      i = NEXT_NOT_ASCII.lastIndex - 1;
      c = text.charCodeAt(i);
    }
    ascii = 0;
    let size = 1;
    let folded: string | undefined;
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const cp = text.codePointAt(i)!;
      if (cp > 0xffff) {
        size = 2;
        const original = text.slice(i, i + 2);
        folded = foldAstral(cp, original);
        if (folded === original) folded = undefined;
      }
    } else if (c < 0xd800 || c > 0xdfff) folded = foldBmp(c);
    if (folded === undefined) {
      i += size;
      continue;
    }
    changed = true;
    out.slice(text, copied, i);
    if (size === 1 && folded.length === 1) {
      // One unit for one: the stretch keeps mapping unit for unit.
      if (out.length + linear !== i) origins.add(out.length, i, 0);
      out.units(folded);
    } else {
      if (folded.length > 0) origins.add(out.length, i, size);
      out.units(folded);
      origins.add(out.length, i + size, 0);
    }
    linear = i + size - out.length;
    copied = i + size;
    i += size;
  }
  // NFKC changed the text only by composing several code points (`e` and a combining accent): nothing folds alone.
  if (!changed) return undefined;
  out.slice(text, copied, text.length);
  const folded = out.toString();
  return { text: folded, back: (s) => ({ start: origins.span(s.start, text).start, end: origins.span(s.end - 1, text).end }) };
}
