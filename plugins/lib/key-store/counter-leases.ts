// Budget leases on the shared store (ADR 0108): a replica that reserves on a counter far from its limit takes a few
// requests' worth more than the request needs, in the same checked line, and serves that counter's next reservations
// from what it took (its room) without a line in the script. With 100 team budgets in turn every request's script
// wrote about one counter of its own; with leases a team's counter is written about once per LEASE_REQUESTS of its
// requests, as one team's was. What a lease holds is taken in the store like any reservation (a lease line is
// admitted only when the counter stays below its limit with all of it), so no replica can spend past a limit
// through one; the only cost is that a budget looks more used, by the room the replicas hold, until it is returned.
import { GroupedCounter } from './counter-groups.ts';
import { FloatRows } from './key-rows.ts';
import type { CounterLine } from './types.ts';

/** A lease holds this many of the leasing request's amount (beyond the request's own). */
export const LEASE_REQUESTS = 16;
/** A lease holds at most this share of its budget's limit: smaller budgets are not leased (see `sizeFor`). */
export const LEASE_SHARE = 0.001;
/** Room not drawn from for this long is returned to the store. */
export const LEASE_IDLE_MS = 1000;
/** After a lease line was refused (its counter too near its limit for one), that counter is not leased for this long. */
export const LEASE_RETRY_MS = 10_000;
/**
 * A reservation's answer when one of its lease lines was refused (`answer`): nothing taken, to be sent again at once
 * without that lease (the line goes as a plain one: the counter is not leased for LEASE_RETRY_MS).
 */
export const LEASE_REFUSED = -4;
/** What `answer` and `answerLines` are told when a reservation took nothing and no line refused (a store's failure). */
export const NOTHING_TAKEN = -5;
/** A line's lease size when it was drawn from its counter's room (not sent to the store). */
export const DRAWN = -1;

/** Numbers per open lease: the limit it was taken under, its room, its last draw. */
const STRIDE = 4;
const LIMIT = 0;
const ROOM = 1;
const LAST = 2;

/**
 * The numbers of a book's open leases (ADR 0187): one Float64Array row per lease, given when it opens and given up when
 * it closes. As fields of the counter's state each was a number box of its own: three more lines for every request
 * drawing from its team's lease to reach, cold again after a hundred other teams' requests.
 */
export class LeaseRows extends FloatRows {
  constructor() {
    super(STRIDE, 16);
  }
}

/**
 * A counter's state with its lease (the settlement queue keeps it while `pinned`: room is the store's money). Its
 * lease's numbers are read and written only while `leased` (in its book's rows; 0 otherwise).
 */
export class LeasedCounter extends GroupedCounter {
  /** A lease is open: `room` may be drawn from by lines with the limit it was taken under. */
  leased = false;
  /** The open lease's row in `leaseRows` (-1: none). */
  leaseRow = -1;
  leaseRows: LeaseRows | undefined = undefined;
  leaseExpiresAt = 0;
  /** A lease line for this counter is in a script not answered yet: no second one. */
  leasing = false;
  noLeaseUntil = 0;
  /** In the book's list of open leases (it may have closed since: the sweep drops it). */
  listed = false;

  /** The limit the open lease was taken under. */
  get leaseLimit(): number {
    return this.leased ? this.leaseRows!.nums[this.leaseRow * STRIDE + LIMIT]! : 0;
  }
  set leaseLimit(v: number) {
    this.leaseRows!.nums[this.leaseRow * STRIDE + LIMIT] = v;
  }
  /** Taken in the store and not drawn yet (settlements of any of this counter's lines add their refunds to it). */
  get room(): number {
    return this.leased ? this.leaseRows!.nums[this.leaseRow * STRIDE + ROOM]! : 0;
  }
  set room(v: number) {
    this.leaseRows!.nums[this.leaseRow * STRIDE + ROOM] = v;
  }
  get lastDraw(): number {
    return this.leased ? this.leaseRows!.nums[this.leaseRow * STRIDE + LAST]! : 0;
  }
  set lastDraw(v: number) {
    this.leaseRows!.nums[this.leaseRow * STRIDE + LAST] = v;
  }
}

