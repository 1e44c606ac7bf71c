import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { compileOriginTest } from './origin-matcher.ts';
import type { OriginTest } from './origin-matcher.ts';

function compiled(list: string[]): OriginTest {
  const test = compileOriginTest(list);
  assert.equal(typeof test, 'function', String(test));
  return test as OriginTest;
}

describe('compileOriginTest', () => {
  const list = ['https://app.example.com', 'http://localhost:3000', 'https://*.tenant.test', 'http://[::1]:8080'];

  it('matches scheme and port exactly and the host in any case, however the origin is spelled', () => {
    const allowed = compiled(list);
    for (const origin of ['https://app.example.com', 'HTTPS://App.Example.COM', 'https://app.example.com:443', 'https://app.example.com/', 'http://localhost:3000', 'http://LOCALHOST:3000', 'https://a.tenant.test', 'https://A.b.Tenant.test:443', 'http://[::1]:8080']) {
      assert.equal(allowed(origin), true, origin);
    }
    for (const origin of ['http://app.example.com', 'https://app.example.com:8443', 'https://app.example.com.evil', 'http://localhost', 'https://tenant.test', 'https://a.tenant.test:444', 'http://[::1]', 'null', '', 'https://app.example.com/x']) {
      assert.equal(allowed(origin), false, origin);
    }
  });

  it('a host is a host: a glob never matches `#`, `?`, `@`, `%` or spaces that no browser puts in an Origin (ADR 0185)', () => {
    const allowed = compiled(list);
    for (const origin of ['https://evil.test#.tenant.test', 'https://evil.test?.tenant.test', 'https://evil.test@x.tenant.test', 'https://evil%2etest.tenant.test', 'https://ev il.tenant.test', 'https://app.example.com#']) {
      assert.equal(allowed(origin), false, origin);
    }
    assert.equal(allowed('https://a-b_c.tenant.test'), true);
  });

  it('a thousand exact entries: each is found in any spelling, and near misses are not', () => {
    const many = Array.from({ length: 1000 }, (_, i) => `https://app${i}.example.com`);
    const allowed = compiled([...many, 'https://*.tenant.test']);
    for (let i = 0; i < 1000; i += 37) {
      assert.equal(allowed(`https://APP${i}.example.com:443`), true);
      assert.equal(allowed(`http://app${i}.example.com`), false);
    }
    assert.equal(allowed('https://app1000.example.com'), false);
    assert.equal(allowed('https://x.tenant.test'), true);
  });

  it('`*` alone allows any origin; an entry that is not an origin is an error', () => {
    assert.equal(compiled(['https://a.test', '*'])('https://anything.test'), true);
    assert.match(String(compileOriginTest(['app.example.com'])), /is not an origin/);
  });
});
