// The numbers every answer of a key adds to (ADR 0177): its lifetime tokens and USD waiting to be settled, and its USD
// waiting for its `/metrics` series (by key, by team), in one Float64Array for all keys, at a slot number the key's
// state holds. With 1,000 keys used in turn each key's objects are cold at its next request, and a request reached a
// dozen lines of its own key: two lifetime memos, the store's two sums and their number boxes, two series and their
// boxes. An answer now writes one line here; the lifetime sums go to the store every FLUSH_MS (as lazy settlements due
// at once, ADR 0072, 0187), through memos kept per slot (ADR 0107), and the costs to the series when `/metrics` is
// read. Kept with the store across reloads (its handle), so nothing waiting is lost.
import type { Logger } from 'switchyard/sdk';
import { FloatRows } from '../../lib/key-store/key-rows.ts';
import type { CounterDelta, CounterMemo, KeyStore } from '../../lib/key-store/types.ts';

/**
 * Longest an answer's lifetime usage waits here before it goes to the store, summed already (`summed`: the store's
 * lazy sums take it as due, to be written with the next reservations a few at a time, not LAZY_MS later; ADR 0187).
 * It held it 3 s, then the store 5 s more (ADR 0177): one wait in place of two, about as long, so each key's sums are
 * handed on a third as often (with 1,000 keys in turn each hand-on reaches a dozen cold lines of the key: its memos,
 * the store's sums and queue states). Another replica sees a key's lifetime usage within about 8 s on a busy gateway
 * and 13 s on an idle one, as before; this one at once (its usage API hands these to the store first).
 */
export const FLUSH_MS = 8000;
/** Keys with a slot; past it every sum is handed on and the slots are given again (states see a new generation). */
export const SLOTS_MAX = 65_536;

/**
 * Numbers per slot: lifetime tokens, lifetime USD (waiting for the store), series USD, and whether the slot's lifetime
 * sums are on the waiting list.
 */
const STRIDE = 4;
const TOKENS = 0;
const USD = 1;
const SPEND = 2;
const LISTED = 3;

type Inc = { inc(by?: number): void };

/** What a slot is given for: a key's state (key-state.ts) holds its slot and the generation it was given in. */
export interface NumberedKey {
  readonly id: string;
  readonly team: string | undefined;
  /** The lifetime counters' names, undefined when a `total` budget's line is that counter (not settled twice). */
  readonly lifetimeTokens: string | undefined;
  readonly lifetimeUsd: string | undefined;
  slot: number;
  slotGeneration: number;
}

