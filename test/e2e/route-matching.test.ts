import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { namedRoute as named } from '../helpers/routes.ts';

interface Case {
  readonly title: string;
  readonly method?: string;
  readonly path: string;
  readonly headers?: Record<string, string>;
  readonly expect: string | 404;
}

// Routes are tried in config order; the first match wins (BEHAVIOUR.md DECIDED 1). Sixteen routes or more: the
// listener picks them through its first-segment index (ADR 0115), so these cases also check that index end to end.
const ROUTES = [
  named('exact', { matches: [{ path: { exact: '/exact' } }] }),
  named('prefix', { matches: [{ path: { pathPrefix: '/foo' } }] }),
  named('prefix-slash', { matches: [{ path: { pathPrefix: '/slash/' } }] }),
  named('regex', { matches: [{ path: { regex: '/items/[0-9]+' } }] }),
  named('method', { matches: [{ method: 'DELETE', path: { pathPrefix: '/m' } }] }),
  named('header-exact', { matches: [{ path: { pathPrefix: '/h' }, headers: [{ name: 'X-Team', value: { exact: 'blue' } }] }] }),
  named('header-regex', { matches: [{ path: { pathPrefix: '/h' }, headers: [{ name: 'x-team', value: { regex: 'gr.+n' } }] }] }),
  named('query', { matches: [{ path: { pathPrefix: '/q' }, query: [{ name: 'v', value: { exact: '2' } }] }] }),
  named('query-regex', { matches: [{ path: { pathPrefix: '/q' }, query: [{ name: 'v', value: { regex: '[a-z]+' } }] }] }),
  named('or', { matches: [{ path: { exact: '/or-a' } }, { path: { exact: '/or-b' } }] }),
  named('all-conditions', {
    matches: [{ method: 'POST', path: { exact: '/all' }, headers: [{ name: 'x-a', value: { exact: '1' } }], query: [{ name: 'b', value: { exact: '2' } }] }],
  }),
  named('first-wins', { matches: [{ path: { pathPrefix: '/dup' } }] }),
  named('second-loses', { matches: [{ path: { pathPrefix: '/dup' } }] }),
  named('shadowed-later', { matches: [{ path: { exact: '/dup/x' } }] }),
  named('hosts', { hostnames: ['api.example.com', '*.wild.test'], matches: [{ path: { pathPrefix: '/host' } }] }),
  named('catch-all'),
];

const CASES: Case[] = [
  { title: 'exact matches equal path', path: '/exact', expect: 'exact' },
  { title: 'exact ignores query string', path: '/exact?x=1', expect: 'exact' },
  { title: 'exact does not match longer path', path: '/exact/more', expect: 'catch-all' },
  { title: 'prefix matches itself', path: '/foo', expect: 'prefix' },
  { title: 'prefix matches trailing slash', path: '/foo/', expect: 'prefix' },
  { title: 'prefix matches sub-path', path: '/foo/bar/baz', expect: 'prefix' },
  { title: 'prefix is segment-aware', path: '/foobar', expect: 'catch-all' },
  { title: 'prefix with trailing slash matches bare segment', path: '/slash', expect: 'prefix-slash' },
  { title: 'prefix with trailing slash matches sub-path', path: '/slash/x', expect: 'prefix-slash' },
  { title: 'regex matches whole path', path: '/items/42', expect: 'regex' },
  { title: 'regex must match the whole path', path: '/items/42/x', expect: 'catch-all' },
  { title: 'regex does not match partial prefix', path: '/v1/items/42', expect: 'catch-all' },
  { title: 'method matches', method: 'DELETE', path: '/m/1', expect: 'method' },
  { title: 'method mismatch falls through', method: 'GET', path: '/m/1', expect: 'catch-all' },
  { title: 'header exact, name case-insensitive', path: '/h', headers: { 'x-team': 'blue' }, expect: 'header-exact' },
  { title: 'header exact value is case-sensitive', path: '/h', headers: { 'x-team': 'Blue' }, expect: 'catch-all' },
  { title: 'header regex', path: '/h', headers: { 'x-team': 'green' }, expect: 'header-regex' },
  { title: 'header regex is whole-value', path: '/h', headers: { 'x-team': 'evergreen' }, expect: 'catch-all' },
  { title: 'missing header does not match', path: '/h', expect: 'catch-all' },
  { title: 'query exact', path: '/q?v=2', expect: 'query' },
  { title: 'query first occurrence counts', path: '/q?v=abc&v=2', expect: 'query-regex' },
  { title: 'query regex', path: '/q?a=1&v=abc', expect: 'query-regex' },
  { title: 'query missing', path: '/q', expect: 'catch-all' },
  { title: 'query form-decoded', path: '/q?v=%32', expect: 'query' },
  { title: 'match objects are OR-ed (first)', path: '/or-a', expect: 'or' },
  { title: 'match objects are OR-ed (second)', path: '/or-b', expect: 'or' },
  { title: 'all conditions in one match must hold', method: 'POST', path: '/all?b=2', headers: { 'x-a': '1' }, expect: 'all-conditions' },
  { title: 'one failing condition fails the match', method: 'POST', path: '/all?b=3', headers: { 'x-a': '1' }, expect: 'catch-all' },
  { title: 'first matching route wins', path: '/dup', expect: 'first-wins' },
  { title: 'an earlier broad route shadows a later exact one', path: '/dup/x', expect: 'first-wins' },
  { title: 'route hostname exact', path: '/host', headers: { host: 'api.example.com' }, expect: 'hosts' },
  { title: 'route hostname is case-insensitive and ignores port', path: '/host', headers: { host: 'API.Example.com:8080' }, expect: 'hosts' },
  { title: 'route hostname wildcard', path: '/host', headers: { host: 'a.wild.test' }, expect: 'hosts' },
  { title: 'route hostname wildcard, several labels', path: '/host', headers: { host: 'a.b.wild.test' }, expect: 'hosts' },
  { title: 'wildcard never matches the bare suffix', path: '/host', headers: { host: 'wild.test' }, expect: 'catch-all' },
  { title: 'other host falls through', path: '/host', headers: { host: 'other.test' }, expect: 'catch-all' },
];

