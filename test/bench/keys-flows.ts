// What the virtualKeys policy asks of a key store per request, for the in-process key-store benches
// (keys-redis-cpu.ts, keys-redis-store-js.ts): key k's six counter lines (its own, its team's and the organisation's
// USD per month and tokens per day, named as reservation.ts names them), their refunds, and the key's two lifetime
// sums. Each key has its own name strings, as the policy's per-key state does.
import { digestOf } from '../../plugins/lib/key-store/secrets.ts';
import type { CounterDelta, CounterLine } from '../../plugins/lib/key-store/types.ts';

export const TEAMS = 100;
/** The secret of bench key `i`. */
export const benchSecret = (i: number): string => `sk-bench-${String(i).padStart(4, '0')}-0123456789abcdef`;

/** The current window's tag and its counter's expiry (the window's end plus a day), as periods.ts gives them. */
const window = (period: 'month' | 'day'): { tag: string; exp: number } => {
  const d = new Date();
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  return period === 'month'
    ? { tag: `${y}-${String(m + 1).padStart(2, '0')}`, exp: Date.UTC(y, m + 1, 1) + 86_400_000 }
    : { tag: d.toISOString().slice(0, 10), exp: Date.UTC(y, m, d.getUTCDate() + 1) + 86_400_000 };
};
const month = window('month');
const day = window('day');

export interface KeyFlow {
  readonly digest: string;
  readonly lines: CounterLine[];
  readonly deltas: CounterDelta[];
  /** The key's record as a store keeps it (JSON). */
  readonly record: string;
}

/**
 * Key k's reservation lines, settlement deltas (refunds, then the lifetime sums) and stored record. `team`: keys.ts's
 * `team` shape (ADR 0105): the key's team's USD line only.
 */
export function keyFlow(k: number, shape: 'own' | 'team' = 'own'): KeyFlow {
  const usd = (scope: string): CounterLine => ({ counter: `${scope}:usd:month:${month.tag}`, limit: 1e15, amount: 0.0021, expiresAt: month.exp });
  const lines: CounterLine[] =
    shape === 'team'
      ? [usd(`t:team-${k % TEAMS}`)]
      : [`k:key-${k}`, `t:team-${k % TEAMS}`, 'g'].flatMap((scope) => [usd(scope), { counter: `${scope}:tokens:day:${day.tag}`, limit: 1e15, amount: 4120, expiresAt: day.exp }]);
  const deltas: CounterDelta[] = lines.map((l) => ({ counter: l.counter, amount: l.counter.includes(':usd:') ? -0.0018 : -4071, expiresAt: l.expiresAt }));
  // Each key's lifetime deltas carry the key's memos (ADR 0107), as the policy's per-key state does.
  deltas.push({ counter: `k:key-${k}:tokens:total:all`, amount: 49, expiresAt: 0, lazy: true, memo: {} }, { counter: `k:key-${k}:usd:total:all`, amount: 0.0003, expiresAt: 0, lazy: true, memo: {} });
  const record = JSON.stringify({ id: `key-${k}`, team: `team-${k % TEAMS}`, budgets: [], prefix: 'sk-bench', createdAt: new Date(0).toISOString(), source: 'api' });
  return { digest: digestOf(benchSecret(k)), lines, deltas, record };
}

/** KEYS_SHAPE=team: the benches' flows in keys.ts's `team` shape (one team line per request); else the six lines. */
export const benchShape: 'own' | 'team' = process.env.KEYS_SHAPE === 'team' ? 'team' : 'own';
if (process.env.KEYS_SHAPE !== undefined && process.env.KEYS_SHAPE !== 'team' && process.env.KEYS_SHAPE !== 'own') throw new Error('KEYS_SHAPE: `own` or `team`');
