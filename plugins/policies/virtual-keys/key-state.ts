// What the `virtualKeys` policy keeps per key (ADR 0100, 0112): the CEL view, the reservation's slots with their
// counter names for the current windows, the lifetime counters' names and the key's slot among the numbers (ADR 0177),
// in one object found by the key's digest, one map lookup per request. With 1,000 keys in turn each key is seen once
// every 1,000 requests: anything made again per use (names, entries, series handles) lived long enough to be promoted
// and died in the old generation. Bounded: at most STATES_MAX states per config (the directory), emptied when full.
import type { Budget, BudgetUnit, CounterMemo, KeyRecord } from '../../lib/key-store/types.ts';
import type { NumberedKey } from './key-numbers.ts';
import type { KeyAttribute, KeyDirectory } from './virtual-keys.ts';

/** Counter name of a budget's current window: `k:<id>:usd:day:2026-11-25`, `t:<team>:tokens:month:2026-11`. */
export function counterName(scope: string, b: Budget, tag: string): string {
  return `${scope}:${b.unit}:${b.period}:${tag}`;
}

/**
 * A key's lifetime counters (tokens, USD): the counters a `total` budget of that unit would use, so a key with such a
 * budget keeps one counter, not two. Settled with the real usage of every LLM call of the key, budgets or not (ADR 0072).
 */
export function lifetimeCounters(id: string): { readonly tokens: string; readonly usd: string } {
  return { tokens: `k:${id}:tokens:total:all`, usd: `k:${id}:usd:total:all` };
}

/** Whose budget a line draws from, for the refusal's message. */
export interface LineOwner {
  readonly who: string;
  readonly budget: Budget;
}

/**
 * One counter a key's requests take from (a budget of the key, its team or the organisation), with its counter name
 * for the current window kept until the window changes: a request builds no names and no closures. The slot is also
 * where the store keeps its lookup of the counter (its CounterMemo fields; ADR 0110): one object per line, not two.
 */
export interface Slot extends LineOwner, CounterMemo {
  readonly scope: string;
  tag: string;
  counter: string;
  expiresAt: number;
}

/**
 * One key's state under one config (directory), found by the key's digest. It is also where the store keeps its
 * lookup of the key between requests (its CounterMemo fields; ADR 0110, 0112): with 1,000 keys in turn each of these
 * objects is cold at its key's next request, and every object between the digest and the reservation's lines cost a
 * cache miss (ADR 0112: one map lookup and one object where there were two lookups and six objects).
 */
export interface KeyState extends CounterMemo, NumberedKey {
  readonly record: KeyRecord;
  /** The record's fields every request reads, here so that a request touches the state, not the record too. */
  readonly id: string;
  readonly team: string | undefined;
  readonly routes: readonly string[] | undefined;
  readonly models: readonly string[] | undefined;
  /** The digest the key was found by, the instance the maps hold (undefined for a key declared in the config). */
  readonly digest: string | undefined;
  /** What CEL sees as `key`. */
  readonly attribute: KeyAttribute;
  /** The SDK `principal` of the key's requests: `key:<id>`, made once. */
  readonly principal: string;
  /** What every request of the key reserves from, in order (key, team, organisation; the last two shared, ADR 0113). */
  readonly slots: readonly Slot[];
  /**
   * The key's lifetime counters' names, settled with the real usage of every answer (through the numbers, ADR 0177);
   * undefined when a `total` budget's line is that counter (then it is not settled twice).
   */
  readonly lifetimeTokens: string | undefined;
  readonly lifetimeUsd: string | undefined;
}

/** Slots of `budgets` under `scope`, appended to `slots`; two budgets of one unit and period share a counter (at the lower limit). */
function addSlots(slots: Slot[], scope: string, who: string, budgets: readonly Budget[]): void {
  const from = slots.length;
  for (const b of budgets) {
    const same = slots.findIndex((s, i) => i >= from && s.budget.unit === b.unit && s.budget.period === b.period);
    if (same !== -1) {
      if (b.limit < slots[same]!.budget.limit) slots[same] = { ...slots[same]!, who, budget: b };
      continue;
    }
    slots.push({ scope, who, budget: b, tag: '', counter: '', expiresAt: 0, owner: undefined, entry: undefined, epoch: 0 });
  }
}

/**
 * The slots the keys of each declared team share (its team's budgets, then the organisation's), and under `''` the
 * organisation's alone for keys without a declared team; made once per config load (ADR 0113). A team's counter has
 * one slot whichever key takes from it, so a key without budgets of its own has no slot of its own, and a request of
 * one of 1,000 keys finds its team's slot warm from the team's other keys. The organisation's slots are the same
 * objects in every list.
 */
export function sharedSlotLists(teams: ReadonlyMap<string, readonly Budget[]>, shared: readonly Budget[]): ReadonlyMap<string, readonly Slot[]> {
  const organisation: Slot[] = [];
  addSlots(organisation, 'g', 'the organisation (all keys)', shared);
  const lists = new Map<string, readonly Slot[]>([['', organisation]]);
  for (const [team, budgets] of teams) {
    const slots: Slot[] = [];
    addSlots(slots, `t:${team}`, `team \`${team}\``, budgets);
    lists.set(team, [...slots, ...organisation]);
  }
  return lists;
}

/** What a key's requests reserve from, in order: its own budgets' slots, then its team's and the organisation's (shared). */
function slotsOf(dir: KeyDirectory, record: KeyRecord): readonly Slot[] {
  const shared = dir.sharedSlots.get(record.team ?? '') ?? dir.sharedSlots.get('')!;
  if (record.budgets.length === 0) return shared;
  const slots: Slot[] = [];
  addSlots(slots, `k:${record.id}`, `key \`${record.id}\``, record.budgets);
  for (const s of shared) slots.push(s);
  return slots;
}

/** Key states kept per directory; emptied when full (the keys in use, not every key). */
export const STATES_MAX = 4096;

/**
 * The state of `record`, found by `digest`: the one kept for that digest while it names the same record, else made
 * and kept. A record read again after a change is another object, so a changed key gets a new state. A key declared
 * in the config is kept by its digest too, but its state has none (the store has nothing to confirm).
 */
export function keyStateOf(dir: KeyDirectory, record: KeyRecord, digest: string, declared = false): KeyState {
  let state = dir.byDigest.get(digest);
  if (state !== undefined && state.record === record) return state;
  const slots = slotsOf(dir, record);
  const ownTotal = (unit: BudgetUnit): boolean => slots.some((s) => s.scope === `k:${record.id}` && s.budget.unit === unit && s.budget.period === 'total');
  const names = lifetimeCounters(record.id);
  state = {
    record,
    id: record.id,
    team: record.team,
    routes: record.routes,
    models: record.models,
    digest: declared ? undefined : digest,
    attribute: Object.freeze({
      id: record.id,
      name: record.name ?? '',
      owner: record.owner ?? '',
      team: record.team ?? '',
      models: record.models ?? [],
      metadata: record.metadata ?? {},
    }),
    principal: `key:${record.id}`,
    slots,
    lifetimeTokens: ownTotal('tokens') ? undefined : names.tokens,
    lifetimeUsd: ownTotal('usd') ? undefined : names.usd,
    owner: undefined,
    entry: undefined,
    epoch: 0,
    slot: 0,
    slotGeneration: 0,
  };
  if (dir.byDigest.size >= STATES_MAX) dir.byDigest.clear();
  dir.byDigest.set(digest, state);
  return state;
}
