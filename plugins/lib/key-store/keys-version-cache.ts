// The Redis store's key records kept in the process (ADR 0106, after ADR 0061): a record is vouched for by its digest
// (a lookup, or a reservation's EXISTS) or by the store's keys version, a counter every create, rotation and revocation
// raises in the same script. Each reservation's script reads the version; while it is the one a record was vouched at,
// no key changed anywhere, so the record's digest still names it and the reservation need not carry it. A change
// made by a replica that does not raise the version (a release before this one, during a rolling upgrade) is seen
// by the digest check every record in use still gets about every KEY_RECHECK_MS: its next reservation carries the
// digest, and its next lookup from the cache asks the store for it again beside the request (`get`'s `due`).
import { CACHE_MAX, KEY_CACHE_MS } from './key-cache.ts';
import { entryByDigest } from './memos.ts';
import type { CounterMemo, KeyRecord } from './types.ts';

/** Longest a record is used without its digest checked in the store (a lookup or a reservation's EXISTS). */
export const KEY_RECHECK_MS = 30_000;

export interface Entry {
  readonly digest: string;
  record: KeyRecord;
  /** The keys version the record was last vouched at. */
  version: number;
  /** Its row in the cache's times (ADR 0177); -1 once dropped (the row may be another entry's by then). */
  row: number;
}

/**
 * An entry's times, in one Float64Array row per entry (ADR 0177): as fields of the entry each was a number box of its
 * own, three more lines for a reservation to reach with 1,000 keys in turn.
 */
const STRIDE = 4;
/** When the store last vouched for it (by digest or by version): the send time of that command. */
const VOUCHED = 0;
/** When its digest was last checked in the store. */
const CHECKED = 1;
/** When a lookup from the cache last had its digest checked beside the request (`get`'s `due`). */
const DUE = 2;

export class KeysVersionCache {
  /** Entries updated in place (ADR 0100: an entry made again per lookup was promoted and died old). */
  private readonly byDigest = new Map<string, Entry>();
  /** Raised whenever entries are dropped: a memo kept before may hold one this cache no longer has (ADR 0110). */
  private drops = 0;
  /** The store's keys version as last read, and when (the send time of the command that read it). */
  private version = -1;
  private versionAt = -Infinity;
  private readonly recheckMs: number;
  private times = new Float64Array(64 * STRIDE);
  /** Rows given so far, and rows of entries dropped one by one (given again first). */
  private rows = 0;
  private free: number[] = [];

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
    const e = this.entryOf(digest, memo);
    if (e === undefined) return undefined;
    const t = this.times;
    const at = e.row * STRIDE;
    if (now - t[at + VOUCHED]! >= KEY_CACHE_MS && (e.version !== this.version || now - this.versionAt >= KEY_CACHE_MS)) return undefined;
    if (now - t[at + CHECKED]! >= this.recheckMs && now - t[at + DUE]! >= KEY_CACHE_MS) {
      t[at + DUE] = now;
      due(digest);
    }
    return e.record;
  }

  /** A record looked up by its digest, with the keys version read in the same command sent at `at`. */
  set(digest: string, record: KeyRecord, version: number, at: number): void {
    this.saw(version, at);
    const e = this.byDigest.get(digest);
    if (e !== undefined) {
      e.record = record;
      e.version = version;
      this.times[e.row * STRIDE + VOUCHED] = this.times[e.row * STRIDE + CHECKED] = at;
      return;
    }
    if (this.byDigest.size >= CACHE_MAX) this.drop();
    const row = this.free.pop() ?? this.rows++;
    if ((row + 1) * STRIDE > this.times.length) {
      const grown = new Float64Array(this.times.length * 2);
      grown.set(this.times);
      this.times = grown;
    }
    const t = row * STRIDE;
    this.times[t + VOUCHED] = this.times[t + CHECKED] = at;
    this.times[t + DUE] = -Infinity;
    this.byDigest.set(digest, { digest, record, version, row });
  }

  /**
   * The entry for `digest`, through the caller's memo while it holds this cache's entry for that digest and nothing
   * was dropped since (ADR 0110: a reservation's key found once, not once per use), else looked up.
   */
  entryOf(digest: string, memo?: CounterMemo): Entry | undefined {
    return entryByDigest(this.byDigest, digest, memo, this, this.drops);
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

  /**
   * Whether a reservation must carry `digest` to be checked: not kept, vouched at another version than the one the
   * reservation is sent against, or not checked for KEY_RECHECK_MS.
   */
  needsCheck(e: Entry | undefined, now: number): boolean {
    return e === undefined || e.row < 0 || e.version !== this.version || now - this.times[e.row * STRIDE + CHECKED]! >= this.recheckMs;
  }

  /** A reservation sent at `at` found the key of entry `e` live at keys version `version`: by its digest when `checked`. */
  confirm(e: Entry | undefined, at: number, version: number, checked: boolean): void {
    // An entry dropped while its reservation was on the way vouches for nothing (its row may be another key's now).
    if (e === undefined || e.row < 0) return;
    const t = this.times;
    const row = e.row * STRIDE;
    if (at > t[row + VOUCHED]!) t[row + VOUCHED] = at;
    e.version = version;
    if (checked && at > t[row + CHECKED]!) t[row + CHECKED] = at;
  }

  /** Forget one digest (the store said it is gone) or, without one, every record. */
  drop(digest?: string): void {
    this.drops++;
    if (digest === undefined) {
      for (const e of this.byDigest.values()) e.row = -1;
      this.byDigest.clear();
      this.rows = 0;
      this.free = [];
      return;
    }
    const e = this.byDigest.get(digest);
    if (e === undefined) return;
    this.byDigest.delete(digest);
    this.free.push(e.row);
    e.row = -1;
  }
}