describe('route selection (first match in config order)', () => {
  let gw: RunningGateway;
  let port: number;
  let noCatchAllPort: number;

  before(async () => {
    port = await freePort();
    noCatchAllPort = await freePort();
    gw = await startGateway({
      binds: [
        { port, listeners: [{ routes: ROUTES }] },
        { port: noCatchAllPort, listeners: [{ routes: [named('only', { matches: [{ path: { exact: '/only' } }] })] }] },
      ],
    });
  });
  after(() => gw.stop());

  for (const c of CASES) {
    it(c.title, async () => {
      const res = await request(`${gw.url(port)}${c.path}`, { method: (c.method ?? 'GET') as 'GET', headers: c.headers });
      const body = await res.body.text();
      if (c.expect === 404) assert.equal(res.statusCode, 404);
      else {
        assert.equal(res.statusCode, 200, body);
        assert.equal(body, c.expect);
      }
    });
  }

  it('no matching route is a 404 with a JSON body', async () => {
    const res = await request(`${gw.url(noCatchAllPort)}/missing`);
    assert.equal(res.statusCode, 404);
    assert.match(String(res.headers['content-type']), /application\/json/);
    assert.deepEqual(await res.body.json(), { error: { type: 'route_not_found', message: 'no route matches GET /missing' } });
  });
});

describe('listener selection by hostname', () => {
  let gw: RunningGateway;
  let port: number;
  before(async () => {
    port = await freePort();
    gw = await startGateway({
      binds: [
        {
          port,
          listeners: [
            { name: 'wide-wildcard', hostname: '*.example.com', routes: [named('wide')] },
            { name: 'exact', hostname: 'api.example.com', routes: [named('exact-listener')] },
            { name: 'narrow-wildcard', hostname: '*.eu.example.com', routes: [named('narrow')] },
            { name: 'default', routes: [named('default')] },
          ],
        },
      ],
    });
  });
  after(() => gw.stop());

  const table: [string, string][] = [
    ['api.example.com', 'exact-listener'],
    ['x.example.com', 'wide'],
    ['x.eu.example.com', 'narrow'],
    ['example.com', 'default'],
    ['unrelated.org', 'default'],
  ];
  for (const [host, expected] of table) {
    it(`${host} → ${expected}`, async () => {
      const res = await request(`${gw.url(port)}/`, { headers: { host } });
      assert.equal(await res.body.text(), expected);
    });
  }
});
