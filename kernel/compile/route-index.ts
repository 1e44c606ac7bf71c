// Which routes of a listener a request's path can select, found by the path's first segment (docs/perf.md open item
// 6: route selection scanned every route, about 0.24 µs each, so the last of 1,000 routes cost 240 µs a request).
// First-match order stays (ADR 0002): every list keeps its routes in config order, and a route is left out of a
// segment's list only when none of its matches can accept a path in that segment. The routes it keeps are tried
// whole, exactly as before, so which match wins (and the matched prefix) is unchanged.
import { firstSegmentOf } from './matchers.ts';
import type { CompiledRoute } from './snapshot.ts';

/** Fewer routes than this are scanned as they are: the lookup would cost more than it skips. */
const INDEX_FROM = 16;
/** Most route references all the segment lists may hold together; past it, the listener scans its routes. */
const MAX_REFERENCES = 200_000;

/** The routes a path can select, in config order. */
export type RoutesForPath = (path: string) => readonly CompiledRoute[];

/** Every first segment a route's matches can accept, or undefined when one of them may accept any path. */
function segmentsOf(route: CompiledRoute): Set<string> | undefined {
  if (route.matches === null) return undefined;
  const segments = new Set<string>();
  for (const m of route.matches) {
    if (m.firstSegment === undefined) return undefined;
    segments.add(m.firstSegment);
  }
  return segments;
}

/** How a listener finds the routes a request's path can select (made once per config load). */
export function indexRoutes(routes: readonly CompiledRoute[]): RoutesForPath {
  const all = (): readonly CompiledRoute[] => routes;
  if (routes.length < INDEX_FROM) return all;
  const perRoute = routes.map(segmentsOf);
  // Routes that may accept any path: in every list, and alone the list of a segment no route names.
  const anyPath = routes.filter((_, i) => perRoute[i] === undefined);
  const named = new Set<string>();
  for (const s of perRoute) if (s !== undefined) for (const seg of s) named.add(seg);
  if (named.size * anyPath.length > MAX_REFERENCES) return all;
  const bySegment = new Map<string, CompiledRoute[]>();
  for (const seg of named) bySegment.set(seg, []);
  routes.forEach((route, i) => {
    const segments = perRoute[i];
    if (segments === undefined) for (const list of bySegment.values()) list.push(route);
    else for (const seg of segments) bySegment.get(seg)!.push(route);
  });
  return (path) => bySegment.get(firstSegmentOf(path)) ?? anyPath;
}
