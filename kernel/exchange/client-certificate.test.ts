import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { after, before, describe, it } from 'node:test';
import { testTempDir } from '../../test/helpers/temp-dir.ts';
import { markVerifiedClient, verifiedClientCertificate } from './client-certificate.ts';

describe('the verified client certificate as CEL reads it', () => {
  let dir: string;
  let x509: X509Certificate;

  before(() => {
    dir = testTempDir('switchyard-client-cert-');
    // Escaped characters in the subject, a comma in a URI SAN (node:crypto quotes that entry), two CNs.
    writeFileSync(join(dir, 'san.cnf'), '[req]\ndistinguished_name=dn\n[dn]\n[ext]\nsubjectAltName=@alt\n[alt]\nURI.1=https://example.org/a,b\nURI.2=spiffe://td/ns/x/sa/y\nDNS.1=x.test\nemail.1=a@b.c\nIP.1=10.0.0.1\n');
    execFileSync(
      '/usr/bin/openssl',
      ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'k.pem', '-out', 'c.pem', '-days', '1', '-subj', '/O=Acme, Inc./CN=ignored/CN=agent\\, 1 \u00e9', '-config', 'san.cnf', '-extensions', 'ext', '-utf8'],
      { cwd: dir, stdio: 'ignore' },
    );
    x509 = new X509Certificate(readFileSync(join(dir, 'c.pem')));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const socket = (cert: X509Certificate | undefined) => ({ getPeerX509Certificate: () => cert }) as unknown as TLSSocket;

  it('names, SANs, the SPIFFE ID and the PEM', () => {
    const s = socket(x509);
    assert.equal(verifiedClientCertificate(s), undefined, 'nothing before the handshake marked it');
    markVerifiedClient(s);
    const c = verifiedClientCertificate(s)!;
    assert.equal(c.subjectCn, 'agent, 1 \u00e9');
    assert.equal(c.subject, 'O=Acme\\, Inc., CN=ignored, CN=agent\\, 1 \u00e9');
    assert.equal(c.issuer, c.subject);
    assert.deepEqual(c.subjectAltNames, ['https://example.org/a,b', 'spiffe://td/ns/x/sa/y', 'x.test', 'a@b.c', '10.0.0.1']);
    assert.equal(c.spiffeId, 'spiffe://td/ns/x/sa/y');
    assert.equal(c.pem, x509.toString());
  });

  it('a connection gone before the first read: every field absent', () => {
    const s = socket(undefined);
    markVerifiedClient(s);
    const c = verifiedClientCertificate(s)!;
    assert.deepEqual([c.subject, c.subjectCn, c.issuer, c.subjectAltNames, c.spiffeId, c.pem], [undefined, undefined, undefined, undefined, undefined, undefined]);
  });
});
