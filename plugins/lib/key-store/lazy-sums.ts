// Lifetime counters' settlements (CounterDelta.lazy: no budget reads them), summed by counter for LAZY_MS before they
// join the settlement queue (ADR 0072, 0091, 0111): with many keys in use a key's lifetime counters were two of the
// dozen counters each request wrote. Apart from settlement-queue.ts, which holds what a store writes next; the
// functions at the end hand these sums to a store's queue. Shared by the SQLite, Redis and PostgreSQL stores.
import { recalled, remember } from './memos.ts';
import { FloatRows } from './key-rows.ts';
import { KEEP, STATES_MAX } from './settlement-queue.ts';
import type { CounterState, SettlementQueue } from './settlement-queue.ts';
import type { CounterDelta } from './types.ts';

/**
 * Longest a lazy settlement (CounterDelta.lazy) is held, summed, before it rides on a reservation: 5 s (ADR 0111; 1 s
 * before), so 1,000 keys in use write 400 lifetime counters a second instead of 2,000.
 */
export const LAZY_MS = 5000;

/**
 * A lifetime counter's sum, kept and reused between its writes (ADR 0100). Its numbers are a row of the sums' one
 * Float64Array (ADR 0177): as fields, the amount and the time were a number box each, two more cold lines per counter
 * at every add and every write with 1,000 keys in turn.
 */
export interface LazyState {
  readonly counter: string;
  /** Its row in the sums' numbers (given by LazySums). */
  row: number;
  queued: boolean;
}

/** Numbers per row: the amount waiting, its expiry, and when its first part still waiting was added. */
const STRIDE = 3;
const AMOUNT = 0;
const EXPIRES = 1;
const SINCE = 2;

/**
 * Lazy settlements (ADR 0072), summed by counter: a hot key's lifetime counters are written about once per LAZY_MS
 * instead of on every request. Oldest first (a counter keeps its place while later amounts are added to it). A
 * counter's entry stays after its sum is taken (ADR 0100: with 1,000 keys each is taken about once per LAZY_MS, and an
 * entry made and deleted each time was promoted and rehashed the Map), up to STATES_MAX counters.
 */
export class LazySums<L extends LazyState = LazyState> {
  private readonly byCounter = new Map<string, L>();
  /** The counters with a sum waiting, oldest first: `head` up to `end` (taken from the head only). */
  private readonly order: L[] = [];
  private head = 0;
  private end = 0;
  private timer: NodeJS.Timeout | undefined;
  /** When the armed timer fires (Infinity: none armed). */
  private idleAt = Infinity;
  private takenAt = 0;
  /** Times entries were dropped (past STATES_MAX): a memo filled before may hold an entry this no longer has. */
  private dropCount = 0;
  private readonly onIdle: () => void;
  private readonly make: (counter: string) => L;
  /** The entries' numbers (a dropped entry's row is given again). */
  private readonly numbers = new FloatRows(STRIDE);

  /**
   * `onIdle` writes everything (`all`) when nothing took the sums within LAZY_MS; `make` makes a counter's entry (a
   * store's own, with what it keeps per lifetime counter).
   */
  constructor(onIdle: () => void, make: (counter: string) => L = (counter) => ({ counter, row: 0, queued: false }) as L) {
    this.onIdle = onIdle;
    this.make = make;
  }

  /** Counters whose entry is kept (waiting or not). */
  get stateCount(): number {
    return this.byCounter.size;
  }

  /**
   * A lazy delta, found through its memo (ADR 0107) while the entry it keeps is this one's and not dropped since:
   * with 1,000 keys in turn each lookup in thousands of entries was a cache miss, two per request.
   */
  add(d: CounterDelta, now: number): void {
    let q = recalled<L>(d.memo, this, this.dropCount);
    if (q === undefined || q.counter !== d.counter) {
      q = this.entryFor(d.counter);
      remember(d.memo, this, q, this.dropCount);
    }
    if (d.summed !== true) {
      this.addTo(q, d.amount, d.expiresAt, now);
      return;
    }
    // A sum its caller held LAZY_MS already (ADR 0187) counts as first added that long ago: due at once, and an idle
    // store writes it within LAZY_MS (not 2 x LAZY_MS), so it waits in all about as long as an ordinary one.
    this.addTo(q, d.amount, d.expiresAt, now - LAZY_MS);
    if (this.idleAt > now + LAZY_MS) this.arm(LAZY_MS, now);
  }

  /** A counter's entry, made if new (past STATES_MAX the ones not waiting are dropped first). */
  private entryFor(counter: string): L {
    let q = this.byCounter.get(counter);
    if (q === undefined) {
      if (this.byCounter.size >= STATES_MAX) {
        for (const [c, s] of this.byCounter) {
          if (s.queued) continue;
          this.byCounter.delete(c);
          this.numbers.free(s.row);
        }
        this.dropCount++;
      }
      q = this.make(counter);
      q.row = this.numbers.give();
      this.byCounter.set(counter, q);
    }
    return q;
  }

