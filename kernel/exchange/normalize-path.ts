/**
 * Request path normalisation, run before route selection (docs/adr/0013-path-normalisation.md).
 *
 * The upstream receives the path the routes were matched against, so a path that resolves elsewhere
 * (`/api/../private`) can no longer match one route and be resolved into another by the upstream.
 */

/** How a path is normalised (`config.mergeSlashes`, `config.escapedSlashes`). */
export interface PathOptions {
  /** `//` becomes `/`. */
  readonly mergeSlashes: boolean;
  /** `%2F` and `%5C` in a segment: true => 400, false => kept escaped (never a separator). */
  readonly rejectEscapedSlashes: boolean;
}

export const DEFAULT_PATH_OPTIONS: PathOptions = Object.freeze({ mergeSlashes: true, rejectEscapedSlashes: true });

/** Why a path was refused (answered with 400). Preallocated: refusing allocates nothing either. */
export class PathRejection {
  readonly message: string;
  constructor(message: string) {
    this.message = message;
  }
}

const NOT_ORIGIN_FORM = new PathRejection('the request target must be a path starting with `/` or an absolute `http(s)://` URL');
const BAD_ESCAPE = new PathRejection('the path has an invalid percent-escape');
const NUL = new PathRejection('the path contains an encoded NUL (%00)');
const BACKSLASH = new PathRejection('the path contains a backslash');
const ESCAPED_SLASH = new PathRejection('the path contains an encoded slash (%2F) or backslash (%5C)');
const DOT_PARAMS = new PathRejection('the path has a `.` or `..` segment with parameters (`..;`)');
const OVERLONG = new PathRejection('the path contains an overlong UTF-8 encoding (such as %C0%AE for `.`)');

const SLASH = 47;
const DOT = 46;
const SEMI = 59;
const PERCENT = 37;
const BACKSLASH_CODE = 92;

/**
 * The normal form of `path` (the part of the request target before `?`), or why it is refused.
 * Fast path: one scan that returns `path` itself when there is nothing to do (no `%`, `\`, dot segment, or `//`
 * when merging).
 */
export function normalizePath(path: string, options: PathOptions): string | PathRejection {
  const len = path.length;
  if (len === 0 || path.charCodeAt(0) !== SLASH) return NOT_ORIGIN_FORM;
  const merge = options.mergeSlashes;
  for (let i = 0; i < len; i++) {
    const c = path.charCodeAt(i);
    if (c === PERCENT || c === BACKSLASH_CODE) return slowNormalize(path, options);
    if (c !== SLASH || i + 1 === len) continue;
    const n = path.charCodeAt(i + 1);
    if (n === SLASH) {
      if (merge) return slowNormalize(path, options);
    } else if (n === DOT) {
      if (i + 2 === len) return slowNormalize(path, options);
      const n2 = path.charCodeAt(i + 2);
      if (n2 === SLASH || n2 === SEMI) return slowNormalize(path, options);
      if (n2 === DOT && (i + 3 === len || path.charCodeAt(i + 3) === SLASH || path.charCodeAt(i + 3) === SEMI)) {
        return slowNormalize(path, options);
      }
    }
  }
  return path;
}

/** Length of `http://` or `https://` (any case) opening an absolute-form request target (RFC 9112 §3.2.2), else 0. */
export function absoluteFormScheme(target: string): number {
  const prefix = target.slice(0, 8).toLowerCase();
  return prefix.startsWith('http://') ? 7 : prefix === 'https://' ? 8 : 0;
}

const HEX = '0123456789ABCDEF';

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 65 && c <= 70) return c - 55;
  if (c >= 97 && c <= 102) return c - 87;
  return -1;
}

/** RFC 3986 §2.3 unreserved: ALPHA / DIGIT / `-` / `.` / `_` / `~`. */
function isUnreserved(v: number): boolean {
  return (v >= 65 && v <= 90) || (v >= 97 && v <= 122) || (v >= 48 && v <= 57) || v === 45 || v === 46 || v === 95 || v === 126;
}

/** `.` or `..` followed by `;` or `%3B`: a dot segment to servers that strip path parameters (Tomcat, Jetty). */
function isDotWithParams(segment: string): boolean {
  let i = 0;
  if (segment.charCodeAt(0) === DOT) i = segment.charCodeAt(1) === DOT ? 2 : 1;
  if (i === 0) return false;
  return segment.charCodeAt(i) === SEMI || (segment.charCodeAt(i) === PERCENT && segment.charCodeAt(i + 1) === 51 && (segment.charCodeAt(i + 2) | 32) === 98);
}

function slowNormalize(path: string, options: PathOptions): string | PathRejection {
  // 1. Percent-escapes: unreserved ones decoded (RFC 3986 §6.2.2.2), the rest kept with upper-case hex (§6.2.2.1).
  let decoded = '';
  let from = 0;
  // The byte of the escape that ended at `from`: a UTF-8 lead whose next byte says whether it is overlong.
  let lead = -1;
  const len = path.length;
  for (let i = 0; i < len; i++) {
    const c = path.charCodeAt(i);
    if (c === BACKSLASH_CODE) return BACKSLASH;
    if (c !== PERCENT) continue;
    const hi = i + 2 < len ? hexValue(path.charCodeAt(i + 1)) : -1;
    const lo = hi === -1 ? -1 : hexValue(path.charCodeAt(i + 2));
    if (lo === -1) return BAD_ESCAPE;
    const v = hi * 16 + lo;
    if (v === 0) return NUL;
    // Overlong UTF-8 (ADR 0166): %C0/%C1 lead two bytes that can only be ASCII, %E0 then %80-%9F and %F0 then
    // %80-%8F spell a shorter character in more bytes. A decoder that accepts them reads `%C0%AE` as `.` (Tomcat,
    // CVE-2008-2938): dot segments and slashes the normalisation never saw.
    if (v === 0xc0 || v === 0xc1 || (from === i && ((lead === 0xe0 && v >= 0x80 && v <= 0x9f) || (lead === 0xf0 && v >= 0x80 && v <= 0x8f)))) return OVERLONG;
    lead = v;
    decoded += path.slice(from, i);
    if (isUnreserved(v)) decoded += String.fromCharCode(v);
    else if ((v === SLASH || v === BACKSLASH_CODE) && options.rejectEscapedSlashes) return ESCAPED_SLASH;
    else decoded += `%${HEX[hi]}${HEX[lo]}`;
    from = i + 3;
    i += 2;
  }
  if (from > 0) decoded += path.slice(from);
  else decoded = path;
  // 2. Dot segments removed (RFC 3986 §5.2.4), empty segments merged when configured; a trailing `/` is kept.
  const segments = decoded.split('/');
  const out: string[] = [];
  const last = segments.length - 1;
  for (let i = 1; i <= last; i++) {
    const s = segments[i]!;
    if (s === '.' || s === '..') {
      if (s === '..') out.pop();
      if (i === last) out.push('');
      continue;
    }
    if (s === '' && i !== last && options.mergeSlashes) continue;
    if (isDotWithParams(s)) return DOT_PARAMS;
    out.push(s);
  }
  return `/${out.join('/')}`;
}
