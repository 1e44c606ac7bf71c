import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseUpstreamAddress, serviceAuthority } from './upstream-address.ts';
import type { AddressRules } from './upstream-address.ts';

describe('service target forms', () => {
  it('`service` dials <hostname>:<port>, from either name form', () => {
    assert.equal(serviceAuthority({ name: { namespace: 'default', hostname: 'ratelimit.default.svc.cluster.local' }, port: 8081 }), 'ratelimit.default.svc.cluster.local:8081');
    assert.equal(serviceAuthority({ name: 'default/ratelimit.default.svc.cluster.local', port: 8081 }), 'ratelimit.default.svc.cluster.local:8081');
    assert.equal(serviceAuthority({ name: 'ns/::1', port: 1 }), '[::1]:1');
  });

  it('rejects a bad name or port, at the field', () => {
    assert.deepEqual(serviceAuthority({ name: 'localhost', port: 1 }), {
      message: '`localhost` is not a service name: write `<namespace>/<hostname>` (exactly one `/`), or `{namespace, hostname}`',
      sub: ['service', 'name'],
    });
    assert.deepEqual((serviceAuthority({ name: 'a/b/c', port: 1 }) as { sub: unknown }).sub, ['service', 'name']);
    assert.deepEqual(serviceAuthority({ name: 'default/', port: 1 }), { message: 'the service hostname is empty', sub: ['service', 'name'] });
    assert.deepEqual(serviceAuthority({ name: '/host', port: 1 }), { message: 'the service namespace is empty', sub: ['service', 'name'] });
    assert.deepEqual(serviceAuthority({ name: { namespace: 'd', hostname: ' ' }, port: 1 }), { message: 'the service hostname is empty', sub: ['service', 'name', 'hostname'] });
    assert.deepEqual((serviceAuthority({ name: { namespace: 'd', hostname: 'a b' }, port: 1 }) as { sub: unknown }).sub, ['service', 'name', 'hostname']);
    assert.deepEqual((serviceAuthority({ name: 'd/h', port: 0 }) as { sub: unknown }).sub, ['service', 'port']);
    assert.deepEqual((serviceAuthority({ name: 'd/h', port: 65536 }) as { sub: unknown }).sub, ['service', 'port']);
  });

  it('a service `host` takes an optional http/https scheme and must carry its port', () => {
    const svc = (v: string) => {
      const a = parseUpstreamAddress(v, { tls: false, requirePort: true });
      return 'message' in a ? a.message : { target: a.authority, secure: a.secure, scheme: a.scheme };
    };
    assert.deepEqual(svc('https://rls:8081'), { target: 'rls:8081', secure: true, scheme: 'https' });
    assert.deepEqual(svc('http://rls:8081/'), { target: 'rls:8081', secure: false, scheme: 'http' });
    assert.deepEqual(svc('[::1]:8081'), { target: '[::1]:8081', secure: false, scheme: undefined });
    assert.equal(svc('grpc://rls:1'), 'unsupported scheme `grpc` (use http or https, or no scheme)');
    assert.equal(svc('rls'), '`rls` is not a `host:port` address');
  });
});


describe('parseUpstreamAddress: the one reading of `host` (BEHAVIOUR.md DECIDED 12)', () => {
  const read = (v: string, rules: Partial<AddressRules> = {}) => {
    const a = parseUpstreamAddress(v, { tls: false, ...rules });
    return 'message' in a ? a : { origin: a.origin, path: a.path, pathGiven: a.pathGiven };
  };

  it('without a scheme, TLS only when backendTLS applies; without a port, 80 or 443', () => {
    assert.deepEqual(read('api.example.com'), { origin: 'http://api.example.com:80', path: '/', pathGiven: false });
    assert.deepEqual(read('api.example.com', { tls: true }), { origin: 'https://api.example.com:443', path: '/', pathGiven: false });
    assert.deepEqual(read('10.0.0.1:8080', { tls: true }), { origin: 'https://10.0.0.1:8080', path: '/', pathGiven: false });
    assert.deepEqual(read('[::1]'), { origin: 'http://[::1]:80', path: '/', pathGiven: false });
    assert.deepEqual(read('https://h'), { origin: 'https://h:443', path: '/', pathGiven: false });
    assert.deepEqual(read('http://h:443', { tls: true }), { origin: 'http://h:443', path: '/', pathGiven: false }, 'the scheme decides');
    assert.deepEqual(read('h', { port: 9000 }), { origin: 'http://h:9000', path: '/', pathGiven: false });
  });

  it('an origin only unless the caller takes a path; then the URL path or `path`, or the default', () => {
    assert.match((read('http://h:1/v1') as { message: string }).message, /has a path; the address is an origin only/);
    assert.deepEqual(read('http://h:1/'), { origin: 'http://h:1', path: '/', pathGiven: false });
    const mcp = { paths: 'allow', defaultPath: '/mcp' } as const;
    assert.deepEqual(read('http://h:1', mcp), { origin: 'http://h:1', path: '/mcp', pathGiven: false });
    assert.deepEqual(read('http://h:1/', mcp), { origin: 'http://h:1', path: '/', pathGiven: true });
    assert.deepEqual(read('https://h/a/b?x=1', mcp), { origin: 'https://h:443', path: '/a/b?x=1', pathGiven: true });
    assert.deepEqual(read('h:1', { ...mcp, path: 'sub' }), { origin: 'http://h:1', path: '/sub', pathGiven: true });
  });

  it('refuses what is not an address, at the field', () => {
    assert.deepEqual(read('ftp://h'), { message: 'unsupported scheme `ftp` (use http or https, or no scheme)', field: 'host' });
    assert.deepEqual(read('h:1', { port: 2 }), { message: 'the port is given twice (in `host` and in `port`)', field: 'port' });
    assert.deepEqual(read('http://h', { port: 2 }), { message: 'when `host` is a URL, give the port inside it, not in `port`', field: 'port' });
    assert.match((read('::1') as { message: string }).message, /must be written in brackets/);
    assert.match((read('h:99999') as { message: string }).message, /port `99999` is out of range/);
    assert.match((read('h', { port: 0 }) as { message: string }).message, /port `0` is out of range/);
    assert.match((read('https://user:pw@h') as { message: string }).message, /credentials in the URL/);
    assert.match((read('a b') as { message: string }).message, /is not a valid host/);
    assert.match((read('h', { requirePort: true }) as { message: string }).message, /is not a `host:port` address/);
    assert.deepEqual(read('http://rls:80', { requirePort: true }), { origin: 'http://rls:80', path: '/', pathGiven: false }, 'a written default port counts');
  });
});
