// A caller's memo of what a store found (CounterMemo; ADR 0107, 0110): the lookup it kept is used while it is the
// owner's and the owner dropped nothing since (`epoch`); the caller checks that the entry is the one it asks for.
import type { CounterMemo } from './types.ts';

/** What `memo` keeps for `owner`, if nothing was dropped since `epoch` (else undefined: look it up, then `remember`). */
export function recalled<E>(memo: CounterMemo | undefined, owner: object, epoch: number): E | undefined {
  return memo !== undefined && memo.owner === owner && memo.epoch === epoch ? (memo.entry as E) : undefined;
}

/** Keep `entry` in `memo` as `owner`'s at `epoch` (a memo-less call does nothing). */
export function remember(memo: CounterMemo | undefined, owner: object, entry: unknown, epoch: number): void {
  if (memo === undefined) return;
  memo.owner = owner;
  memo.entry = entry;
  memo.epoch = epoch;
}
