// Settlements waiting to be written (ADR 0048, revised by ADR 0097), summed by counter and split by sign. A charge
// (real cost above the estimate: usage goes up) rides on the next reservation or is written alone within
// SETTLE_DELAY_MS: delaying it could let a budget be overshot. A refund (usage goes down) is held until a reservation
// names its counter anyway, or for at most REFUND_HOLD_MS: the budget only looks more used meanwhile (it can refuse
// earlier, never overshoot), and with many keys in turn most refunds then cost no write of their own. Shared by the
// SQLite, Redis and PostgreSQL stores; lifetime counters' settlements are summed apart first (lazy-sums.ts).
import { recalled, remember } from './memos.ts';
import type { CounterDelta, CounterMemo } from './types.ts';

/** Longest a charge waits for a reservation to ride on before it is written alone. */
export const SETTLE_DELAY_MS = 20;
/** Longest a refund is held waiting for a reservation of its counter before it goes with the next write (ADR 0097). */
export const REFUND_HOLD_MS = 1000;

const IDLE = 0;
const DUE = 1;
const HELD = 2;

/**
 * What the queue knows of one counter, kept and reused while the counter is in use (ADR 0100): with many keys in
 * turn each counter is settled once every thousand requests or so, and an entry made and dropped per settlement
 * lived long enough to be promoted (and the Maps they went in and out of were rehashed into new tables). A store may
 * extend it with what it keeps per counter itself (the Redis store: the prefixed key and the counter's place in the
 * script being built, ADR 0102), so a reservation's line costs one Map lookup in all, not one here and one there.
 */
export class CounterState {
  readonly counter: string;
  amount = 0;
  expiresAt = 0;
  /** Held: since when (its first part must be written REFUND_HOLD_MS after). */
  since = 0;
  state: typeof IDLE | typeof DUE | typeof HELD = IDLE;
  /** Raised each time the counter is held: tells its current place in the held order from places it left. */
  ticket = 0;
  /** The store keeps something on this state the queue must not drop with it (an open lease's room, ADR 0108). */
  pinned = false;

  constructor(counter: string) {
    this.counter = counter;
  }
}

/** Counters' states kept at most; past it the idle ones are dropped (a window's counters end with it). */
export const STATES_MAX = 16_384;
/** References kept in the due list after a write, at most (a burst of thousands is not held on to; LazySums' too). */
export const KEEP = 1024;

export class SettlementQueue<S extends CounterState = CounterState> {
  /** Every counter in use: due, held or idle (kept for its next settlement), up to STATES_MAX. */
  private readonly states = new Map<string, S>();
  /** The settlements due with the next write (charges, and refunds claimed or held long enough), in the order queued. */
  private readonly list: S[] = [];
  private count = 0;
  /**
   * Held refunds, oldest first: a counter's place and its ticket then. A place whose ticket is not the counter's
   * any more was left (claimed, or summed into a charge) and is skipped; when the array is full and at least half
   * its places are left or passed, the live ones are moved down instead of the array grown (so it stays within
   * twice the refunds held at once).
   */
  private readonly heldOrder: S[] = [];
  private readonly heldTickets: number[] = [];
  private heldHead = 0;
  private heldEnd = 0;
  private heldLive = 0;
  /** No held refund is REFUND_HOLD_MS old before this (a lower bound: entries only leave the held order). */
  private ripeAt = Infinity;
  private timer: NodeJS.Timeout | undefined;
  /** When the running timer fires. */
  private timerAt = 0;
  /** When `list` last became non-empty: its entries are due SETTLE_DELAY_MS after. */
  private since = 0;
  private readonly onDue: () => void;
  private readonly make: (counter: string) => S;
  /**
   * Trims that dropped states so far: a state kept by a store since (to settle on without a lookup) may be one the
   * queue no longer has, and a second state for its counter would give it two places in one write.
   */
  private trimCount = 0;
  private readonly fire = (): void => {
    this.timer = undefined;
    const now = Date.now();
    const ripened = this.ripen(now);
    if (this.count > 0 && (ripened || now >= this.since + SETTLE_DELAY_MS)) this.onDue();
    else this.wake(now);
  };

