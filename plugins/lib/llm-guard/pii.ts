/**
 * The builtin detectors of the `regex` prompt guard (BEHAVIOUR.md §2.9): US social security numbers, credit card
 * numbers, phone numbers, e-mail addresses and Canadian social insurance numbers. Each finds spans in a text; the
 * guard masks them as `<ENTITY>` or rejects the text. Written for this gateway from the formats' public rules.
 */
import { patternSpans } from './mask.ts';

export type Builtin = 'ssn' | 'creditCard' | 'phoneNumber' | 'email' | 'caSin';

export const BUILTINS: readonly Builtin[] = ['ssn', 'creditCard', 'phoneNumber', 'email', 'caSin'];

/** The entity name a builtin's matches are masked with (`<SSN>`). */
export const ENTITY: Readonly<Record<Builtin, string>> = {
  ssn: 'SSN',
  creditCard: 'CREDIT_CARD',
  phoneNumber: 'PHONE_NUMBER',
  email: 'EMAIL_ADDRESS',
  caSin: 'CA_SIN',
};

/** A match: `text.slice(start, end)`. */
export interface Span {
  readonly start: number;
  readonly end: number;
}

const digitsOf = (s: string): string => s.replace(/\D/g, '');

// --- e-mail ---------------------------------------------------------------------------------------------------

const LOCAL_CHAR = /[a-zA-Z0-9_.+-]/;
const LABEL_CHAR = /[a-zA-Z0-9-]/;
const DOMAIN_CHAR = /[a-zA-Z0-9.-]/;

/**
 * Addresses as the pattern `[a-zA-Z0-9_.+-]+@[a-zA-Z0-9-]+\.[a-zA-Z0-9-.]+` finds them (leftmost, longest), found by
 * scanning outwards from each `@`: linear in the text, where a backtracking regex is quadratic on long runs of
 * address characters (a prompt is attacker-controlled input).
 */
function emailSpans(text: string): Span[] {
  const out: Span[] = [];
  let floor = 0;
  for (let at = text.indexOf('@'); at !== -1; at = text.indexOf('@', at + 1)) {
    if (at < floor) continue;
    let start = at;
    while (start > floor && LOCAL_CHAR.test(text[start - 1]!)) start--;
    if (start === at) continue;
    let i = at + 1;
    while (i < text.length && LABEL_CHAR.test(text[i]!)) i++;
    if (i === at + 1 || text[i] !== '.') continue;
    let end = i + 1;
    while (end < text.length && DOMAIN_CHAR.test(text[end]!)) end++;
    if (end === i + 1) continue;
    out.push({ start, end });
    floor = end;
  }
  return out;
}

// --- US social security number --------------------------------------------------------------------------------

/** `123-45-6789`, `123 45 6789`, `123.45.6789` (one separator throughout) or nine bare digits. */
const SSN = /(?<![\w.-])\d{3}([- .]?)\d{2}\1\d{4}(?![\w-]|\.\d)/g;

/** Numbers the SSA never issues: area 000 or 666, group 00, serial 0000, or one digit repeated. */
function validSsn(match: string): boolean {
  const d = digitsOf(match);
  if (d.length !== 9) return false;
  if (/^(\d)\1{8}$/.test(d)) return false;
  const area = d.slice(0, 3);
  if (area === '000' || area === '666') return false;
  if (d.slice(3, 5) === '00' || d.slice(5) === '0000') return false;
  return true;
}

// --- credit card ----------------------------------------------------------------------------------------------

/** Visa (4), Mastercard (51-55), Discover (6), Amex and others (3), Diners (1); digit groups split by `-` or space. */
const CARD = /\b(?:(?:4\d{3}|5[0-5]\d{2}|6\d{3}|3\d{3})[- ]?\d{3,4}[- ]?\d{3,4}[- ]?\d{3,5}|1\d{3}[- ]?\d{3,4}[- ]?\d{3,4}[- ]?\d{4,5})\b/g;

/** The Luhn checksum every card number carries. */
export function luhnValid(digits: string): boolean {
  let sum = 0;
  let double = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let n = digits.charCodeAt(i) - 48;
    if (double) {
      n *= 2;
      if (n > 9) n -= 9;
    }
    sum += n;
    double = !double;
  }
  return digits.length > 0 && sum % 10 === 0;
}

// --- Canadian social insurance number --------------------------------------------------------------------------

const CA_SIN = /\b\d{3}[- ]\d{3}[- ]\d{3}\b|\b\d{9}\b/g;

// --- phone numbers ---------------------------------------------------------------------------------------------

/**
 * Runs of the characters phone numbers are written with: an optional `+` or `(`, digits, spaces, `-`, `.` and
 * parentheses, ending in a digit (or `)`). One bounded character class: linear, unlike nested digit-group patterns.
 */
const PHONE_RUN = /[+(]?\d[\d ().-]*\d\)?/g;

