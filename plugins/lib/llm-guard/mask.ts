import type { Span } from './pii.ts';

/**
 * Replace every span of `text` with `replacement`. Overlapping or touching-inside spans are merged first, so one
 * stretch of text gets one placeholder (`<SSN>`, not `<SSN><SSN>`).
 */
export function maskSpans(text: string, spans: readonly Span[], replacement: string): string {
  if (spans.length === 0) return text;
  const sorted = [...spans].sort((a, b) => a.start - b.start || b.end - a.end);
  const merged: { start: number; end: number }[] = [];
  for (const s of sorted) {
    const last = merged[merged.length - 1];
    if (last && s.start < last.end) last.end = Math.max(last.end, s.end);
    else merged.push({ start: s.start, end: s.end });
  }
  let out = '';
  let at = 0;
  for (const s of merged) {
    out += text.slice(at, s.start) + replacement;
    at = s.end;
  }
  return out + text.slice(at);
}

/** Every non-empty match of a global regular expression that `accept` takes (zero-width matches mask nothing). */
export function patternSpans(re: RegExp, text: string, accept?: (match: string) => boolean): Span[] {
  const out: Span[] = [];
  re.lastIndex = 0;
  for (const m of text.matchAll(re)) if (m[0].length > 0 && (!accept || accept(m[0]))) out.push({ start: m.index, end: m.index + m[0].length });
  return out;
}

/**
 * Compile a user's pattern as a JavaScript regular expression for searching (`g`). A leading inline flag group as
 * other regex dialects write it (`(?i)`, `(?is)`) becomes the equivalent flags. Unicode mode (`u`) is used when the
 * pattern allows it. Returns an error message for a pattern that does not compile.
 */
export function compilePattern(pattern: string): RegExp | string {
  let source = pattern;
  let flags = 'g';
  const inline = /^\(\?([imsx]+)\)/.exec(source);
  if (inline) {
    const wanted = inline[1]!;
    if (wanted.includes('x')) return '`(?x)` (extended mode) is not supported; remove the whitespace and comments';
    for (const f of new Set(wanted)) flags += f;
    source = source.slice(inline[0].length);
  }
  try {
    return new RegExp(source, `${flags}u`);
  } catch {
    try {
      return new RegExp(source, flags);
    } catch (err) {
      return `invalid regular expression \`${pattern}\`: ${String((err as Error).message).replace(/^Invalid regular expression: /, '')}`;
    }
  }
}
