const UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const PART = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/y;

/**
 * The longest duration a config may give: 596h (about 24.8 days). Node's timers hold at most 2^31-1 ms (about
 * 596.5 h) and fire after 1 ms beyond that, so a longer value is refused at load rather than clamped
 * (docs/adr/0016-config-file-reading-and-limits.md).
 */
export const MAX_DURATION_MS = 596 * 3_600_000;

/** The JSON Schema pattern of a Go-syntax duration (`500ms`, `1m30s`, `1.5h`). */
export const DURATION_PATTERN = '^(?:(?:\\d+(?:\\.\\d*)?|\\.\\d+)(?:ns|us|µs|ms|s|m|h))+$|^0$';

/** Parse a Go-syntax duration into milliseconds. Returns undefined when the text is not a duration. */
export function parseDuration(text: string): number | undefined {
  if (text === '0') return 0;
  if (text.length === 0) return undefined;
  let total = 0;
  PART.lastIndex = 0;
  while (PART.lastIndex < text.length) {
    const start = PART.lastIndex;
    const m = PART.exec(text);
    if (!m || m.index !== start) return undefined;
    total += Number(m[1]) * UNIT_MS[m[2]!]!;
  }
  return total;
}
