// Route selection through the path index (route-index.ts) against a scan of every route: the same route and matched
// prefix for every request, with routes of every kind of match mixed in config order.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { selectRoute } from '../runtime/request-exchange.ts';
import type { ExchangeImpl } from '../runtime/exchange-impl.ts';
import { compileHostnameTest, compileMatch } from './matchers.ts';
import type { MatchConfig } from './matchers.ts';
import { indexRoutes } from './route-index.ts';
import type { CompiledListener, CompiledRoute } from './snapshot.ts';

/** A small deterministic generator (the same routes and paths on every run). */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const SEGMENTS = ['api', 'v1', 'users', 'mcp', 'a', 'b', 'health', 'static', 'x-y', ''];

function makeRoutes(count: number, rnd: () => number): CompiledRoute[] {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rnd() * list.length)]!;
  const path = (): string => `/${Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => pick(SEGMENTS)).join('/')}`;
  const routes: CompiledRoute[] = [];
  for (let i = 0; i < count; i++) {
    const matches: MatchConfig[] = [];
    for (let m = 0, n = Math.floor(rnd() * 3); m < n; m++) {
      const match: MatchConfig = {};
      const kind = rnd();
      if (kind < 0.35) match.path = { pathPrefix: rnd() < 0.1 ? '/' : path() + (rnd() < 0.2 ? '/' : '') };
      else if (kind < 0.7) match.path = { exact: path() };
      else if (kind < 0.8) {
        const seg = pick(SEGMENTS.filter((x) => x !== ''));
        // Literal first segments (indexed) and ones a quantifier, a `.` or an alternation makes open (not indexed).
        match.path = { regex: pick([`/${seg}.*`, `/${seg}/[a-z0-9/]+`, `/${seg}`, `/${seg}/*[a-z]*`, `/${seg}/?`, `/${seg}|/a/b`, `/[a-z]+/${seg}`, `/${seg}(/.*)?`]) };
      }
      if (rnd() < 0.2) match.method = pick(['GET', 'POST']);
      if (rnd() < 0.1) match.headers = [{ name: 'x-tenant', value: { exact: pick(['t1', 't2']) } }];
      matches.push(match);
    }
    const hostnames = rnd() < 0.15 ? [pick(['a.example', '*.example'])] : undefined;
    routes.push({ info: { name: `r${i}` }, hostnameTest: hostnames ? compileHostnameTest(hostnames) : null, matches: matches.length > 0 ? matches.map(compileMatch) : null } as unknown as CompiledRoute);
  }
  return routes;
}

/** Route selection as it was: every route in order. */
function scan(routes: readonly CompiledRoute[], ex: ExchangeImpl): [CompiledRoute | undefined, string | undefined] {
  for (const route of routes) {
    if (route.hostnameTest !== null && !route.hostnameTest(ex.hostname)) continue;
    if (route.matches === null) return [route, '/'];
    for (const m of route.matches) if (m.test(ex)) return [route, m.prefix];
  }
  return [undefined, undefined];
}

function request(path: string, method: string, hostname: string, tenant: string | undefined): ExchangeImpl {
  return { path, method, hostname, query: '', params: undefined, headers: tenant ? { 'x-tenant': tenant } : {}, matchedPrefix: undefined } as unknown as ExchangeImpl;
}

test('the indexed selection picks the same route and matched prefix as a scan of every route', () => {
  for (const [seed, count] of [[1, 40], [2, 200], [3, 1000], [4, 17]] as const) {
    const rnd = random(seed);
    const routes = makeRoutes(count, rnd);
    const listener = { routes, routesFor: indexRoutes(routes) } as unknown as CompiledListener;
    const pick = <T>(list: readonly T[]): T => list[Math.floor(rnd() * list.length)]!;
    let matched = 0;
    for (let i = 0; i < 5000; i++) {
      const path = rnd() < 0.05 ? '/' : `/${Array.from({ length: 1 + Math.floor(rnd() * 4) }, () => pick([...SEGMENTS, 'apix', 'zzz'])).join('/')}`;
      const ex = request(path, pick(['GET', 'POST', 'PUT']), pick(['a.example', 'b.example', 'other.test']), pick(['t1', 't2', undefined]));
      const [expected, prefix] = scan(routes, ex);
      const got = selectRoute(listener, ex);
      assert.equal(got, expected, `seed ${seed}: ${ex.method} ${ex.hostname}${path}`);
      if (got) {
        assert.equal(ex.matchedPrefix, prefix);
        matched++;
      }
    }
    assert.ok(matched > 500, `seed ${seed}: ${matched} of 5,000 requests matched a route`);
  }
});

test('with 1,000 routes of distinct first segments, a request tries its own segment\'s routes and the catch-all', () => {
  const routes = Array.from({ length: 1000 }, (_, i) => ({ info: { name: `r${i}` }, hostnameTest: null, matches: [compileMatch({ path: { pathPrefix: `/svc${i}/api` } })] }) as unknown as CompiledRoute);
  routes.push({ info: { name: 'fallback' }, hostnameTest: null, matches: null } as unknown as CompiledRoute);
  const routesFor = indexRoutes(routes);
  const names = (list: readonly CompiledRoute[]): string[] => list.map((r) => r.info.name);
  assert.deepEqual(names(routesFor('/svc999/api/x')), ['r999', 'fallback']);
  assert.deepEqual(names(routesFor('/nothing/here')), ['fallback']);
  const listener = { routes, routesFor } as unknown as CompiledListener;
  assert.equal(selectRoute(listener, request('/svc999/api/x', 'GET', 'h', undefined))?.info.name, 'r999');
  assert.equal(selectRoute(listener, request('/svc999/apix', 'GET', 'h', undefined))?.info.name, 'fallback');
});

test('a few routes are scanned as they are', () => {
  const routes = Array.from({ length: 3 }, (_, i) => ({ info: { name: `r${i}` }, hostnameTest: null, matches: [compileMatch({ path: { exact: `/r${i}` } })] }) as unknown as CompiledRoute);
  assert.equal(indexRoutes(routes)('/r1'), routes);
});

test('a regex route is tried for every path its first segment allows: quantifiers, alternation and groups keep it open', () => {
  const cases: [string, string[]][] = [
    ['/api/*[a-z]*', ['/apix', '/api', '/api/x']],
    ['/api/?x', ['/apix', '/api/x']],
    ['/api/+x', ['/api/x', '/api//x']],
    ['/api/{0,1}x', ['/apix', '/api/x']],
    ['/api|/other', ['/other', '/api']],
    ['/api/x|/other', ['/other', '/api/x']],
    ['/ap(i|p)/x', ['/api/x', '/app/x']],
    ['/api/[0-9]+', ['/api/12', '/apix/12']],
    ['/api', ['/api', '/api/']],
  ];
  for (const [regex, paths] of cases) {
    const routes = Array.from({ length: 15 }, (_, i) => ({ info: { name: `r${i}` }, hostnameTest: null, matches: [compileMatch({ path: { exact: `/other${i}` } })] }) as unknown as CompiledRoute);
    routes.push({ info: { name: 'regex' }, hostnameTest: null, matches: [compileMatch({ path: { regex } })] } as unknown as CompiledRoute);
    const listener = { routes, routesFor: indexRoutes(routes) } as unknown as CompiledListener;
    for (const path of paths) {
      const ex = request(path, 'GET', 'h', undefined);
      assert.equal(selectRoute(listener, ex)?.info.name, scan(routes, ex)[0]?.info.name, `${regex} on ${path}`);
    }
  }
});
