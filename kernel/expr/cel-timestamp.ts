/**
 * `timestamp(string)` as CEL defines it: RFC 3339 (cel-go parses with Go's `time.RFC3339`). cel-js hands the text to
 * `Date` when it is 20-30 characters long, so it refused a fraction past milliseconds with an offset
 * (`...00.123456+01:00`), and took what `Date` takes: a blank or `t` for `T`, `2023-02-30` (as March 2), hour 24,
 * `+002023`. Here the text is checked as cel-go checks it and handed on in the one form `Date` reads exactly.
 * Timestamps are `Date`s, milliseconds: further digits of the fraction are dropped (cel-go keeps nanoseconds).
 */
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|[+-](\d{2}):(\d{2}))$/;

const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function daysIn(month: number, year: number): number {
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return month === 2 && leap ? 29 : DAYS[month - 1]!;
}

/** `text` as `YYYY-MM-DDTHH:MM:SS.mmm` and its zone, or undefined when it is not an RFC 3339 timestamp. */
export function rfc3339ForDate(text: string): string | undefined {
  const m = RFC3339.exec(text);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  if (month < 1 || month > 12 || day < 1 || day > daysIn(month, year) || hour > 23 || minute > 59 || second > 59) return undefined;
  if (m[9] !== undefined && (Number(m[9]) > 23 || Number(m[10]) > 59)) return undefined;
  const ms = (m[7] ?? '').slice(0, 3).padEnd(3, '0');
  return `${text.slice(0, 19)}.${ms}${m[8]}`;
}
