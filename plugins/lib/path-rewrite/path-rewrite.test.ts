import assert from 'node:assert/strict';
import { it } from 'node:test';
import { rewritePath } from './path-rewrite.ts';

it('rewrites prefixes segment-wise with exactly one slash at the join', () => {
  const cases: [string, string, string, string][] = [
    // [matched prefix, replacement, path, expected]
    ['/foo', '/bar', '/foo/x', '/bar/x'],
    ['/foo', '/bar', '/foo', '/bar'],
    ['/foo', '/bar', '/foo/', '/bar/'],
    ['/foo/', '/bar/', '/foo/', '/bar/'],
    ['/foo', '/', '/foo/', '/'],
    ['/foo', '', '/foo/', '/'],
    ['/foo/', '/bar/', '/foo/x/y', '/bar/x/y'],
    ['/foo', '/', '/foo/x', '/x'],
    ['/foo', '/', '/foo', '/'],
    ['/', '/api', '/x', '/api/x'],
    ['/', '/api', '/', '/api'],
    ['/v1', '', '/v1/items', '/items'],
  ];
  for (const [matched, prefix, path, expected] of cases) {
    assert.equal(rewritePath({ prefix }, path, matched), expected, `${matched} → ${prefix} on ${path}`);
  }
});

it('full replaces the path; empty becomes /', () => {
  assert.equal(rewritePath({ full: '/new' }, '/old/x', '/old'), '/new');
  assert.equal(rewritePath({ full: '' }, '/old', undefined), '/');
});

it('prefix without a prefix match is refused', () => {
  assert.equal(rewritePath({ prefix: '/x' }, '/exact', undefined), undefined);
});
