// The Redis store's key records kept in the process (ADR 0106, after ADR 0061): a record is vouched for by its digest
// (a lookup, or a reservation's EXISTS) or by the store's keys version, a counter every create, rotation and revocation
// raises in the same script. Each reservation's script reads the version; while it is the one a record was vouched at,
// no key changed anywhere, so the record's digest still names it and the reservation need not carry it. A change
// made by a replica that does not raise the version (a release before this one, during a rolling upgrade) is seen
// by the digest check every record in use still gets about every KEY_RECHECK_MS: its next reservation carries the
// digest, and its next lookup from the cache asks the store for it again beside the request (`get`'s `due`).
import { CACHE_MAX, KEY_CACHE_MS } from './key-cache.ts';
import { KeyRows } from './key-rows.ts';
import type { CounterMemo, KeyRecord } from './types.ts';

/** Longest a record is used without its digest checked in the store (a lookup or a reservation's EXISTS). */
export const KEY_RECHECK_MS = 30_000;

/**
 * A kept record is a row (ADR 0187, key-rows.ts): its digest and record in the rows' arrays, the keys version it was
 * last vouched at and its times in one Float64Array row, where as an entry object with three times (ADR 0177) it was
 * two more cold lines for a reservation to reach with 1,000 keys in turn.
 */
const STRIDE = 4;
/** When the store last vouched for it (by digest or by version): the send time of that command. */
const VOUCHED = 0;
/** When its digest was last checked in the store. */
const CHECKED = 1;
/** When a lookup from the cache last had its digest checked beside the request (`get`'s `due`). */
const DUE = 2;
/** The keys version the record was last vouched at. */
const VERSION = 3;

/**
 * A reservation's hold on its key's row, taken when it is made (fields of the reservation itself, no object of its
 * own): the row (-1: not kept) and the rows' `drops` then. A
 * row given up while the reservation was on the way may be another key's by its answer, so the answer vouches for
 * nothing once any row was given up since (rare: a key gone, rotated or revoked, or the cache full).
 */
export interface RowHold {
  readonly row: number;
  readonly drops: number;
}

export class KeysVersionCache {
  /** Rows updated in place (ADR 0100: an entry made again per lookup was promoted and died old). */
  private readonly rows = new KeyRows(STRIDE);
  /** The store's keys version as last read, and when (the send time of the command that read it). */
  private version = -1;
  private versionAt = -Infinity;
  private readonly recheckMs: number;

  constructor(recheckMs = KEY_RECHECK_MS) {
    this.recheckMs = recheckMs;
  }

  /** The keys version reservations are sent against: the last one read. */
  get expected(): number {
    return this.version;
  }

  /**
   * The record for `digest`, if the store vouched for it less than KEY_CACHE_MS ago, or the keys version read less
   * than KEY_CACHE_MS ago is the one it was vouched at. When its digest was last checked KEY_RECHECK_MS ago or more,
   * `due` is called (once per KEY_CACHE_MS) to have it checked beside the request: a key changed behind the version
   * is then refused within KEY_RECHECK_MS and a round trip, and the request waits for no lookup.
   */
  get(digest: string, now: number, due: (digest: string) => void, memo?: CounterMemo): KeyRecord | undefined {
    const rows = this.rows;
    const row = rows.rowOf(digest, memo);
    if (row < 0) return undefined;
    const t = rows.nums;
    const at = row * STRIDE;
    if (now - t[at + VOUCHED]! >= KEY_CACHE_MS && (t[at + VERSION] !== this.version || now - this.versionAt >= KEY_CACHE_MS)) return undefined;
    if (now - t[at + CHECKED]! >= this.recheckMs && now - t[at + DUE]! >= KEY_CACHE_MS) {
      t[at + DUE] = now;
      due(digest);
    }
    return rows.record(row);
  }

  /** A record looked up by its digest, with the keys version read in the same command sent at `at`. */
  set(digest: string, record: KeyRecord, version: number, at: number): void {
    this.saw(version, at);
    if (this.rows.size >= CACHE_MAX && this.rows.rowOf(digest) < 0) this.rows.clear();
    const { row, fresh } = this.rows.put(digest, record);
    const t = this.rows.nums;
    const r = row * STRIDE;
    t[r + VOUCHED] = t[r + CHECKED] = at;
    t[r + VERSION] = version;
    if (fresh) t[r + DUE] = -Infinity;
  }

  /**
   * `digest`'s row (-1: not kept), through the caller's memo while it holds this cache's row for that digest and
   * nothing was given up since (ADR 0110: a reservation's key found once, not once per use). A reservation keeps it
   * with `drops` as its hold.
   */
  rowOf(digest: string, memo?: CounterMemo): number {
    return this.rows.rowOf(digest, memo);
  }

  /** Raised whenever a row is given up (a hold taken before no longer vouches). */
  get drops(): number {
    return this.rows.drops;
  }

  /**
   * The keys version a command sent at `at` read. Replies come in the order sent, but two sends in one millisecond
   * tell nothing of their order: then only a higher version counts (a lower one later is a flushed store: taken).
   */
  saw(version: number, at: number): void {
    if (at < this.versionAt || (at === this.versionAt && version < this.version)) return;
    this.version = version;
    this.versionAt = at;
  }

  /** Whether `hold` still names the row it was taken on (no row given up since). */
  private holds(hold: RowHold): boolean {
    return hold.row >= 0 && hold.drops === this.rows.drops;
  }

  /**
   * Whether a reservation must carry its digest to be checked: not kept, vouched at another version than the one the
   * reservation is sent against, or not checked for KEY_RECHECK_MS.
   */
  needsCheck(hold: RowHold, now: number): boolean {
    if (!this.holds(hold)) return true;
    const at = hold.row * STRIDE;
    const t = this.rows.nums;
    return t[at + VERSION] !== this.version || now - t[at + CHECKED]! >= this.recheckMs;
  }

  /** A reservation sent at `at` found the key of `hold` live at keys version `version`: by its digest when `checked`. */
  confirm(hold: RowHold, at: number, version: number, checked: boolean): void {
    // A row given up while its reservation was on the way vouches for nothing (it may be another key's now).
    if (!this.holds(hold)) return;
    const t = this.rows.nums;
    const row = hold.row * STRIDE;
    if (at > t[row + VOUCHED]!) t[row + VOUCHED] = at;
    t[row + VERSION] = version;
    if (checked && at > t[row + CHECKED]!) t[row + CHECKED] = at;
  }

  /**
   * Whether `digest`'s row had its digest checked by a command sent at `at` or later (a reservation that carried it):
   * a lookup due beside a request is then not needed (ADR 0193).
   */
  checkedSince(digest: string, at: number): boolean {
    const row = this.rows.rowOf(digest);
    return row >= 0 && this.rows.nums[row * STRIDE + CHECKED]! >= at;
  }

  /** Forget one digest (the store said it is gone) or, without one, every record. */
  drop(digest?: string): void {
    if (digest === undefined) this.rows.clear();
    else this.rows.remove(digest);
  }
}
