// What the `virtualKeys` policy keeps per key record (ADR 0100): the CEL view, the reservation plan with its counter
// names for the current windows, the lifetime counters' names and the key's metric series, in one object found by
// one WeakMap lookup per request. With 1,000 keys in turn each key is seen once every 1,000 requests: anything made
// again per use (names, entries, series handles) lived long enough to be promoted and died in the old generation.
// Bounded by the records themselves: an entry lives as long as its record, which the store's caches hold (capped).
import type { Budget, BudgetUnit, CounterMemo, KeyRecord } from '../../lib/key-store/types.ts';
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
 * for the current window kept until the window changes: a request builds no names and no closures.
 */
export interface Slot extends LineOwner {
  readonly scope: string;
  tag: string;
  counter: string;
  expiresAt: number;
  /** Where the store keeps its lookup of this slot's counter, for its lines and their settlements (ADR 0110). */
  readonly memo: CounterMemo;
}

/** What every request of one key reserves from, in order (key, team, organisation). */
export interface Plan {
  readonly slots: readonly Slot[];
  /** Whether a line is the key's lifetime counter of that unit (a `total` budget): then it is not settled twice. */
  readonly lifetimeTokens: boolean;
  readonly lifetimeUsd: boolean;
}

type Inc = { inc(by?: number): void };

/** One key record's state under one config (directory). */
export interface KeyState {
  readonly record: KeyRecord;
  /** What CEL sees as `key`. */
  readonly attribute: KeyAttribute;
  /** The key's team's budgets, when the team is declared. */
  readonly teamBudgets: readonly Budget[] | undefined;
  readonly plan: Plan;
  readonly lifetime: { readonly tokens: string; readonly usd: string };
  /** Where the store keeps its lookups of the two lifetime counters between settlements (ADR 0107). */
  readonly lifetimeMemos: { readonly tokens: CounterMemo; readonly usd: CounterMemo };
  /** Where the store keeps its lookup of the key itself between reservations (ADR 0110). */
  readonly storeMemo: CounterMemo;
  /** Spend series (by team, by key), resolved at the key's first priced answer. */
  teamSpend: Inc | undefined;
  keySpend: Inc | undefined;
}

function planOf(dir: KeyDirectory, record: KeyRecord, teamBudgets: readonly Budget[] | undefined): Plan {
  const slots: Slot[] = [];
  const add = (scope: string, who: string, budgets: readonly Budget[]): void => {
    for (const b of budgets) {
      // Two budgets of one unit and period share a counter: it is taken from once, against the lower limit.
      const same = slots.findIndex((s) => s.scope === scope && s.budget.unit === b.unit && s.budget.period === b.period);
      if (same !== -1) {
        if (b.limit < slots[same]!.budget.limit) slots[same] = { ...slots[same]!, who, budget: b };
        continue;
      }
      slots.push({ scope, who, budget: b, tag: '', counter: '', expiresAt: 0, memo: {} });
    }
  };
  add(`k:${record.id}`, `key \`${record.id}\``, record.budgets);
  if (teamBudgets) add(`t:${record.team!}`, `team \`${record.team!}\``, teamBudgets);
  add('g', 'the organisation (all keys)', dir.shared);
  const own = (unit: BudgetUnit): boolean => slots.some((s) => s.scope === `k:${record.id}` && s.budget.unit === unit && s.budget.period === 'total');
  return { slots, lifetimeTokens: own('tokens'), lifetimeUsd: own('usd') };
}

/** The record's state under `dir`, made at the record's first request. */
export function keyStateOf(dir: KeyDirectory, record: KeyRecord): KeyState {
  let state = dir.states.get(record);
  if (state !== undefined) return state;
  const teamBudgets = record.team !== undefined ? dir.teams.get(record.team) : undefined;
  state = {
    record,
    attribute: Object.freeze({
      id: record.id,
      name: record.name ?? '',
      owner: record.owner ?? '',
      team: record.team ?? '',
      models: record.models ?? [],
      metadata: record.metadata ?? {},
    }),
    teamBudgets,
    plan: planOf(dir, record, teamBudgets),
    lifetime: lifetimeCounters(record.id),
    lifetimeMemos: { tokens: {}, usd: {} },
    storeMemo: {},
    teamSpend: undefined,
    keySpend: undefined,
  };
  dir.states.set(record, state);
  return state;
}
