import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { caBundleProblem } from './ca-bundle.ts';

const SYSTEM_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';

describe('caBundleProblem', () => {
  it('takes a real bundle (many certificates, text between them, CRLF line ends)', { skip: !existsSync(SYSTEM_BUNDLE) && 'no system CA bundle' }, () => {
    const bundle = readFileSync(SYSTEM_BUNDLE, 'utf8');
    assert.equal(caBundleProblem(`# my CAs\n${bundle}`), undefined);
    assert.equal(caBundleProblem(bundle.replaceAll('\n', '\r\n')), undefined);
  });

  it("takes OpenSSL's trusted form (`openssl x509 -addtrust`), which node:tls trusts; refuses it cut short", { skip: !existsSync(SYSTEM_BUNDLE) && 'no system CA bundle' }, () => {
    const bundle = readFileSync(SYSTEM_BUNDLE, 'utf8');
    const body = bundle.slice(bundle.indexOf('-----BEGIN CERTIFICATE-----') + 28, bundle.indexOf('-----END CERTIFICATE-----'));
    const trusted = `-----BEGIN TRUSTED CERTIFICATE-----\n${body}-----END TRUSTED CERTIFICATE-----\n`;
    assert.equal(caBundleProblem(trusted), undefined);
    assert.match(caBundleProblem('-----BEGIN TRUSTED CERTIFICATE-----\n')!, /has no END line/);
  });

  it('refuses a bundle cut short, a block that is no certificate, one without any', { skip: !existsSync(SYSTEM_BUNDLE) && 'no system CA bundle' }, () => {
    const bundle = readFileSync(SYSTEM_BUNDLE, 'utf8');
    const first = bundle.slice(bundle.indexOf('-----BEGIN'), bundle.indexOf('-----END CERTIFICATE-----') + 25);
    assert.match(caBundleProblem('-----BEGIN CERTIFICATE-----\n')!, /block 1 \(CERTIFICATE\) has no END line/);
    assert.match(caBundleProblem(`${first}\n${first.slice(0, 100)}`)!, /block 2 \(CERTIFICATE\) has no END line/);
    // A block without its END whose next block ends: the first END belongs to the second.
    assert.match(caBundleProblem(`${first.slice(0, 100)}\n${first}`)!, /block 1 \(CERTIFICATE\) has no END line/);
    assert.match(caBundleProblem('-----BEGIN CERTIFICATE-----\naGVsbG8=\n-----END CERTIFICATE-----\n')!, /block 1 is not an X\.509 certificate/);
    assert.equal(caBundleProblem('-----BEGIN PUBLIC KEY-----\naGVsbG8=\n-----END PUBLIC KEY-----\n'), 'it holds no certificate');
    assert.equal(caBundleProblem(''), 'it holds no certificate');
  });
});