/**
 * A reservation's line served by a lease (the Redis store's list of them, in line order): drawn from the room (`size`
 * DRAWN), or sent with `size` more to lease.
 */
export interface LeasedLine<C extends LeasedCounter> {
  readonly c: C;
  /** The line's index in the reservation. */
  readonly line: number;
  readonly size: number;
}

/** Lease bounds, shorter in tests. */
export interface LeaseOptions {
  readonly requests?: number;
  readonly share?: number;
  readonly idleMs?: number;
  readonly retryMs?: number;
}

/**
 * A store's open leases. `give` hands a counter's amount back to the store's settlement queue (negative: a refund
 * of room, positive: a charge past it); the store writes it with its next script, as any settlement.
 */
export class LeaseBook<C extends LeasedCounter> {
  private readonly open: C[] = [];
  /** The open leases' numbers. */
  private readonly rows = new LeaseRows();
  private timer: NodeJS.Timeout | undefined;
  private readonly give: (c: C, amount: number) => void;
  private readonly requests: number;
  private readonly share: number;
  private readonly idleMs: number;
  private readonly retryMs: number;

  constructor(give: (c: C, amount: number) => void, options: LeaseOptions = {}) {
    this.give = give;
    this.requests = options.requests ?? LEASE_REQUESTS;
    this.share = options.share ?? LEASE_SHARE;
    this.idleMs = options.idleMs ?? LEASE_IDLE_MS;
    this.retryMs = options.retryMs ?? LEASE_RETRY_MS;
  }

  /** Leases open now. */
  get size(): number {
    let n = 0;
    for (const c of this.open) if (c.leased) n++;
    return n;
  }

  /** Take a line's amount from its counter's room; false when the line must go to the store. */
  draw(c: C, line: CounterLine, now: number): boolean {
    if (!c.leased) return false;
    if (c.leaseLimit !== line.limit) {
      // Another limit (a reload, another plan naming the counter): the room was taken under the old one.
      this.close(c);
      return false;
    }
    if (c.room < line.amount) return false;
    c.room -= line.amount;
    c.lastDraw = now;
    return true;
  }

  /**
   * The room a line sent to the store should lease beyond its own amount (0: none): LEASE_REQUESTS of its amount, at
   * most LEASE_SHARE of its limit, and only when that is at least twice the amount (small budgets stay exact).
   */
  sizeFor(c: C, line: CounterLine, now: number): number {
    if (c.leasing || now < c.noLeaseUntil || !(line.amount > 0) || !Number.isFinite(line.limit)) return 0;
    const size = Math.min(this.requests * line.amount, line.limit * this.share);
    return size >= 2 * line.amount ? size : 0;
  }

  /** A lease line was admitted: its room is the replica's to draw from. */
  granted(c: C, line: CounterLine, size: number, now: number): void {
    c.leasing = false;
    if (c.leased && c.leaseLimit !== line.limit) this.close(c);
    if (!c.leased) {
      c.leaseRow = this.rows.give();
      c.leaseRows = this.rows;
      c.leased = true;
      c.pinned = true;
      c.leaseLimit = line.limit;
      if (!c.listed) {
        c.listed = true;
        this.open.push(c);
      }
      if (this.timer === undefined) this.arm();
    }
    c.leaseExpiresAt = line.expiresAt;
    c.room += size;
    c.lastDraw = now;
  }

  /** A lease line was refused: the counter is near its limit, its lines go without leases for a while. */
  refused(c: C, now: number): void {
    c.leasing = false;
    c.noLeaseUntil = now + this.retryMs;
  }

  /** A lease line's reservation took nothing (another line refused, the key was gone, the script failed). */
  notTaken(c: C): void {
    c.leasing = false;
  }

