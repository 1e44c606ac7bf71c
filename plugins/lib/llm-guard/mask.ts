import { compileUserRegex } from 'switchyard/sdk';
import type { Span } from './pii.ts';

/**
 * Replace every span of `text` with `replacement`. Overlapping or touching-inside spans are merged first, so one
 * stretch of text gets one placeholder (`<SSN>`, not `<SSN><SSN>`).
 */
export function maskSpans(text: string, spans: readonly Span[], replacement: string): string {
  return maskParts([text], spans, replacement)[0]!;
}

/** Spans sorted, overlapping ones merged. */
function mergeSpans(spans: readonly Span[]): Span[] {
  const sorted = [...spans].sort((a, b) => a.start - b.start || b.end - a.end);
  const merged: { start: number; end: number }[] = [];
  for (const s of sorted) {
    const last = merged[merged.length - 1];
    if (last && s.start < last.end) last.end = Math.max(last.end, s.end);
    else merged.push({ start: s.start, end: s.end });
  }
  return merged;
}

/**
 * `maskSpans` over texts read as one (their concatenation; spans index into it): a span across several texts puts
 * its placeholder in the text where it starts and takes its characters out of the others. The merged spans are
 * sorted and disjoint, so one index moves forward through them with the texts: time linear in texts plus spans.
 */
export function maskParts(texts: readonly string[], spans: readonly Span[], replacement: string): string[] {
  if (spans.length === 0) return [...texts];
  const merged = mergeSpans(spans);
  const out: string[] = [];
  let base = 0;
  let next = 0;
  for (const text of texts) {
    const end = base + text.length;
    // Spans ending before this text are done with.
    while (next < merged.length && merged[next]!.end <= base) next++;
    let piece = '';
    let at = base;
    for (let k = next; k < merged.length && merged[k]!.start < end; k++) {
      const s = merged[k]!;
      const from = Math.max(s.start, base);
      piece += text.slice(at - base, from - base) + (s.start >= base ? replacement : '');
      at = Math.min(s.end, end);
    }
    out.push(piece + text.slice(at - base));
    base = end;
  }
  return out;
}

/** Every non-empty match of a global regular expression that `accept` takes (zero-width matches mask nothing). */
export function patternSpans(re: RegExp, text: string, accept?: (match: string) => boolean): Span[] {
  const out: Span[] = [];
  re.lastIndex = 0;
  for (const m of text.matchAll(re)) if (m[0].length > 0 && (!accept || accept(m[0]))) out.push({ start: m.index, end: m.index + m[0].length });
  return out;
}

/**
 * Compile a user's pattern for searching (`g`), in linear time whatever the text (docs/adr/0021). A leading inline
 * flag group as other regex dialects write it (`(?i)`, `(?is)`) becomes the equivalent flags. Returns an error
 * message for a pattern that does not compile or uses a construct the linear-time engine cannot run.
 */
export function compilePattern(pattern: string): RegExp | string {
  return compileUserRegex(pattern, { global: true });
}
