// Settlements waiting to be written (ADR 0048, revised by ADR 0097), summed by counter and split by sign. A charge
// (real cost above the estimate: usage goes up) rides on the next reservation or is written alone within
// SETTLE_DELAY_MS: delaying it could let a budget be overshot. A refund (usage goes down) is held until a reservation
// names its counter anyway, or for at most REFUND_HOLD_MS: the budget only looks more used meanwhile (it can refuse
// earlier, never overshoot), and with many keys in turn most refunds then cost no write of their own. Shared by the
// SQLite, Redis and PostgreSQL stores.
import type { CounterDelta } from './types.ts';

/** Longest a charge waits for a reservation to ride on before it is written alone. */
export const SETTLE_DELAY_MS = 20;
/** Longest a refund is held waiting for a reservation of its counter before it goes with the next write (ADR 0097). */
export const REFUND_HOLD_MS = 1000;

/** One counter's queued sum (entries are reused once written: read, never kept). */
export interface QueuedSettlement {
  counter: string;
  amount: number;
  expiresAt: number;
}

/** A held refund: since when its counter has one (its first part must be written REFUND_HOLD_MS after). */
interface HeldRefund {
  amount: number;
  expiresAt: number;
  since: number;
}

/** Up to this many counters a queue is searched in order; past it, through a Map (many keys' settlements). */
const SMALL = 16;
/** Entries kept for reuse after a write, at most (a burst of thousands is not held on to). */
const KEEP = 1024;

export class SettlementQueue {
  /**
   * The settlements due with the next write (charges, and refunds claimed or held long enough), in the order queued,
   * `count` of them live; the rest are spare entries for the next ones. A busy store queues and writes a few per
   * request: searched in order, reused in place, they allocate nothing per request.
   */
  private readonly list: QueuedSettlement[] = [];
  private count = 0;
  /** Every live entry of `list` by counter, once there are more than SMALL (undefined until then). */
  private index: Map<string, QueuedSettlement> | undefined;
  /** Refunds held, by counter, oldest first (a Map keeps insertion order). A counter is in `list` or here, not both. */
  private readonly held = new Map<string, HeldRefund>();
  /** Held entries kept for reuse. */
  private readonly spare: HeldRefund[] = [];
  /** No held refund is REFUND_HOLD_MS old before this (a lower bound: entries only leave `held`). */
  private ripeAt = Infinity;
  private timer: NodeJS.Timeout | undefined;
  /** When the running timer fires. */
  private timerAt = 0;
  /** When `list` last became non-empty: its entries are due SETTLE_DELAY_MS after. */
  private since = 0;
  private readonly onDue: () => void;
  private readonly fire = (): void => {
    this.timer = undefined;
    const now = Date.now();
    const ripened = this.ripen(now);
    if (this.count > 0 && (ripened || now >= this.since + SETTLE_DELAY_MS)) this.onDue();
    else this.wake(now);
  };

  /** `onDue` writes the due settlements alone (and calls `clear` once written, or `arm` to try again). */
  constructor(onDue: () => void) {
    this.onDue = onDue;
  }

  /** Settlements due with the next write. */
  get size(): number {
    return this.count;
  }

  /** Refunds held (not due yet). */
  get heldCount(): number {
    return this.held.size;
  }

  /** The `i`th due settlement (0 ≤ i < size), in the order queued (live: read it, do not keep it). */
  at(i: number): Readonly<QueuedSettlement> {
    return this.list[i]!;
  }

  private find(counter: string): QueuedSettlement | undefined {
    if (this.index !== undefined) return this.index.get(counter);
    const list = this.list;
    for (let i = 0; i < this.count; i++) if (list[i]!.counter === counter) return list[i];
    return undefined;
  }

  /** The amount due for a counter (0 if none; a held refund counts once claimed). */
  amountOf(counter: string): number {
    return this.find(counter)?.amount ?? 0;
  }

  /** Whether a settlement for `counter` is due. */
  has(counter: string): boolean {
    return this.find(counter) !== undefined;
  }

  /** The amount held for a counter (0 if none). */
  heldOf(counter: string): number {
    return this.held.get(counter)?.amount ?? 0;
  }

  /**
   * Queue deltas. A counter's amounts are summed where it already is: due (its write is near anyway) or held (a charge
   * that turns the held sum positive makes it due). A new charge is due; a new refund is held. One timer runs for the
   * nearest deadline: a busy store keeps it going instead of a setTimeout and a clearTimeout per request.
   */
  add(deltas: readonly CounterDelta[]): void {
    for (let i = 0; i < deltas.length; i++) this.addOne(deltas[i]!);
  }

