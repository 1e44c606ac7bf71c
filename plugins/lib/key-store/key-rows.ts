// The key caches' entries as rows (ADR 0187): a cached key is a row number, its digest and record in two dense arrays
// and its numbers (the keys version it was read at; the Redis cache's times) in one Float64Array row. With 1,000 keys
// used in turn an entry object per key was one more cold line per request (two on Redis, with its times), reached
// through the caller's memo; rows are given in the order keys are first seen, so keys used in turn use neighbouring
// rows and a request mostly finds its row's lines brought in by the key before it. Nothing here is made per lookup.
import { recalled, remember } from './memos.ts';
import type { CounterMemo, KeyRecord } from './types.ts';

/**
 * Rows of `stride` numbers in one Float64Array (ADR 0187): given in order, given up one by one (given again first),
 * the array doubled when a row does not fit. The one allocator of the key stores' and the keys' numbers.
 */
export class FloatRows {
  /** Replaced by a longer copy when it grows: read it again after `give`. */
  nums: Float64Array<ArrayBuffer>;
  readonly stride: number;
  /** Rows given so far, and rows given up since (given again first). */
  private given = 0;
  private freed: number[] = [];

  constructor(stride: number, rows = 64) {
    this.stride = stride;
    this.nums = new Float64Array(rows * stride);
  }

  /** A row, its numbers 0. */
  give(): number {
    const row = this.freed.pop() ?? this.given++;
    const end = (row + 1) * this.stride;
    if (end > this.nums.length) {
      let length = this.nums.length * 2;
      while (end > length) length *= 2;
      const grown = new Float64Array(length);
      grown.set(this.nums);
      this.nums = grown;
    } else this.nums.fill(0, end - this.stride, end);
    return row;
  }

  /** Give up `row` (its numbers are zeroed when it is given again). */
  free(row: number): void {
    this.freed.push(row);
  }

  /** Give up every row (the array is kept). */
  clear(): void {
    this.given = 0;
    this.freed = [];
  }
}

export class KeyRows extends FloatRows {
  private readonly byDigest = new Map<string, number>();
  private digests: (string | undefined)[] = [];
  private records: (KeyRecord | undefined)[] = [];
  /**
   * Raised whenever a row is given up: a memo or a row number kept before may name another key's row since (a caller
   * compares it with the value it read when it took the row).
   */
  drops = 0;

  get size(): number {
    return this.byDigest.size;
  }

  /**
   * The row of `digest` (-1: not kept), through the caller's memo while it holds this cache's row for that digest and
   * no row was given up since (ADR 0110), else looked up and remembered.
   */
  rowOf(digest: string, memo?: CounterMemo): number {
    const kept = recalled<number>(memo, this, this.drops);
    if (kept !== undefined && this.digests[kept] === digest) return kept;
    const row = this.byDigest.get(digest);
    if (row === undefined) return -1;
    remember(memo, this, row, this.drops);
    return row;
  }

  /** The record of a kept row. */
  record(row: number): KeyRecord {
    return this.records[row]!;
  }

  /** `digest`'s row with `record`, and whether it is new (its numbers 0: the caller sets them). */
  put(digest: string, record: KeyRecord): { row: number; fresh: boolean } {
    const kept = this.byDigest.get(digest);
    if (kept !== undefined) {
      this.records[kept] = record;
      return { row: kept, fresh: false };
    }
    const row = this.give();
    this.digests[row] = digest;
    this.records[row] = record;
    this.byDigest.set(digest, row);
    return { row, fresh: true };
  }

  /** Give up `digest`'s row (false when it is not kept). */
  remove(digest: string): boolean {
    const row = this.byDigest.get(digest);
    if (row === undefined) return false;
    this.drops++;
    this.byDigest.delete(digest);
    this.digests[row] = this.records[row] = undefined;
    this.free(row);
    return true;
  }

  /** Give up every row. */
  override clear(): void {
    super.clear();
    this.drops++;
    this.byDigest.clear();
    this.digests = [];
    this.records = [];
  }
}
