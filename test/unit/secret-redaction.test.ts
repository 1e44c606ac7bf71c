// The pieces of ADR 0017 on their own: which CEL literals are hidden, which query parameters the access log
// hides, and the Host/Origin rule of the admin servers. The end-to-end proof is test/e2e/secrets-redaction.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileHostCheck } from '../../kernel/admin/host-check.ts';
import { scrubCelLiterals } from '../../kernel/config/cel-literals.ts';
import { loggedPath } from '../../kernel/telemetry/access-log.ts';

describe('CEL literals in /config_dump', () => {
  const cases: [string, string][] = [
    ['request.headers["x-api-key"] == "hunter2"', 'request.headers["x-api-key"] == "<redacted>"'],
    ['request.headers[ "x-api-key" ] == "hunter2-secret"', 'request.headers[ "x-api-key" ] == "<redacted>"'],
    ['"x-token-like" in request.headers', '"x-token-like" in request.headers'],
    ["apiKey.key == 'abc'", "apiKey.key == '<redacted>'"],
    ['request.headers["x-user"] == "Bearer abc"', 'request.headers["x-user"] == "<redacted>"'],
    ['x == "sk-live-1" || y == r"ghp_abc\\"', 'x == "<redacted>" || y == r"<redacted>"'],
    ['jwt.tenant == "0f8fad5b-d9cb-469f-a165-70867728950e"', 'jwt.tenant == "<redacted>"'],
    // Nothing secret: shown as written.
    ['request.path.startsWith("/public") && jwt.role == "admin"', 'request.path.startsWith("/public") && jwt.role == "admin"'],
    ['cidr("10.0.0.0/8").containsIP(source.address)', 'cidr("10.0.0.0/8").containsIP(source.address)'],
    ['"""tri"ple""" + \'x\'', '"""tri"ple""" + \'x\''],
  ];
  for (const [expr, shown] of cases) it(expr, () => assert.equal(scrubCelLiterals(expr), shown));
});

describe('access log: credentials in the query string', () => {
  it('hides the values of credential parameters and keeps the rest', () => {
    assert.equal(loggedPath('/a?access_token=x&page=2&api_key=y&sig=z&code=c#f'), '/a?access_token=<redacted>&page=2&api_key=<redacted>&sig=<redacted>&code=<redacted>#f');
    assert.equal(loggedPath('/a?x=1'), '/a?x=1');
    assert.equal(loggedPath('/plain'), '/plain');
  });
});

describe('admin Host/Origin check', () => {
  const loopback = compileHostCheck({ address: '127.0.0.1', family: 'IPv4', port: 15000 });
  const wildcard = compileHostCheck({ address: '0.0.0.0', family: 'IPv4', port: 15020 });
  const specific = compileHostCheck({ address: '10.0.0.7', family: 'IPv4', port: 15000 });

  it('loopback server', () => {
    for (const host of ['localhost', 'localhost:15000', '127.0.0.1:15000', '[::1]:15000', '[::1]', '127.0.0.1:9000', undefined]) assert.equal(loopback({ host }), undefined, host);
    for (const host of ['attacker.example', 'attacker.example:15000', '10.0.0.7:15000', '127.0.0.1.nip.io:15000', '', '[::1', 'localhost:x']) assert.equal(loopback({ host }), 'Host', host);
    assert.equal(loopback({ host: 'localhost:15000', origin: 'http://localhost:15000' }), undefined);
    assert.equal(loopback({ host: 'localhost:15000', origin: 'http://[::1]:15000' }), undefined);
    assert.equal(loopback({ host: 'localhost:9000', origin: 'http://LOCALHOST:9000' }), undefined, 'a port-forward is its own origin');
    assert.equal(loopback({ host: 'localhost', origin: 'http://localhost' }), undefined);
    assert.equal(loopback({ host: 'localhost:9000', origin: 'http://localhost:3000' }), 'Origin');
    for (const origin of ['http://evil.example', 'http://localhost', 'null', 'https://localhost:15000/x', 'file://']) assert.equal(loopback({ host: 'localhost:15000', origin }), 'Origin', origin);
  });

  it('wildcard server: any IP literal, no DNS name but localhost', () => {
    for (const host of ['10.1.2.3:15020', '[fd00::1]:15020', '10.1.2.3', 'localhost:15020']) assert.equal(wildcard({ host }), undefined, host);
    for (const host of ['pod.ns.svc:15020', 'attacker.example']) assert.equal(wildcard({ host }), 'Host', host);
  });

  it('specific address: that address and loopback only', () => {
    assert.equal(specific({ host: '10.0.0.7:15000' }), undefined);
    assert.equal(specific({ host: '10.0.0.8:15000' }), 'Host');
  });
});