  /** `add` to a counter's entry. */
  private addTo(q: L, amount: number, expiresAt: number, now: number): void {
    const n = this.numbers.nums;
    const at = q.row * STRIDE;
    if (q.queued) n[at + AMOUNT] += amount;
    else {
      n[at + AMOUNT] = amount;
      n[at + SINCE] = now;
      q.queued = true;
      if (this.head === this.end) this.head = this.end = 0;
      else if (this.end === this.order.length && this.head * 2 >= this.end) {
        // Move the waiting sums down rather than grow: the array stays within twice the sums waiting at once.
        this.order.copyWithin(0, this.head, this.end);
        this.end -= this.head;
        this.head = 0;
      }
      this.order[this.end++] = q;
    }
    n[at + EXPIRES] = expiresAt;
    if (this.timer === undefined) this.arm();
  }

  /** After `delay` (2 × LAZY_MS): write everything, unless reservations are taking the sums (then look again later). */
  private arm(delay = LAZY_MS * 2, now = Date.now()): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.idleAt = now + delay;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.idleAt = Infinity;
      if (this.head === this.end) return;
      if (Date.now() - this.takenAt < LAZY_MS) this.arm();
      else this.onIdle();
    }, delay);
    this.timer.unref();
  }

  /** Up to `max` sums first added LAZY_MS or more before `now`, taken out (undefined when none is due). */
  due(now: number, max: number): CounterDelta[] | undefined {
    this.takenAt = now;
    let rows: CounterDelta[] | undefined;
    while (this.head < this.end) {
      const q = this.order[this.head]!;
      if (this.numbers.nums[q.row * STRIDE + SINCE]! > now - LAZY_MS || (rows !== undefined && rows.length >= max)) break;
      (rows ??= []).push(this.take(q));
      this.head++;
    }
    return rows;
  }

  /**
   * `due` without rows: each sum due is handed to `take` with its entry, so a store can add it to its queue without a
   * lookup or an object per sum.
   */
  dueEach(now: number, max: number, take: (q: L, amount: number, expiresAt: number) => void): void {
    this.takenAt = now;
    const nums = this.numbers.nums;
    for (let n = 0; this.head < this.end && n < max; n++) {
      const q = this.order[this.head]!;
      const at = q.row * STRIDE;
      if (nums[at + SINCE]! > now - LAZY_MS) break;
      q.queued = false;
      const amount = nums[at + AMOUNT]!;
      nums[at + AMOUNT] = 0;
      this.head++;
      take(q, amount, nums[at + EXPIRES]!);
    }
  }

  /** Every sum, taken out. */
  all(): CounterDelta[] {
    const rows: CounterDelta[] = [];
    for (let i = this.head; i < this.end; i++) rows.push(this.take(this.order[i]!));
    this.head = this.end = 0;
    if (this.order.length > KEEP) this.order.length = KEEP;
    return rows;
  }

  private take(q: L): CounterDelta {
    q.queued = false;
    const at = q.row * STRIDE;
    const n = this.numbers.nums;
    const row = { counter: q.counter, amount: n[at + AMOUNT]!, expiresAt: n[at + EXPIRES]! };
    n[at + AMOUNT] = 0;
    return row;
  }
}

/**
 * A lifetime counter's sum that also keeps its counter's state in the store's settlement queue once it came due, while
 * the queue's `trims` holds (ADR 0102): a sum joins the queue without a lookup by name (with 1,000 keys, a cold Map
 * search per sum written).
 */
export interface QueuedLazyState<S extends CounterState> extends LazyState {
  state: S | undefined;
  stateTrims: number;
}

/** A new QueuedLazyState (LazySums' `make`). */
export function queuedLazyState<S extends CounterState>(counter: string): QueuedLazyState<S> {
  return { counter, row: 0, queued: false, state: undefined, stateTrims: 0 };
}

/** A sum come due (LazySums.dueEach) joins `pending` on its counter's state, found once and kept on the sum. */
export function joinQueue<S extends CounterState>(pending: SettlementQueue<S>, q: QueuedLazyState<S>, amount: number, expiresAt: number): void {
  let c = q.state;
  if (c === undefined || q.stateTrims !== pending.trims) {
    c = q.state = pending.settling(q.counter);
    q.stateTrims = pending.trims;
  }
  pending.addTo(c, amount, expiresAt);
}

/** Everything waiting becomes due: the lifetime sums and the held refunds (usage reads, close, an idle store). */
export function dueEverything(pending: SettlementQueue, lazy: LazySums): void {
  const all = lazy.all();
  if (all.length > 0) pending.add(all);
  pending.claimAll();
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
