import type { SharedCell } from 'switchyard/sdk';

/** Where a bucket keeps its state: [tokens, lastFill]. A shared cell when the gateway runs several workers. */
function ownCell(tokens: number, lastFill: number): SharedCell {
  const values = new Float64Array([tokens, lastFill]);
  return { values, lock() {}, unlock() {} };
}

/**
 * A token bucket with discrete refills: every `intervalMs`, `perFill` tokens are added, capped at `max`
 * (BEHAVIOUR.md §8.1). It starts full. Refill is computed lazily from the clock, so no timer runs. Its state lives
 * in a cell (`ctx.sharedCell`): every worker of the gateway takes from the same bucket, under the cell's lock.
 */
export class TokenBucket {
  readonly max: number;
  readonly perFill: number;
  readonly intervalMs: number;
  private readonly cell: SharedCell;
  private readonly v: Float64Array;

  constructor(max: number, perFill: number, intervalMs: number, now = Date.now(), cell?: (initial: readonly number[]) => SharedCell) {
    this.max = max;
    this.perFill = perFill;
    this.intervalMs = intervalMs;
    this.cell = cell ? cell([max, now]) : ownCell(max, now);
    this.v = this.cell.values;
  }

  /**
   * Add the refills due by `now`; call with the lock held. A clock stepped back (NTP, a resumed VM) re-anchors the
   * refills at `now`: otherwise none came until the clock caught up, every request refused for the size of the step.
   */
  private refill(now: number): void {
    const v = this.v;
    if (now < v[1]!) v[1] = now;
    const intervals = Math.floor((now - v[1]!) / this.intervalMs);
    if (intervals > 0) {
      v[0] = Math.min(this.max, v[0]! + intervals * this.perFill);
      v[1] = v[1]! + intervals * this.intervalMs;
    }
  }

  /** Take `n` tokens if available. */
  tryTake(n = 1, now = Date.now()): boolean {
    this.cell.lock();
    this.refill(now);
    const ok = this.v[0]! >= n;
    if (ok) this.v[0] = this.v[0]! - n;
    this.cell.unlock();
    return ok;
  }

  /** Take up to `n` tokens without going below zero (after-the-fact accounting); returns how many were taken. */
  drain(n: number, now = Date.now()): number {
    this.cell.lock();
    this.refill(now);
    const taken = Math.min(this.v[0]!, n);
    this.v[0] = this.v[0]! - taken;
    this.cell.unlock();
    return taken;
  }

  /** Give back `n` tokens taken earlier (a reservation larger than the real usage), up to `max`. */
  refund(n: number, now = Date.now()): void {
    this.cell.lock();
    this.refill(now);
    this.v[0] = Math.min(this.max, this.v[0]! + n);
    this.cell.unlock();
  }

  remaining(now = Date.now()): number {
    this.cell.lock();
    this.refill(now);
    const left = this.v[0]!;
    this.cell.unlock();
    return left;
  }

  /** Whole seconds until the next refill (at least 1). */
  resetSeconds(now = Date.now()): number {
    this.cell.lock();
    const last = this.v[1]!;
    this.cell.unlock();
    return Math.max(1, Math.ceil((Math.min(last, now) + this.intervalMs - now) / 1000));
  }
}
