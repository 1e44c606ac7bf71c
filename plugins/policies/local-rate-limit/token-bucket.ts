/**
 * A token bucket with discrete refills: every `intervalMs`, `perFill` tokens are added, capped at `max`
 * (BEHAVIOUR.md §8.1). It starts full. Refill is computed lazily from the clock, so no timer runs.
 */
export class TokenBucket {
  readonly max: number;
  readonly perFill: number;
  readonly intervalMs: number;
  private tokens: number;
  private lastFill: number;

  constructor(max: number, perFill: number, intervalMs: number, now = Date.now()) {
    this.max = max;
    this.perFill = perFill;
    this.intervalMs = intervalMs;
    this.tokens = max;
    this.lastFill = now;
  }

  private refill(now: number): void {
    const intervals = Math.floor((now - this.lastFill) / this.intervalMs);
    if (intervals > 0) {
      this.tokens = Math.min(this.max, this.tokens + intervals * this.perFill);
      this.lastFill += intervals * this.intervalMs;
    }
  }

  /** Take `n` tokens if available. */
  tryTake(n = 1, now = Date.now()): boolean {
    this.refill(now);
    if (this.tokens < n) return false;
    this.tokens -= n;
    return true;
  }

  /** Take up to `n` tokens without going below zero (after-the-fact accounting); returns how many were taken. */
  drain(n: number, now = Date.now()): number {
    this.refill(now);
    const taken = Math.min(this.tokens, n);
    this.tokens -= taken;
    return taken;
  }

  /** Give back `n` tokens taken earlier (a reservation larger than the real usage), up to `max`. */
  refund(n: number, now = Date.now()): void {
    this.refill(now);
    this.tokens = Math.min(this.max, this.tokens + n);
  }

  remaining(now = Date.now()): number {
    this.refill(now);
    return this.tokens;
  }

  /** Whole seconds until the next refill (at least 1). */
  resetSeconds(now = Date.now()): number {
    return Math.max(1, Math.ceil((this.lastFill + this.intervalMs - now) / 1000));
  }
}
