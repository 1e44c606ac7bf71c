// A request's counters found through its first line's state (ADR 0102, the Redis store's; ADR 0103 for SQLite): the
// state of a reservation's first line keeps the states of that reservation's lines and their names, so the key's next
// reservation, and the settlement that follows each (the same counters in the same order), look up one counter in
// the settlement queue's Map instead of each. With 1,000 keys in turn the queue holds thousands of counters, each
// lookup a cache miss or more; with one key they were hot anyway. The first line's state itself, and the first
// delta's, are found through the memo the line or delta carries (ADR 0110: the policy keeps one per budget slot of a
// key), and a key's lifetime sums through theirs (ADR 0107: a team's line is the first line of its ten keys, and
// could not keep theirs).
import { CounterState } from './settlement-queue.ts';
import type { LazySums, LazyState } from './lazy-sums.ts';
import type { SettlementQueue } from './settlement-queue.ts';
import type { CounterDelta, CounterMemo } from './types.ts';

const NO_GROUP: GroupedCounter[] = [];
const NO_NAMES: string[] = [];

/** A counter's settlement state that can also hold its reservation's group (when it was the first line). */
export class GroupedCounter extends CounterState {
  /**
   * The states of the lines of the last reservation whose first line this counter was, and their names as that
   * reservation gave them (reused in place), valid while the queue's `trims` is still `groupTrims` (a trim may have
   * dropped one of them: the queue would then hold another state for that counter).
   */
  group: GroupedCounter[] = NO_GROUP;
  groupNames: string[] = NO_NAMES;
  groupTrims = 0;
}

/**
 * Each line's state (the first line's through its memo, else looked up; the others looked up only while the group is valid and the names match; a new window or
 * another key's plan changes a name), recorded as the first line's group, and `visit`ed with its line's index. The
 * queue must not trim between this and the use of the states (`stateFor` never does).
 */
export function lineStates<S extends GroupedCounter>(pending: SettlementQueue<S>, lines: readonly { readonly counter: string; readonly memo?: CounterMemo }[], visit: (c: S, i: number) => void): void {
  if (lines.length === 0) return;
  const first = pending.stateFor(lines[0]!.counter, lines[0]!.memo);
  // One line (a team's budget alone; ADR 0187): nothing to find through a group, whose two arrays would be two more
  // of the team's lines to reach, cold again after a hundred other teams' requests.
  if (lines.length === 1) {
    visit(first, 0);
    return;
  }
  const known = first.groupTrims === pending.trims && first.group.length === lines.length;
  if (first.group.length !== lines.length) {
    first.group = new Array<GroupedCounter>(lines.length);
    first.groupNames = new Array<string>(lines.length);
  }
  first.groupTrims = pending.trims;
  const group = first.group as S[];
  const names = first.groupNames;
  for (let i = 0; i < lines.length; i++) {
    const name = lines[i]!.counter;
    const c = i === 0 ? first : known && names[i] === name ? group[i]! : pending.stateFor(name);
    if (group[i] !== c) group[i] = c;
    if (names[i] !== name) names[i] = name;
    visit(c, i);
  }
}

/**
 * A request's settlement: its first delta looked up, the others through the first line's group when they follow it
 * (same names, same order), else looked up; lifetime deltas (`lazy`) into `lazy`, through their memos (ADR 0107).
 * `add` queues a delta on its state (the Redis store's first offers it to the counter's lease, ADR 0108).
 */
export function settleGrouped<S extends GroupedCounter, L extends LazyState>(
  pending: SettlementQueue<S>,
  lazy: LazySums<L>,
  deltas: readonly CounterDelta[],
  add: (s: S, amount: number, expiresAt: number) => void = (s, amount, expiresAt) => pending.addTo(s, amount, expiresAt),
): void {
  let first: S | undefined;
  let j = 0;
  let now = 0;
  for (let i = 0; i < deltas.length; i++) {
    const d = deltas[i]!;
    if (d.lazy) {
      lazy.add(d, (now ||= Date.now()));
      continue;
    }
    if (first === undefined) {
      first = pending.settling(d.counter, d.memo);
      add(first, d.amount, d.expiresAt);
      continue;
    }
    // The group is the queue's states while no trim has dropped any since it was recorded (a `settling` below may).
    const group = (first.groupTrims === pending.trims ? first.group : NO_GROUP) as S[];
    const names = first.groupNames;
    while (j < group.length && names[j] !== d.counter) j++;
    if (j < group.length) add(group[j++]!, d.amount, d.expiresAt);
    else add(pending.settling(d.counter, d.memo), d.amount, d.expiresAt);
  }
}
