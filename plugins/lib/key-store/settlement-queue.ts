// Settlements waiting to ride on the next reservation (ADR 0048): summed by counter, and handed to `onDue` when no
// reservation came within SETTLE_DELAY_MS. Shared by the SQLite and Redis stores.
import type { CounterDelta } from './types.ts';

/** Longest a settlement waits for a reservation to ride on before it is written alone. */
export const SETTLE_DELAY_MS = 20;

export class SettlementQueue {
  private readonly byCounter = new Map<string, { amount: number; expiresAt: number }>();
  private timer: NodeJS.Timeout | undefined;
  /** When the queue last became non-empty: the timer, once it fires, waits out the rest of SETTLE_DELAY_MS from here. */
  private since = 0;
  private readonly onDue: () => void;
  private readonly fire = (): void => {
    this.timer = undefined;
    if (this.byCounter.size === 0) return;
    const wait = this.since + SETTLE_DELAY_MS - Date.now();
    if (wait > 0) this.schedule(wait);
    else this.onDue();
  };

  /** `onDue` writes the queue alone (and calls `clear` once written, or `arm` to try again). */
  constructor(onDue: () => void) {
    this.onDue = onDue;
  }

  get size(): number {
    return this.byCounter.size;
  }

  /** The amount queued for a counter (0 if none). */
  amountOf(counter: string): number {
    return this.byCounter.get(counter)?.amount ?? 0;
  }

  /** Whether a settlement for `counter` is queued. */
  has(counter: string): boolean {
    return this.byCounter.has(counter);
  }

  /** The queued settlements by counter (live: read it, do not keep it). */
  entries(): IterableIterator<[string, { readonly amount: number; readonly expiresAt: number }]> {
    return this.byCounter.entries();
  }

  /**
   * Queue deltas (summed into a counter's queued amount; the latest expiry wins). The timer is armed when the queue
   * becomes non-empty and none is running: a busy store (a settlement per request, written by the next reservation)
   * keeps one timer going instead of a setTimeout and a clearTimeout per request.
   */
  add(deltas: readonly CounterDelta[]): void {
    if (deltas.length === 0) return;
    if (this.byCounter.size === 0) this.since = Date.now();
    for (const d of deltas) {
      const q = this.byCounter.get(d.counter);
      if (q) {
        q.amount += d.amount;
        q.expiresAt = d.expiresAt;
      } else this.byCounter.set(d.counter, { amount: d.amount, expiresAt: d.expiresAt });
    }
    if (this.timer === undefined) this.schedule(SETTLE_DELAY_MS);
  }

  /** Call `onDue` after SETTLE_DELAY_MS from now (again, after a failed write). */
  arm(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.since = Date.now();
    this.schedule(SETTLE_DELAY_MS);
  }

  private schedule(ms: number): void {
    this.timer = setTimeout(this.fire, ms);
    this.timer.unref();
  }

  /** The queued settlements, one per counter (the queue keeps them until `clear`). */
  rows(): CounterDelta[] {
    const rows: CounterDelta[] = [];
    for (const [counter, d] of this.byCounter) rows.push({ counter, amount: d.amount, expiresAt: d.expiresAt });
    return rows;
  }

  /** Forget the queue once written. A running timer is left to find the queue empty (or refilled, and wait on). */
  clear(): void {
    this.byCounter.clear();
  }
}

/** Longest a lazy settlement (CounterDelta.lazy) is held, summed, before it rides on a reservation. */
export const LAZY_MS = 1000;

/**
 * Lazy settlements (ADR 0072), summed by counter: a hot key's lifetime counters are written about once a second
 * instead of on every request. Oldest first (a counter keeps its place while later amounts are added to it).
 */
export class LazySums {
  private readonly byCounter = new Map<string, { amount: number; expiresAt: number; readonly since: number }>();
  private timer: NodeJS.Timeout | undefined;
  private takenAt = 0;
  private readonly onIdle: () => void;

  /** `onIdle` writes everything (`all`) when nothing took the sums within LAZY_MS. */
  constructor(onIdle: () => void) {
    this.onIdle = onIdle;
  }

  add(d: CounterDelta, now: number): void {
    const q = this.byCounter.get(d.counter);
    if (q) {
      q.amount += d.amount;
      q.expiresAt = d.expiresAt;
    } else this.byCounter.set(d.counter, { amount: d.amount, expiresAt: d.expiresAt, since: now });
    if (this.timer === undefined) this.arm();
  }

  /** After 2 × LAZY_MS: write everything, unless reservations are taking the sums (then look again later). */
  private arm(): void {
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.byCounter.size === 0) return;
      if (Date.now() - this.takenAt < LAZY_MS) this.arm();
      else this.onIdle();
    }, LAZY_MS * 2);
    this.timer.unref();
  }

  /** Up to `max` sums first added LAZY_MS or more before `now`, taken out (undefined when none is due). */
  due(now: number, max: number): CounterDelta[] | undefined {
    this.takenAt = now;
    let rows: CounterDelta[] | undefined;
    for (const [counter, q] of this.byCounter) {
      if (q.since > now - LAZY_MS || (rows !== undefined && rows.length >= max)) break;
      (rows ??= []).push({ counter, amount: q.amount, expiresAt: q.expiresAt });
      this.byCounter.delete(counter);
    }
    return rows;
  }

  /** Every sum, taken out. */
  all(): CounterDelta[] {
    const rows: CounterDelta[] = [];
    for (const [counter, q] of this.byCounter) rows.push({ counter, amount: q.amount, expiresAt: q.expiresAt });
    this.byCounter.clear();
    return rows;
  }
}
