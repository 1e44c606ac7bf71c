import type { BudgetPeriod } from './types.ts';

/** The current window of a period: a tag for counter names and when it ends (epoch ms; 0 = never). */
export interface Window {
  readonly tag: string;
  readonly endsAt: number;
}

const pad = (n: number): string => (n < 10 ? `0${n}` : String(n));

/** The last window computed per period and when it started: every request of a window reuses it (no Date, no strings). */
const last: Partial<Record<BudgetPeriod, { readonly window: Window; readonly from: number }>> = {};

/** UTC calendar windows: counters of every replica agree on them without talking to each other. */
export function windowOf(period: BudgetPeriod, now: number): Window {
  const hit = last[period];
  if (hit !== undefined && now >= hit.from && now < hit.window.endsAt) return hit.window;
  const window = computeWindow(period, now);
  if (window.endsAt !== 0) last[period] = { window, from: startOf(period, now) };
  return window;
}

function startOf(period: BudgetPeriod, now: number): number {
  const d = new Date(now);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  if (period === 'month') return Date.UTC(y, m, 1);
  if (period === 'day') return Date.UTC(y, m, d.getUTCDate());
  if (period === 'hour') return Date.UTC(y, m, d.getUTCDate(), d.getUTCHours());
  return Date.UTC(y, m, d.getUTCDate(), d.getUTCHours(), d.getUTCMinutes());
}

function computeWindow(period: BudgetPeriod, now: number): Window {
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