  /** `add` of one delta. */
  addOne(d: CounterDelta): void {
    const q = this.find(d.counter);
    if (q) {
      q.amount += d.amount;
      q.expiresAt = d.expiresAt;
      return;
    }
    const h = this.held.get(d.counter);
    if (h) {
      h.amount += d.amount;
      h.expiresAt = d.expiresAt;
      if (h.amount > 0) this.release(d.counter, h, Date.now(), true);
      return;
    }
    const now = Date.now();
    if (d.amount > 0) this.push(d.counter, d.amount, d.expiresAt, now, true);
    else {
      const e = this.spare.pop() ?? { amount: 0, expiresAt: 0, since: 0 };
      e.amount = d.amount;
      e.expiresAt = d.expiresAt;
      e.since = now;
      if (this.held.size === 0) this.ripeAt = now + REFUND_HOLD_MS;
      this.held.set(d.counter, e);
      if (this.timer === undefined) this.schedule(now, REFUND_HOLD_MS);
    }
  }

  /** A counter's held refund, if any, becomes due: the write being built names its counter anyway (ADR 0097). */
  claim(counter: string): void {
    if (this.held.size === 0) return;
    const h = this.held.get(counter);
    if (h !== undefined) this.release(counter, h, Date.now(), false);
  }

  /**
   * The held refunds of the counters a write names anyway become due, and the ripe ones (ADR 0097): what every store
   * does before it builds a reservation's write.
   */
  claimFor(lines: readonly { readonly counter: string }[], now: number): void {
    if (this.held.size === 0) return;
    for (let i = 0; i < lines.length; i++) this.claim(lines[i]!.counter);
    this.ripen(now);
  }

  /** Every held refund becomes due (usage reads, close, an idle store). */
  claimAll(): void {
    if (this.held.size === 0) return;
    const now = Date.now();
    for (const [counter, h] of this.held) this.release(counter, h, now, false);
  }

  /** Held refunds REFUND_HOLD_MS old become due; whether any did. */
  ripen(now: number): boolean {
    if (now < this.ripeAt) return false;
    let any = false;
    this.ripeAt = Infinity;
    for (const [counter, h] of this.held) {
      if (h.since + REFUND_HOLD_MS > now) {
        this.ripeAt = h.since + REFUND_HOLD_MS;
        break;
      }
      this.release(counter, h, now, false);
      any = true;
    }
    return any;
  }

  /** Move a held sum into the due list (it is written with the next write, whatever its sign). */
  private release(counter: string, h: HeldRefund, now: number, charge: boolean): void {
    this.held.delete(counter);
    this.push(counter, h.amount, h.expiresAt, now, charge);
    if (this.spare.length < KEEP) this.spare.push(h);
  }

  /**
   * Append a due entry (the counter is in neither `list` nor `held`) and make sure a timer will write it: by
   * SETTLE_DELAY_MS for a `charge` (a later timer is brought forward); a claimed or ripe refund is about to be written
   * by the caller, so any running timer will do (no clearTimeout and setTimeout per reservation).
   */
  private push(counter: string, amount: number, expiresAt: number, now: number, charge: boolean): void {
    if (this.count === 0) this.since = now;
    let e = this.list[this.count];
    if (e === undefined) this.list.push((e = { counter, amount, expiresAt }));
    else {
      e.counter = counter;
      e.amount = amount;
      e.expiresAt = expiresAt;
    }
    this.count++;
    if (this.index !== undefined) this.index.set(counter, e);
    else if (this.count > SMALL) {
      this.index = new Map();
      for (let k = 0; k < this.count; k++) this.index.set(this.list[k]!.counter, this.list[k]!);
    }
    const due = this.since + SETTLE_DELAY_MS;
    if (this.timer === undefined || (charge && this.timerAt > due)) this.schedule(now, Math.max(0, due - now));
  }

  /** Call `onDue` after SETTLE_DELAY_MS from now (again, after a failed write). */
  arm(): void {
    const now = Date.now();
    this.since = now;
    this.schedule(now, SETTLE_DELAY_MS);
  }

  /** Arm the timer for the nearest deadline, if anything is queued. */
  private wake(now: number): void {
    const due = Math.min(this.count > 0 ? this.since + SETTLE_DELAY_MS : Infinity, this.held.size > 0 ? this.ripeAt : Infinity);
    if (due !== Infinity) this.schedule(now, Math.max(0, due - now));
  }

  private schedule(now: number, ms: number): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timerAt = now + ms;
    this.timer = setTimeout(this.fire, ms);
    this.timer.unref();
  }

  /** The due settlements, one per counter (the queue keeps them until `clear`). */
  rows(): CounterDelta[] {
    const rows: CounterDelta[] = [];
    for (let i = 0; i < this.count; i++) {
      const d = this.list[i]!;
      rows.push({ counter: d.counter, amount: d.amount, expiresAt: d.expiresAt });
    }
    return rows;
  }

  /**
   * Forget the due settlements once written; held refunds stay. A running timer is left to find the list empty (or
   * refilled, and wait on); with refunds held and none running, one is armed for the oldest.
   */
  clear(): void {
    this.count = 0;
    this.index = undefined;
    if (this.list.length > KEEP) this.list.length = KEEP;
    if (this.held.size > 0 && this.timer === undefined) this.wake(Date.now());
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