  /**
   * `onDue` writes the due settlements alone (and calls `clear` once written, or `arm` to try again). `make` makes a
   * new counter's state (a store's own subclass of CounterState).
   */
  constructor(onDue: () => void, make: (counter: string) => S = (counter) => new CounterState(counter) as S) {
    this.onDue = onDue;
    this.make = make;
  }

  /** Settlements due with the next write. */
  get size(): number {
    return this.count;
  }

  /** Refunds held (not due yet). */
  get heldCount(): number {
    return this.heldLive;
  }

  /** Counters whose state is kept (due, held or idle). */
  get stateCount(): number {
    return this.states.size;
  }

  /** The `i`th due settlement (0 <= i < size), in the order queued: the counter's state (live: read it, do not keep it). */
  at(i: number): S {
    return this.list[i]!;
  }

  /**
   * A counter's state, made if new: what a store building a write looks a line's counter up by, once (ADR 0102). It
   * never drops other states (a store may be numbering the states of the write it builds): `trim` does, between writes.
   */
  stateFor(counter: string, memo?: CounterMemo): S {
    const kept = this.kept(counter, memo);
    if (kept !== undefined) return kept;
    let s = this.states.get(counter);
    if (s === undefined) this.states.set(counter, (s = this.make(counter)));
    remember(memo, this, s, this.trimCount);
    return s;
  }

  /**
   * The state a caller's memo keeps for `counter` (ADR 0110), while it is this queue's and no trim dropped states
   * since: with 1,000 keys in turn each Map lookup of a counter was a cache miss or more.
   */
  private kept(counter: string, memo: CounterMemo | undefined): S | undefined {
    const s = recalled<S>(memo, this, this.trimCount);
    return s !== undefined && s.counter === counter ? s : undefined;
  }

  /** Past STATES_MAX counters, drop the idle states (O(n) once per STATES_MAX / 2 new counters or so). */
  trim(): void {
    if (this.states.size < STATES_MAX) return;
    for (const [c, s] of this.states) if (s.state === IDLE && !s.pinned) this.states.delete(c);
    this.trimCount++;
  }

  /** Trims that dropped states so far (a state kept since an earlier count may not be the queue's any more). */
  get trims(): number {
    return this.trimCount;
  }

  /** A counter's state to settle on, made if new (past STATES_MAX the idle ones go first: not while a write is built). */
  settling(counter: string, memo?: CounterMemo): S {
    const kept = this.kept(counter, memo);
    if (kept !== undefined) return kept;
    const s = this.states.get(counter) ?? this.stateOf(counter);
    remember(memo, this, s, this.trimCount);
    return s;
  }

  /** The amount due for a counter (0 if none; a held refund counts once claimed). */
  amountOf(counter: string): number {
    const s = this.states.get(counter);
    return s !== undefined && s.state === DUE ? s.amount : 0;
  }

  /** Whether a settlement for `counter` is due. */
  has(counter: string): boolean {
    return this.states.get(counter)?.state === DUE;
  }

  /** The amount held for a counter (0 if none). */
  heldOf(counter: string): number {
    const s = this.states.get(counter);
    return s !== undefined && s.state === HELD ? s.amount : 0;
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
    this.addTo(this.settling(d.counter), d.amount, d.expiresAt);
  }

  /**
   * `addOne` to a state the caller has: one it got from `stateFor` or `settling` with no trim since that dropped any
   * (`trims` unchanged), so that it is still the counter's state in the queue.
   */
  addTo(s: S, amount: number, expiresAt: number): void {
    if (s.state !== IDLE) {
      s.amount += amount;
      s.expiresAt = expiresAt;
      if (s.state === HELD && s.amount > 0) this.release(s, Date.now(), true);
      return;
    }
    s.amount = amount;
    s.expiresAt = expiresAt;
    const now = Date.now();
    if (amount > 0) this.push(s, now, true);
    else this.hold(s, now);
  }

  /** A new counter's state; past STATES_MAX the idle ones go first. */
  private stateOf(counter: string): S {
    this.trim();
    const s = this.make(counter);
    this.states.set(counter, s);
    return s;
  }

