// Key records of every key store (Redis, PostgreSQL: ADR 0061; SQLite: ADR 0068) kept in the process for a moment, so a request's
// key check costs no round trip: the reservation's own round trip checks that the key's secret still names a live
// key (`KEY_GONE` otherwise), so rotation and revocation on any replica refuse the next LLM request at once. What is
// not reserved (a keyed request that never reaches an LLM call) trusts a cached record for at most KEY_CACHE_MS after
// the store last vouched for it: its lookup, or a reservation's check (`confirm`). A digest's record is never changed
// in place (rotation and revocation move the key to another digest), so a live digest confirms the cached record.
import { KeyRows } from './key-rows.ts';
import type { CounterMemo, KeyRecord } from './types.ts';

/** Longest a record found by its digest is used without the store confirming it. */
export const KEY_CACHE_MS = 1000;
/** Records kept; emptied when full (a cache of the keys in use, not of every key). */
export const CACHE_MAX = 4096;

export class KeyCache {
  /**
   * Entries are updated in place, an expired one kept for its key's next lookup (ADR 0100): a key used less than once
   * a second is looked up at each use, and an entry deleted and made again each time was promoted and died old.
   */
  private readonly byDigest = new Map<string, { record: KeyRecord; until: number }>();

  /** The record found or confirmed for `digest` less than KEY_CACHE_MS ago, if any. */
  get(digest: string, now: number): KeyRecord | undefined {
    const hit = this.byDigest.get(digest);
    return hit !== undefined && hit.until > now ? hit.record : undefined;
  }

  set(digest: string, record: KeyRecord, now: number): void {
    const hit = this.byDigest.get(digest);
    if (hit !== undefined) {
      hit.record = record;
      hit.until = now + KEY_CACHE_MS;
      return;
    }
    if (this.byDigest.size >= CACHE_MAX) this.byDigest.clear();
    this.byDigest.set(digest, { record, until: now + KEY_CACHE_MS });
  }

  /**
   * The store said at `at` (when the check was sent) that `digest` still names a live key: a key in use keeps its
   * record (with 1,000 keys used in turn each is seen about every second, and a lookup per request cost a round trip).
   */
  confirm(digest: string, at: number): void {
    const hit = this.byDigest.get(digest);
    if (hit !== undefined && hit.until < at + KEY_CACHE_MS) hit.until = at + KEY_CACHE_MS;
  }

  /** Forget one digest (the store said it is gone) or, without one, every record (a key changed here). */
  drop(digest?: string): void {
    if (digest === undefined) this.byDigest.clear();
    else this.byDigest.delete(digest);
  }
}

/**
 * The embedded store's cache (ADR 0072): records are kept while the store's keys version (a counter SQLite triggers
 * raise on every change of `vk_keys`, whichever process makes it) is the one they were read at, and that version was
 * read less than KEY_CACHE_MS ago. Any read of a record reads the version in the same statement, so a process serving
 * many keys reads the store about once a second, not once per key per second; a change anywhere is seen within
 * KEY_CACHE_MS, as with KeyCache, and drops every record.
 */
export class VersionedKeyCache {
  /**
   * Rows (ADR 0187, key-rows.ts: a key's digest, record and the keys version it was read at, no entry object per key),
   * updated in place when a record is read again (ADR 0100), all given up when the keys version changes.
   */
  private readonly rows = new KeyRows(1);
  private version = -1;
  private readAt = -Infinity;

  /** The record for `digest`, through the caller's memo of its row when it has one (ADR 0110, 0112). */
  get(digest: string, now: number, memo?: CounterMemo): KeyRecord | undefined {
    if (now - this.readAt >= KEY_CACHE_MS) return undefined;
    const row = this.rows.rowOf(digest, memo);
    return row >= 0 && this.rows.nums[row] === this.version ? this.rows.record(row) : undefined;
  }

  /** A record and the keys version read with it (in one statement), at `now`. */
  set(digest: string, record: KeyRecord, version: number, now: number): void {
    this.saw(version, now);
    if (this.rows.size >= CACHE_MAX && this.rows.rowOf(digest) < 0) this.rows.clear();
    // Put first: a new row may grow the numbers' array.
    const { row } = this.rows.put(digest, record);
    this.rows.nums[row] = version;
  }

  /** The keys version as read at `now`: a new one forgets every record read before it. */
  saw(version: number, now: number): void {
    if (version !== this.version) this.drop();
    this.version = version;
    this.readAt = now;
  }

  drop(digest?: string): void {
    if (digest === undefined) this.rows.clear();
    else this.rows.remove(digest);
  }

  /**
   * The keys version `digest`'s record was read at, if it is kept (whatever its age): while the store's version is
   * still that, no key was changed or removed, so the digest still names its key (ADR 0103).
   */
  versionOf(digest: string, memo?: CounterMemo): number | undefined {
    const row = this.rows.rowOf(digest, memo);
    return row >= 0 ? this.rows.nums[row] : undefined;
  }
}
