import { REDACTED } from './secret-marks.ts';

/** Shorter strings are not scrubbed: they would blank ordinary words and numbers. */
const MIN_LENGTH = 6;

/**
 * A function replacing every occurrence of the given secret strings (and their JSON-escaped form, as JSON log
 * lines carry them) by `<redacted>`; undefined when there is nothing to hide. One regular expression, built once.
 */
export function compileScrubber(secrets: Iterable<string>): ((text: string) => string) | undefined {
  const forms = new Set<string>();
  for (const s of secrets) {
    if (s.length < MIN_LENGTH) continue;
    forms.add(s);
    forms.add(JSON.stringify(s).slice(1, -1));
  }
  if (forms.size === 0) return undefined;
  const alternatives = [...forms].sort((a, b) => b.length - a.length).map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  const pattern = new RegExp(alternatives.join('|'), 'g');
  return (text) => text.replace(pattern, REDACTED);
}
