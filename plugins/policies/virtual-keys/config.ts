import type { Budget, BudgetPeriod } from '../../lib/key-store/types.ts';

/** A budget as written in the config: one of `usd`, `tokens`, `requests`, and a period. */
export interface BudgetConfig {
  usd?: number;
  tokens?: number;
  requests?: number;
  period: BudgetPeriod;
}

export interface DeclaredKeyConfig {
  id: string;
  key: string;
  name?: string;
  owner?: string;
  team?: string;
  models?: string[];
  routes?: string[];
  budgets?: BudgetConfig[];
  metadata?: Record<string, unknown>;
}

export interface StoreConfig {
  sqlite?: { path: string; leases?: boolean };
  redis?: { url: string; prefix?: string; leases?: boolean };
  postgres?: { url: string; tablePrefix?: string };
}

export interface VirtualKeysConfig {
  store?: StoreConfig;
  mode?: 'strict' | 'optional';
  outputEstimate?: number;
  budgets?: BudgetConfig[];
  teams?: { name: string; budgets?: BudgetConfig[] }[];
  keys?: DeclaredKeyConfig[];
}

/** `{usd: 5, period: day}` -> `{unit: 'usd', limit: 5, period: 'day'}`; undefined when malformed (the API checks). */
export function toBudget(b: BudgetConfig): Budget | undefined {
  const units = (['usd', 'tokens', 'requests'] as const).filter((u) => b[u] !== undefined);
  if (units.length !== 1) return undefined;
  const limit = b[units[0]!]!;
  // Finite too: JSON's 1e309 (and YAML's .inf) read as Infinity, a budget shown as null that refused every request.
  if (typeof limit !== 'number' || !(limit > 0) || !Number.isFinite(limit)) return undefined;
  if (!['minute', 'hour', 'day', 'month', 'total'].includes(b.period)) return undefined;
  return { unit: units[0]!, limit, period: b.period };
}

/** The config spelling of a budget, for the API's answers. */
export function fromBudget(b: Budget): BudgetConfig {
  return { [b.unit]: b.limit, period: b.period } as unknown as BudgetConfig;
}
