// Settlements waiting to ride on the next reservation (ADR 0048): summed by counter, and handed to `onDue` when no
// reservation came within SETTLE_DELAY_MS. Shared by the SQLite and Redis stores.
import type { CounterDelta } from './types.ts';

/** Longest a settlement waits for a reservation to ride on before it is written alone. */
export const SETTLE_DELAY_MS = 20;

/** One counter's queued sum (entries are reused once written: read, never kept). */
export interface QueuedSettlement {
  counter: string;
  amount: number;
  expiresAt: number;
}

/** Up to this many counters a queue is searched in order; past it, through a Map (many keys' settlements). */
const SMALL = 16;
/** Entries kept for reuse after a write, at most (a burst of thousands is not held on to). */
const KEEP = 1024;

export class SettlementQueue {
  /**
   * The queued counters, in the order they were queued, `count` of them live; the rest are spare entries for the next
   * ones. A busy store queues and writes a few settlements per request: searched in order, reused in place, they
   * allocate nothing per request (a Map cleared per reservation made a new table and an entry object per counter).
   */
  private readonly list: QueuedSettlement[] = [];
  private count = 0;
  /** Every live entry by counter, once there are more than SMALL (undefined until then). */
  private index: Map<string, QueuedSettlement> | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** When the queue last became non-empty: the timer, once it fires, waits out the rest of SETTLE_DELAY_MS from here. */
  private since = 0;
  private readonly onDue: () => void;
  private readonly fire = (): void => {
    this.timer = undefined;
    if (this.count === 0) return;
    const wait = this.since + SETTLE_DELAY_MS - Date.now();
    if (wait > 0) this.schedule(wait);
    else this.onDue();
  };

  /** `onDue` writes the queue alone (and calls `clear` once written, or `arm` to try again). */
  constructor(onDue: () => void) {
    this.onDue = onDue;
  }

  get size(): number {
    return this.count;
  }

  /** The `i`th queued settlement (0 ≤ i < size), in the order queued (live: read it, do not keep it). */
  at(i: number): Readonly<QueuedSettlement> {
    return this.list[i]!;
  }

  private find(counter: string): QueuedSettlement | undefined {
    if (this.index !== undefined) return this.index.get(counter);
    const list = this.list;
    for (let i = 0; i < this.count; i++) if (list[i]!.counter === counter) return list[i];
    return undefined;
  }

  /** The amount queued for a counter (0 if none). */
  amountOf(counter: string): number {
    return this.find(counter)?.amount ?? 0;
  }

  /** Whether a settlement for `counter` is queued. */
  has(counter: string): boolean {
    return this.find(counter) !== undefined;
  }

  /**
   * Queue deltas (summed into a counter's queued amount; the latest expiry wins). The timer is armed when the queue
   * becomes non-empty and none is running: a busy store (a settlement per request, written by the next reservation)
   * keeps one timer going instead of a setTimeout and a clearTimeout per request.
   */
  add(deltas: readonly CounterDelta[]): void {
    for (let i = 0; i < deltas.length; i++) this.addOne(deltas[i]!);
  }

  /** `add` of one delta. */
  addOne(d: CounterDelta): void {
    if (this.count === 0) this.since = Date.now();
    const q = this.find(d.counter);
    if (q) {
      q.amount += d.amount;
      q.expiresAt = d.expiresAt;
    } else {
      let e = this.list[this.count];
      if (e === undefined) this.list.push((e = { counter: d.counter, amount: d.amount, expiresAt: d.expiresAt }));
      else {
        e.counter = d.counter;
        e.amount = d.amount;
        e.expiresAt = d.expiresAt;
      }
      this.count++;
      if (this.index !== undefined) this.index.set(e.counter, e);
      else if (this.count > SMALL) {
        this.index = new Map();
        for (let k = 0; k < this.count; k++) this.index.set(this.list[k]!.counter, this.list[k]!);
      }
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
    for (let i = 0; i < this.count; i++) {
      const d = this.list[i]!;
      rows.push({ counter: d.counter, amount: d.amount, expiresAt: d.expiresAt });
    }
    return rows;
  }

  /** Forget the queue once written. A running timer is left to find the queue empty (or refilled, and wait on). */
  clear(): void {
    this.count = 0;
    this.index = undefined;
    if (this.list.length > KEEP) this.list.length = KEEP;
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

/** A request's settlement: lifetime deltas (`lazy`) summed in `lazy` (ADR 0072, 0091), the others queued in `pending`. */
export function queueSettlement(deltas: readonly CounterDelta[], pending: SettlementQueue, lazy: LazySums): void {
  let now = 0;
  for (let i = 0; i < deltas.length; i++) {
    const d = deltas[i]!;
    if (d.lazy) lazy.add(d, (now ||= Date.now()));
    else pending.addOne(d);
  }
}
