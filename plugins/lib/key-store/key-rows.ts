// The key caches' entries as rows (ADR 0187): a cached key is a row number, its digest and record in two dense arrays
// and its numbers (the keys version it was read at; the Redis cache's times) in one Float64Array row. With 1,000 keys
// used in turn an entry object per key was one more cold line per request (two on Redis, with its times), reached
// through the caller's memo; rows are given in the order keys are first seen, so keys used in turn use neighbouring
// rows and a request mostly finds its row's lines brought in by the key before it. Nothing here is made per lookup.
import { recalled, remember } from './memos.ts';
import type { CounterMemo, KeyRecord } from './types.ts';

/** `nums`, or a copy twice as long (as often as needed), so that it holds row `row` of `stride` numbers. */
export function withRow(nums: Float64Array<ArrayBuffer>, row: number, stride: number): Float64Array<ArrayBuffer> {
  if ((row + 1) * stride <= nums.length) return nums;
  let length = nums.length * 2;
  while ((row + 1) * stride > length) length *= 2;
  const grown = new Float64Array(length);
  grown.set(nums);
  return grown;
}

export class KeyRows {
  private readonly byDigest = new Map<string, number>();
  private digests: (string | undefined)[] = [];
  private records: (KeyRecord | undefined)[] = [];
  /** `stride` numbers per row (what they mean is the cache's). */
  nums: Float64Array<ArrayBuffer>;
  readonly stride: number;
  /** Rows given so far, and rows given up one by one (given again first). */
  private rows = 0;
  private free: number[] = [];
  /**
   * Raised whenever a row is given up: a memo or a row number kept before may name another key's row since (a caller
   * compares it with the value it read when it took the row).
   */
  drops = 0;

  constructor(stride: number) {
    this.stride = stride;
    this.nums = new Float64Array(64 * stride);
  }

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

  /** `digest`'s row with `record`, and whether it is new (its numbers are then the previous holder's: the caller sets them). */
  put(digest: string, record: KeyRecord): { row: number; fresh: boolean } {
    const kept = this.byDigest.get(digest);
    if (kept !== undefined) {
      this.records[kept] = record;
      return { row: kept, fresh: false };
    }
    const row = this.free.pop() ?? this.rows++;
    this.nums = withRow(this.nums, row, this.stride);
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
    this.free.push(row);
    return true;
  }

  /** Give up every row. */
  clear(): void {
    this.drops++;
    this.byDigest.clear();
    this.digests = [];
    this.records = [];
    this.rows = 0;
    this.free = [];
  }
}
