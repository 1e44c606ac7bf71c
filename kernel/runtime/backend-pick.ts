import type { CompiledBackendRef, CompiledRoute } from '../compile/snapshot.ts';

/**
 * A backend by weight among those in rotation, leaving out `exclude` (the one a retry moves away from). When
 * none is left: the excluded one again, else every backend as if healthy (Envoy's panic mode). O(backends), no
 * allocation.
 */
export function pickBackend(route: CompiledRoute, exclude: CompiledBackendRef | null): CompiledBackendRef | undefined {
  const health = route.health;
  if (health === null && exclude === null) return pickAny(route);
  const list = route.backends;
  const now = health === null ? 0 : performance.now();
  let total = 0;
  for (let i = 0; i < list.length; i++) {
    const b = list[i]!;
    if (b !== exclude && b.weight > 0 && (health === null || health.available(i, now))) total += b.weight;
  }
  if (total <= 0) return exclude ?? pickAny(route);
  let r = Math.random() * total;
  let last: CompiledBackendRef | undefined;
  for (let i = 0; i < list.length; i++) {
    const b = list[i]!;
    if (b === exclude || b.weight <= 0 || (health !== null && !health.available(i, now))) continue;
    last = b;
    r -= b.weight;
    if (r < 0) return b;
  }
  return last;
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
