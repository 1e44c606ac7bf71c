// Settlements waiting to ride on the next reservation (ADR 0048): summed by counter, and handed to `onDue` when no
// reservation came within SETTLE_DELAY_MS. Shared by the SQLite and Redis stores.
import type { CounterDelta } from './types.ts';

/** Longest a settlement waits for a reservation to ride on before it is written alone. */
export const SETTLE_DELAY_MS = 20;

export class SettlementQueue {
  private readonly byCounter = new Map<string, { amount: number; expiresAt: number }>();
  private timer: NodeJS.Timeout | undefined;
  private readonly onDue: () => void;

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

  /** Queue deltas (summed into a counter's queued amount; the latest expiry wins) and arm the timer if idle. */
  add(deltas: readonly CounterDelta[]): void {
    for (const d of deltas) {
      const q = this.byCounter.get(d.counter);
      if (q) {
        q.amount += d.amount;
        q.expiresAt = d.expiresAt;
      } else this.byCounter.set(d.counter, { amount: d.amount, expiresAt: d.expiresAt });
    }
    if (this.byCounter.size > 0 && this.timer === undefined) this.arm();
  }

  /** Call `onDue` after SETTLE_DELAY_MS (again, after a failed write). */
  arm(): void {
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.onDue();
    }, SETTLE_DELAY_MS);
    this.timer.unref();
  }

  /** The queued settlements, one per counter (the queue keeps them until `clear`). */
  rows(): CounterDelta[] {
    const rows: CounterDelta[] = [];
    for (const [counter, d] of this.byCounter) rows.push({ counter, amount: d.amount, expiresAt: d.expiresAt });
    return rows;
  }

  /** Forget the queue once written; cancels the timer. */
  clear(): void {
    this.byCounter.clear();
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