/** Dates and times that look like digit groups (`01.02.2024`, `2024-01-15`). */
const DATE_LIKE = /^(?:\d{1,2}[./-]\d{1,2}[./-]\d{2,4}|\d{4}[./-]\d{1,2}[./-]\d{1,2})$/;

/** North American numbering plan (US, CA): NPA and exchange start with 2-9. */
const nanp = (national: string): boolean => /^[2-9]\d{2}[2-9]\d{6}$/.test(national);

/**
 * Whether `digits` (no `+`) is a possible number with country code: the regions the reference checks (US/CA `1`,
 * GB `44`, DE `49`, IL `972`, IN `91`, BR `55`) by their national lengths, any other code by E.164 length.
 */
function possibleInternational(digits: string): boolean {
  if (digits.length > 15) return false;
  if (digits.startsWith('1')) return nanp(digits.slice(1));
  if (digits.startsWith('44')) return /^[1-9]\d{8,9}$/.test(digits.slice(2));
  if (digits.startsWith('49')) return /^[1-9]\d{5,12}$/.test(digits.slice(2));
  if (digits.startsWith('972')) return /^[2-9]\d{7,8}$/.test(digits.slice(3));
  if (digits.startsWith('91')) return /^[1-9]\d{9}$/.test(digits.slice(2));
  if (digits.startsWith('55')) return /^[1-9]{2}\d{8,9}$/.test(digits.slice(2));
  return digits.length >= 8 && !digits.startsWith('0');
}

/** Whether `digits` is a possible national-format number in one of US, CA, GB, DE, IL, IN or BR. */
function possibleNational(digits: string): boolean {
  if (nanp(digits) || (digits.length === 11 && digits.startsWith('1') && nanp(digits.slice(1)))) return true; // US, CA
  if (digits.startsWith('0') && !digits.startsWith('00')) {
    const n = digits.length;
    if (n === 10 || n === 11) return true; // GB (01..., 02..., 07...), IN with trunk 0 (11)
    if (n >= 7 && n <= 13 && /^0[2-9]/.test(digits)) return true; // DE (area codes 02-09), IL (0[2-9]..., 9-10 digits)
    return false;
  }
  if (/^[6-9]\d{9}$/.test(digits)) return true; // IN mobile
  if (/^[1-9]{2}9\d{8}$/.test(digits) || /^[1-9]{2}[2-5]\d{7}$/.test(digits)) return true; // BR mobile, landline
  return false;
}

function validPhone(candidate: string): boolean {
  if (DATE_LIKE.test(candidate)) return false;
  if ((candidate.match(/\(/g)?.length ?? 0) !== (candidate.match(/\)/g)?.length ?? 0)) return false;
  const digits = digitsOf(candidate);
  if (digits.length < 7 || digits.length > 15) return false;
  return candidate.startsWith('+') ? possibleInternational(digits) : possibleNational(digits);
}

/** Whether a run may start at `start` / end at `end`: not glued to a word, a path, a version or a longer number. */
function standsAlone(text: string, start: number, end: number): boolean {
  const before = text[start - 1];
  if (before !== undefined && /[\w/.+-]/.test(before)) return false;
  const after = text[end];
  if (after !== undefined && (/[\w/]/.test(after) || ((after === '.' || after === '-') && /\d/.test(text[end + 1] ?? '')))) return false;
  return true;
}

/**
 * Phone numbers: each run of phone characters is checked whole; a run that is no number (two numbers side by side)
 * is split at its spaces and the longest valid stretch from each piece is taken.
 */
function phoneSpans(text: string): Span[] {
  const out: Span[] = [];
  for (const m of text.matchAll(PHONE_RUN)) {
    const run = m[0];
    const base = m.index;
    if (!standsAlone(text, base, base + run.length)) continue;
    if (validPhone(run)) {
      out.push({ start: base, end: base + run.length });
      continue;
    }
    // Pieces between spaces, with their offsets in the run.
    const pieces: { start: number; end: number }[] = [];
    for (const p of run.matchAll(/[^ ]+/g)) pieces.push({ start: p.index, end: p.index + p[0].length });
    for (let i = 0; i < pieces.length; ) {
      let taken = false;
      for (let j = Math.min(pieces.length - 1, i + 6); j >= i; j--) {
        const s = pieces[i]!.start;
        const e = pieces[j]!.end;
        if (e - s <= 32 && validPhone(run.slice(s, e))) {
          out.push({ start: base + s, end: base + e });
          i = j + 1;
          taken = true;
          break;
        }
      }
      if (!taken) i++;
    }
  }
  return out;
}

/** Spans of `builtin` in `text`, in text order. */
export function findBuiltin(builtin: Builtin, text: string): Span[] {
  switch (builtin) {
    case 'email':
      return emailSpans(text);
    case 'ssn':
      return patternSpans(SSN, text, validSsn);
    case 'creditCard':
      return patternSpans(CARD, text, (m) => luhnValid(digitsOf(m)));
    case 'caSin':
      return patternSpans(CA_SIN, text);
    case 'phoneNumber':
      return phoneSpans(text);
  }
}
