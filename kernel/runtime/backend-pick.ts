import type { CompiledBackendRef, CompiledRoute } from '../compile/snapshot.ts';

/**
 * A backend by weight among those in rotation (healthy, not cooling down), leaving out `exclude` (the one a retry
 * moves away from) and those in `tried` (default failover tries each once, ADR 0039). When none is left: with
 * `tried`, none; else the excluded one again, else every backend as if healthy (Envoy's panic mode).
 * O(backends), no allocation.
 */
export function pickBackend(route: CompiledRoute, exclude: CompiledBackendRef | null, tried?: readonly CompiledBackendRef[]): CompiledBackendRef | undefined {
  const health = route.health;
  const cooling = route.cooling;
  if (health === null && exclude === null && !cooling) return pickAny(route);
  const list = route.backends;
  const now = health === null && !cooling ? 0 : performance.now();
  let total = 0;
  for (let i = 0; i < list.length; i++) if (usable(route, i, exclude, tried, now)) total += list[i]!.weight;
  if (total <= 0) {
    if (tried !== undefined) return untried(route, tried);
    return exclude ?? pickAny(route);
  }
  let r = Math.random() * total;
  let last: CompiledBackendRef | undefined;
  for (let i = 0; i < list.length; i++) {
    const b = list[i]!;
    if (!usable(route, i, exclude, tried, now)) continue;
    last = b;
    r -= b.weight;
    if (r < 0) return b;
  }
  return last;
}

function usable(route: CompiledRoute, i: number, exclude: CompiledBackendRef | null, tried: readonly CompiledBackendRef[] | undefined, now: number): boolean {
  const b = route.backends[i]!;
  return (
    b !== exclude &&
    b.weight > 0 &&
    (tried === undefined || !tried.includes(b)) &&
    (route.health === null || route.health.available(i, now)) &&
    (b.cooldown === null || b.cooldown.until <= now)
  );
}

/** Every backend left is out of rotation or cooling: the first one not tried yet, in configured order. */
function untried(route: CompiledRoute, tried: readonly CompiledBackendRef[]): CompiledBackendRef | undefined {
  for (const b of route.backends) if (b.weight > 0 && !tried.includes(b)) return b;
  return undefined;
}

function pickAny(route: CompiledRoute): CompiledBackendRef | undefined {
  const list = route.backends;
  if (list.length === 1) return list[0]!.weight > 0 ? list[0] : undefined;
  if (route.totalWeight <= 0) return undefined;
  let r = Math.random() * route.totalWeight;
  for (const b of list) {
    r -= b.weight;
    if (r < 0) return b;
  }
  return list[list.length - 1];
}

/**
 * The first of `order` (places in `route.backends`, a policy's choice: virtual models) in rotation and not tried;
 * when every one left is out of rotation or cooling, the first not tried (a try beats a refusal). O(order), no
 * allocation.
 */
export function pickInOrder(route: CompiledRoute, order: readonly number[], tried?: readonly CompiledBackendRef[]): CompiledBackendRef | undefined {
  const list = route.backends;
  const now = performance.now();
  let fallback: CompiledBackendRef | undefined;
  for (let k = 0; k < order.length; k++) {
    const i = order[k]!;
    const b = list[i];
    if (b === undefined || (tried !== undefined && tried.includes(b))) continue;
    if ((route.health === null || route.health.available(i, now)) && (b.cooldown === null || b.cooldown.until <= now)) return b;
    fallback ??= b;
  }
  return fallback;
}
