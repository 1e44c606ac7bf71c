import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { clientAddress, compileTrustedProxies } from './client-address.ts';
import { HostRejection, normalizeHost } from '../runtime/host-header.ts';
import { DEFAULT_PATH_OPTIONS, PathRejection, normalizePath } from './normalize-path.ts';

describe('normalizePath', () => {
  it('returns a path already in normal form as the same string (fast path)', () => {
    for (const p of ['/', '/a', '/a/b/', '/a.b/.c/..d/c..', '/a;b=c', '/x-y_z~', '/.well-known/x', '/a/...']) {
      assert.equal(normalizePath(p, DEFAULT_PATH_OPTIONS), p, p);
    }
  });

  it('removes dot segments, decodes unreserved escapes and merges slashes', () => {
    const cases: [string, string][] = [
      ['/a/./b', '/a/b'],
      ['/a/../b', '/b'],
      ['/a/b/..', '/a/'],
      ['/a/b/.', '/a/b/'],
      ['/..', '/'],
      ['/../../x', '/x'],
      ['//a//b//', '/a/b/'],
      ['//', '/'],
      ['/%2e%2E/x', '/x'],
      ['/%7euser/%41', '/~user/A'],
      ['/a%2db', '/a-b'],
      ['/%e2%9c%93', '/%E2%9C%93'],
      ['/a%3bb', '/a%3Bb'],
      ['/a//../b', '/b'], // merged first: `/a/../b`
    ];
    for (const [input, expected] of cases) assert.equal(normalizePath(input, DEFAULT_PATH_OPTIONS), expected, input);
  });

  it('refuses what an upstream could read as another path', () => {
    for (const p of ['/a/..%2fb', '/a%5Cb', '/a\\b', '/..;/x', '/a/.;x/b', '/a/..%3Bx/b', '/%00', '/%', '/%4', '/%g0', 'x', '', '*', 'ftp://h/x']) {
      assert.ok(normalizePath(p, DEFAULT_PATH_OPTIONS) instanceof PathRejection, p);
    }
  });

  it('refuses overlong UTF-8 (an ASCII byte in two, three or four bytes: %C0%AE is `.`), keeps valid UTF-8 and other bytes', () => {
    for (const p of ['/%C0%AE%C0%AE/x', '/a%c0%afb', '/%C1%9C', '/%E0%80%AE', '/%e0%9f%bf', '/%F0%80%80%AE', '/%F0%8F%BF%BF', '/x/%c0']) {
      const r = normalizePath(p, DEFAULT_PATH_OPTIONS);
      assert.ok(r instanceof PathRejection && /overlong/.test(r.message), p);
    }
    for (const [p, expected] of [
      ['/%C2%A9', '/%C2%A9'],
      ['/%E0%A0%80', '/%E0%A0%80'],
      ['/%F0%90%80%80', '/%F0%90%80%80'],
      ['/%E0/%80', '/%E0/%80'],
      ['/%E0%41%80', '/%E0A%80'],
      ['/%FF%E9', '/%FF%E9'],
    ]) assert.equal(normalizePath(p!, DEFAULT_PATH_OPTIONS), expected, p);
  });

  it('keeps %2F and %5C escaped and empty segments when configured', () => {
    const keep = { mergeSlashes: false, rejectEscapedSlashes: false };
    assert.equal(normalizePath('/a/..%2fb', keep), '/a/..%2Fb');
    assert.equal(normalizePath('/a%5cb/../c', keep), '/c');
    assert.equal(normalizePath('/a//b', keep), '/a//b');
    assert.equal(normalizePath('/a//./b', keep), '/a//b');
  });
});

describe('normalizeHost', () => {
  it('lower-cases, drops the port and one trailing dot', () => {
    const cases: [string | undefined, string][] = [
      [undefined, ''],
      ['', ''],
      ['example.com', 'example.com'],
      ['Example.COM.', 'example.com'],
      ['example.com.:8443', 'example.com'],
      ['[::1]:80', '::1'],
      ['[FE80::1]', 'fe80::1'],
      ['127.0.0.1:9', '127.0.0.1'],
      ['h:', 'h'],
      ['h:65535', 'h'],
      ['h:00080', 'h'],
      ['[::1]:', '::1'],
    ];
    for (const [input, expected] of cases) assert.equal(normalizeHost(input), expected, String(input));
  });

  it('refuses malformed hosts', () => {
    for (const h of ['a/b', 'a..b', 'a.b..', '.a', 'u@h', 'h:8o', 'h:123456', 'h:99999', 'h:65536', 'h:0', 'h:00000', '[::1]:65536', '[::1]:0', ':80', '[::1', '[::1]x', '[g::1]', 'a b', 'a\\b', 'a%2eb']) {
      assert.ok(normalizeHost(h) instanceof HostRejection, h);
    }
  });
});

describe('clientAddress', () => {
  const trusted = compileTrustedProxies(['10.0.0.0/8', '::1', '127.0.0.1']);

  it('an untrusted peer is the client and its forwarding headers are dropped', () => {
    const headers: Record<string, string | undefined> = { 'x-forwarded-for': '1.2.3.4', 'x-real-ip': '1.2.3.4', forwarded: 'for=1.2.3.4', other: 'kept' };
    assert.equal(clientAddress('192.0.2.1', headers, trusted), '192.0.2.1');
    assert.deepEqual(headers, { other: 'kept' });
    const noTrust: Record<string, string> = { 'x-forwarded-for': '1.2.3.4' };
    assert.equal(clientAddress('127.0.0.1', noTrust, null), '127.0.0.1');
    assert.deepEqual(noTrust, {});
  });

  it('a trusted peer: the right-most address that is not a trusted proxy', () => {
    const cases: [string | string[] | undefined, string][] = [
      [undefined, '127.0.0.1'],
      ['1.2.3.4', '1.2.3.4'],
      ['5.6.7.8, 1.2.3.4', '1.2.3.4'],
      ['5.6.7.8, 1.2.3.4, 10.9.9.9', '1.2.3.4'],
      ['10.1.1.1, 10.2.2.2', '10.1.1.1'],
      ['1.2.3.4, junk, 10.2.2.2', '10.2.2.2'],
      [['5.6.7.8', '1.2.3.4'], '1.2.3.4'],
      ['2001:db8::1, ::1', '2001:db8::1'],
    ];
    for (const [xff, expected] of cases) {
      const headers = xff === undefined ? {} : { 'x-forwarded-for': xff };
      assert.equal(clientAddress('127.0.0.1', headers, trusted), expected, String(xff));
    }
  });
});
