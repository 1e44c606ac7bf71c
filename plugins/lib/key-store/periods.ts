import type { BudgetPeriod } from './types.ts';

/** The current window of a period: a tag for counter names and when it ends (epoch ms; 0 = never). */
export interface Window {
  readonly tag: string;
  readonly endsAt: number;
}

const pad = (n: number): string => (n < 10 ? `0${n}` : String(n));

/** UTC calendar windows: counters of every replica agree on them without talking to each other. */
export function windowOf(period: BudgetPeriod, now: number): Window {
  if (period === 'total') return { tag: 'all', endsAt: 0 };
  const d = new Date(now);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  if (period === 'month') return { tag: `${y}-${pad(m + 1)}`, endsAt: Date.UTC(y, m + 1, 1) };
  const day = d.getUTCDate();
  if (period === 'day') return { tag: `${y}-${pad(m + 1)}-${pad(day)}`, endsAt: Date.UTC(y, m, day + 1) };
  const h = d.getUTCHours();
  if (period === 'hour') return { tag: `${y}-${pad(m + 1)}-${pad(day)}T${pad(h)}`, endsAt: Date.UTC(y, m, day, h + 1) };
  const min = d.getUTCMinutes();
  return { tag: `${y}-${pad(m + 1)}-${pad(day)}T${pad(h)}:${pad(min)}`, endsAt: Date.UTC(y, m, day, h, min + 1) };
}