  /**
   * What a store's answer does to one line of a reservation served by a lease (ADR 0108); the one place for these
   * rules, which `answer` and `answerLines` apply per line. `size`: DRAWN, or the room the line was sent to lease;
   * `index`: the line's in the reservation; `refused`: the refusing line's index in the reservation, -1 when the
   * reservation was taken, any other negative when nothing was (the key gone, NOTHING_TAKEN when the store failed). Taken: a lease
   * line's room is the replica's. Otherwise a drawn amount goes back, a refused lease line's counter is not leased for
   * LEASE_RETRY_MS (true: the reservation is to go again without that lease), and any other lease line is not taken.
   */
  answerLine(c: C, line: CounterLine, index: number, size: number, refused: number, now: number): boolean {
    if (size === DRAWN) {
      if (refused !== -1) this.undraw(c, line.amount);
      return false;
    }
    if (refused === -1) this.granted(c, line, size, now);
    else if (refused === index) {
      this.refused(c, now);
      return true;
    } else this.notTaken(c);
    return false;
  }

  /**
   * A store's answer for a reservation whose lines served by leases are `leased` (the Redis store's list), with
   * `refused` as the store gave it: a refusing line's index among the lines sent, which are the reservation's without
   * the drawn ones. Returns the answer in the reservation's terms: the refusing line's index in it (the policy names
   * the refusing budget by it), LEASE_REFUSED when that line was a lease line, else `refused` as it was.
   */
  answer(leased: readonly LeasedLine<C>[], lines: readonly CounterLine[], refused: number, now: number): number {
    let index = refused;
    // Each drawn line before the refusing one (in line order) moves it one further in the reservation.
    if (refused >= 0) for (const l of leased) if (l.size === DRAWN && l.line <= index) index++;
    let answer = index;
    for (const l of leased) if (this.answerLine(l.c, lines[l.line]!, l.line, l.size, index, now)) answer = LEASE_REFUSED;
    return answer;
  }

  /**
   * `answer` for a store that keeps per line its state and its lease size (`sizes`: DRAWN, 0 for a line sent as it
   * is, or the room it leases; the SQLite store's arrays), with `refused` already the reservation's line index.
   */
  answerLines(states: readonly C[], sizes: readonly number[], lines: readonly CounterLine[], refused: number, now: number): number {
    let answer = refused;
    for (let i = 0; i < lines.length; i++) {
      const size = sizes[i]!;
      if (size !== 0 && this.answerLine(states[i]!, lines[i]!, i, size, refused, now)) answer = LEASE_REFUSED;
    }
    return answer;
  }

  /** A drawn amount whose reservation took nothing goes back: to the room, or to the store once the lease closed. */
  undraw(c: C, amount: number): void {
    if (c.leased) c.room += amount;
    else this.give(c, -amount);
  }

  /**
   * A settlement of a leased counter: a refund adds to the room, a charge draws from it (past it, the rest goes to
   * the store). False when the counter has no lease open: the caller queues it.
   */
  settle(c: C, amount: number): boolean {
    if (!c.leased) return false;
    c.room -= amount;
    if (c.room < 0) {
      this.give(c, -c.room);
      c.room = 0;
    }
    return true;
  }

  /** Return a lease's room to the store. */
  close(c: C): void {
    if (!c.leased) return;
    const room = c.room;
    c.leased = false;
    c.pinned = false;
    this.rows.free(c.leaseRow);
    c.leaseRow = -1;
    if (room !== 0) this.give(c, -room);
  }

  /** Return every lease's room (reads of usage, close). */
  closeAll(): void {
    for (const c of this.open) {
      this.close(c);
      c.listed = false;
    }
    this.open.length = 0;
  }

  /** Return the room of leases not drawn from for LEASE_IDLE_MS. */
  sweep(now: number): void {
    let to = 0;
    for (const c of this.open) {
      if (c.leased && now - c.lastDraw >= this.idleMs) this.close(c);
      if (c.leased) this.open[to++] = c;
      else c.listed = false;
    }
    this.open.length = to;
  }

  private arm(): void {
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.sweep(Date.now());
      if (this.open.length > 0) this.arm();
    }, this.idleMs);
    this.timer.unref();
  }
}