  private hold(s: S, now: number): void {
    if (this.heldLive === 0) {
      this.heldHead = this.heldEnd = 0;
      this.ripeAt = now + REFUND_HOLD_MS;
    } else if (this.heldEnd === this.heldOrder.length && this.heldEnd >= 2 * this.heldLive) this.compactHeld();
    s.state = HELD;
    s.since = now;
    s.ticket++;
    this.heldOrder[this.heldEnd] = s;
    this.heldTickets[this.heldEnd++] = s.ticket;
    this.heldLive++;
    if (this.timer === undefined) this.schedule(now, REFUND_HOLD_MS);
  }

  /** Whether the held order's place `i` is still its counter's. */
  private liveAt(i: number): boolean {
    const s = this.heldOrder[i]!;
    return s.state === HELD && s.ticket === this.heldTickets[i];
  }

  /** Drop the places left in the held order (kept in order). */
  private compactHeld(): void {
    let to = 0;
    for (let i = this.heldHead; i < this.heldEnd; i++) {
      if (!this.liveAt(i)) continue;
      this.heldOrder[to] = this.heldOrder[i]!;
      this.heldTickets[to++] = this.heldTickets[i]!;
    }
    this.heldHead = 0;
    this.heldEnd = to;
  }

  /** A counter's held refund, if any, becomes due: the write being built names its counter anyway (ADR 0097). */
  claim(counter: string): void {
    if (this.heldLive === 0) return;
    const s = this.states.get(counter);
    if (s !== undefined && s.state === HELD) this.release(s, Date.now(), false);
  }

  /** `claim` of a state the caller has (`stateFor`): no lookup. */
  claimState(s: S, now: number): void {
    if (s.state === HELD) this.release(s, now, false);
  }

  /**
   * The held refunds of the counters a write names anyway become due, and the ripe ones (ADR 0097): what every store
   * does before it builds a reservation's write.
   */
  claimFor(lines: readonly { readonly counter: string }[], now: number): void {
    if (this.heldLive === 0) return;
    for (let i = 0; i < lines.length; i++) this.claim(lines[i]!.counter);
    this.ripen(now);
  }

  /** Every held refund becomes due (usage reads, close, an idle store). */
  claimAll(): void {
    if (this.heldLive === 0) return;
    const now = Date.now();
    for (let i = this.heldHead; i < this.heldEnd; i++) if (this.liveAt(i)) this.release(this.heldOrder[i]!, now, false);
    this.heldHead = this.heldEnd = 0;
  }

  /** Held refunds REFUND_HOLD_MS old become due; whether any did. */
  ripen(now: number): boolean {
    if (now < this.ripeAt) return false;
    let any = false;
    this.ripeAt = Infinity;
    while (this.heldHead < this.heldEnd) {
      const i = this.heldHead;
      if (this.liveAt(i)) {
        const s = this.heldOrder[i]!;
        if (s.since + REFUND_HOLD_MS > now) {
          this.ripeAt = s.since + REFUND_HOLD_MS;
          break;
        }
        this.release(s, now, false);
        any = true;
      }
      this.heldHead++;
    }
    return any;
  }

  /** Move a held sum into the due list (it is written with the next write, whatever its sign). */
  private release(s: S, now: number, charge: boolean): void {
    this.heldLive--;
    this.push(s, now, charge);
  }

  /**
   * Append a due entry (the counter is neither due nor held) and make sure a timer will write it: by
   * SETTLE_DELAY_MS for a `charge` (a later timer is brought forward); a claimed or ripe refund is about to be written
   * by the caller, so any running timer will do (no clearTimeout and setTimeout per reservation).
   */
  private push(s: S, now: number, charge: boolean): void {
    if (this.count === 0) this.since = now;
    s.state = DUE;
    this.list[this.count++] = s;
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
    const due = Math.min(this.count > 0 ? this.since + SETTLE_DELAY_MS : Infinity, this.heldLive > 0 ? this.ripeAt : Infinity);
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
   * Forget the due settlements once written (their counters' states stay, idle); held refunds stay. A running timer
   * is left to find the list empty (or refilled, and wait on); with refunds held and none running, one is armed for
   * the oldest.
   */
  clear(): void {
    for (let i = 0; i < this.count; i++) {
      const s = this.list[i]!;
      s.state = IDLE;
      s.amount = 0;
    }
    this.count = 0;
    if (this.list.length > KEEP) this.list.length = KEEP;
    if (this.heldLive > 0 && this.timer === undefined) this.wake(Date.now());
  }
}