export class KeyNumbers {
  /** Slots are given in order, none given up one by one (all are at `renumber`). */
  private readonly values = new FloatRows(STRIDE);
  private readonly slotById = new Map<string, number>();
  private ids: string[] = [];
  private tokenNames: (string | undefined)[] = [];
  private usdNames: (string | undefined)[] = [];
  /** Where the store keeps its lookup of each lifetime counter between flushes (one per slot and unit). */
  private tokenMemos: CounterMemo[] = [];
  private usdMemos: CounterMemo[] = [];
  private teams: (string | undefined)[] = [];
  private series: (Inc | undefined)[] = [];
  private teamSeries: (Inc | undefined)[] = [];
  /** Slots with lifetime sums waiting, each once (its LISTED number). */
  private waiting: number[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** Raised when slots are given again: a state's slot of an older generation is not used. */
  generation = 1;
  store: KeyStore | undefined;
  logger: Logger | undefined;
  /** The series of a key id and of a team (`none` for keys without one), set by the handle's first load. */
  seriesOf: ((id: string) => Inc) | undefined;
  teamSeriesOf: ((team: string) => Inc) | undefined;

  /** `key`'s slot (given at its first answer in this generation), with its lifetime counters' names from its state. */
  private slotOf(key: NumberedKey): number {
    if (key.slotGeneration === this.generation) return key.slot;
    let slot = this.slotById.get(key.id);
    if (slot === undefined) {
      if (this.slotById.size >= SLOTS_MAX) this.renumber();
      slot = this.values.give();
      this.slotById.set(key.id, slot);
      this.ids[slot] = key.id;
      this.series[slot] = undefined;
      this.teams[slot] = key.team;
      this.teamSeries[slot] = undefined;
      this.tokenMemos[slot] = {};
      this.usdMemos[slot] = {};
    } else if (this.tokenNames[slot] !== key.lifetimeTokens || this.usdNames[slot] !== key.lifetimeUsd || this.teams[slot] !== key.team) {
      // The key's plan or team changed: what it has waiting goes to the counters and the team it was for (its own
      // slot only: a reload that edits many keys walked every slot at each one's first answer).
      this.flushSlot(slot);
      if (this.teams[slot] !== key.team) {
        this.teams[slot] = key.team;
        this.teamSeries[slot] = undefined;
      }
    }
    this.tokenNames[slot] = key.lifetimeTokens;
    this.usdNames[slot] = key.lifetimeUsd;
    key.slot = slot;
    key.slotGeneration = this.generation;
    return slot;
  }

  /** Everything handed on, every slot forgotten (past SLOTS_MAX keys). */
  private renumber(): void {
    this.flush();
    this.slotById.clear();
    this.ids = [];
    this.tokenNames = [];
    this.usdNames = [];
    this.tokenMemos = [];
    this.usdMemos = [];
    this.teams = [];
    this.series = [];
    this.teamSeries = [];
    this.values.clear();
    this.generation++;
  }

  /** An answer's real usage on the key's lifetime counters (those a `total` budget does not stand for). */
  addLifetime(key: NumberedKey, tokens: number, usd: number): void {
    if (key.lifetimeTokens === undefined && key.lifetimeUsd === undefined) return;
    const at = this.slotOf(key) * STRIDE;
    const v = this.values.nums;
    if (key.lifetimeTokens !== undefined) v[at + TOKENS] += tokens;
    if (key.lifetimeUsd !== undefined) v[at + USD] += usd;
    if (v[at + LISTED] !== 0) return;
    v[at + LISTED] = 1;
    this.waiting.push(at / STRIDE);
    if (this.timer === undefined) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        void this.flushLifetime();
      }, FLUSH_MS);
      this.timer.unref();
    }
  }

  /** An answer's cost for the key's and its team's `/metrics` series. */
  addSpend(key: NumberedKey, usd: number): void {
    if (!(usd > 0) || usd === Infinity) return;
    const at = this.slotOf(key) * STRIDE;
    this.values.nums[at + SPEND] += usd;
  }

  /**
   * Hand on everything waiting: costs to the series, lifetime sums to the store. Returns the store's promise when it
   * has one (a shared store), so a close can wait for it.
   */
  flush(): Promise<void> | undefined {
    this.flushSpend();
    return this.flushLifetime();
  }

  /** Costs to the series (`/metrics` is being read): every slot's, one pass over the array. */
  flushSpend(): void {
    const slots = this.slotById.size;
    for (let slot = 0; slot < slots; slot++) this.spendOf(slot);
  }

  /** One slot's cost to its key's and team's series. */
  private spendOf(slot: number): void {
    const v = this.values.nums;
    const spend = v[slot * STRIDE + SPEND]!;
    if (spend === 0) return;
    v[slot * STRIDE + SPEND] = 0;
    if (this.seriesOf !== undefined) (this.series[slot] ??= this.seriesOf(this.ids[slot]!)).inc(spend);
    if (this.teamSeriesOf !== undefined) (this.teamSeries[slot] ??= this.teamSeriesOf(this.teams[slot] || 'none')).inc(spend);
  }

  /**
   * One slot's cost and lifetime sums handed on (its names or team are about to change). It stays on the waiting
   * list, its sums 0, so it is not listed twice.
   */
  private flushSlot(slot: number): void {
    this.spendOf(slot);
    if (this.store === undefined || this.values.nums[slot * STRIDE + LISTED] === 0) return;
    const deltas: CounterDelta[] = [];
    this.lifetimeOf(slot, deltas);
    void this.settle(deltas, 1);
  }

  /** Lifetime sums to the store, as lazy settlements. */
  private flushLifetime(): Promise<void> | undefined {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    // No store yet (it is set before the first request): the sums wait for the next flush.
    if (this.waiting.length === 0 || this.store === undefined) return undefined;
    const slots = this.waiting;
    this.waiting = [];
    const deltas: CounterDelta[] = [];
    for (const slot of slots) {
      this.lifetimeOf(slot, deltas);
      this.values.nums[slot * STRIDE + LISTED] = 0;
    }
    return this.settle(deltas, slots.length);
  }

  /** A slot's lifetime sums onto `deltas`, taken from the slot. */
  private lifetimeOf(slot: number, deltas: CounterDelta[]): void {
    const v = this.values.nums;
    const at = slot * STRIDE;
    const tokens = v[at + TOKENS]!;
    const usd = v[at + USD]!;
    v[at + TOKENS] = v[at + USD] = 0;
    const tokenName = this.tokenNames[slot];
    const usdName = this.usdNames[slot];
    if (tokens !== 0 && tokenName !== undefined) deltas.push({ counter: tokenName, amount: tokens, expiresAt: 0, lazy: true, summed: true, memo: this.tokenMemos[slot] });
    if (usd !== 0 && usdName !== undefined) deltas.push({ counter: usdName, amount: usd, expiresAt: 0, lazy: true, summed: true, memo: this.usdMemos[slot] });
  }

  /** `deltas` (of `keys` keys) to the store; its promise when it has one (a shared store). */
  private settle(deltas: CounterDelta[], keys: number): Promise<void> | undefined {
    if (deltas.length === 0) return undefined;
    const failed = (err: unknown): void => this.logger?.error('virtual key lifetime settlement failed', { keys, error: err as Error });
    try {
      const done = this.store!.settle(deltas);
      if (done instanceof Promise) return done.catch(failed);
    } catch (err) {
      failed(err);
    }
    return undefined;
  }
}
