import assert from 'node:assert/strict';
import { DEFAULT_CIPHERS } from 'node:tls';
import { describe, it } from 'node:test';
import { listenerTlsSettings } from './listener-tls-settings.ts';

function read(tls: Record<string, unknown>): { settings: ReturnType<typeof listenerTlsSettings>; issues: string[] } {
  const issues: string[] = [];
  const settings = listenerTlsSettings(tls, ['tls'], (at, message) => issues.push(`${at.join('.')}: ${message}`));
  return { settings, issues };
}

describe('listener TLS settings', () => {
  it('every spelling of a version; YAML numbers; the defaults', () => {
    for (const v of ['TLS_V1_3', '1.3', 'TLSv1.3', 1.3]) assert.equal(read({ minTLSVersion: v }).settings?.minVersion, 'TLSv1.3', String(v));
    assert.deepEqual(read({}).settings, { minVersion: 'TLSv1.2', maxVersion: 'TLSv1.3', ciphers: DEFAULT_CIPHERS });
  });

  it('a number that only rounds to a version, TLS 1.0 as a YAML number, an unknown spelling', () => {
    assert.match(read({ minTLSVersion: 1.25 }).issues.join(), /unknown TLS version `1.25`/);
    assert.match(read({ minTLSVersion: 1 }).issues.join(), /`1.0` is not usable/);
    assert.match(read({ maxTLSVersion: 'TLSv1.4' }).issues.join(), /tls\.maxTLSVersion: unknown TLS version `TLSv1.4`; did you mean `TLSv1\.[23]`\?/);
  });

  it('suites by IANA, OpenSSL and rustls names, any case, once each, in the listed order', () => {
    const { settings } = read({ cipherSuites: ['tls13_chacha20_poly1305_sha256', 'ECDHE-RSA-AES128-GCM-SHA256', 'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256', 'TLS_AES_128_GCM_SHA256'] });
    assert.deepEqual(settings, { minVersion: 'TLSv1.2', maxVersion: 'TLSv1.3', ciphers: 'TLS_CHACHA20_POLY1305_SHA256:ECDHE-RSA-AES128-GCM-SHA256:TLS_AES_128_GCM_SHA256' });
  });

  it('only the listed suites: no TLS 1.3 suite means TLS 1.2 only, no TLS 1.2 suite TLS 1.3 only', () => {
    assert.equal(read({ cipherSuites: ['ECDHE-ECDSA-AES128-GCM-SHA256'] }).settings?.maxVersion, 'TLSv1.2');
    assert.equal(read({ cipherSuites: ['TLS_AES_256_GCM_SHA384'] }).settings?.minVersion, 'TLSv1.3');
    assert.match(read({ minTLSVersion: 'TLS_V1_3', cipherSuites: ['ECDHE-ECDSA-AES128-GCM-SHA256'] }).issues.join(), /tls\.cipherSuites: lists no suite of TLS 1\.3/);
  });

  it('a suite outside the forward-secret AEAD list is refused', () => {
    assert.match(read({ cipherSuites: ['TLS_RSA_WITH_AES_128_CBC_SHA'] }).issues.join(), /tls\.cipherSuites\.0: unknown cipher suite `TLS_RSA_WITH_AES_128_CBC_SHA`/);
  });
});
