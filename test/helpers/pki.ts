// A throwaway PKI for TLS tests, made with the system's openssl: a CA, a server certificate with the given subject
// alternative names and a client certificate signed by it, and an unrelated second CA. PEM file paths.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { testTempDir } from './temp-dir.ts';

export interface TestPki {
  readonly dir: string;
  readonly ca: string;
  readonly otherCa: string;
  readonly serverCert: string;
  readonly serverKey: string;
  readonly clientCert: string;
  readonly clientKey: string;
  remove(): void;
}

export interface PkiOptions {
  /** The server certificate's common name. */
  readonly serverName: string;
  /** `subjectAltName` entries as openssl writes them: `DNS:x`, `IP:127.0.0.1`, `URI:spiffe://…`. */
  readonly serverAltNames: readonly string[];
  /** A word for the directory and the CA's name. */
  readonly label: string;
}

export function makeTestPki(options: PkiOptions): TestPki {
  const dir = testTempDir(`switchyard-${options.label}-`);
  const p = (name: string): string => join(dir, name);
  const run = (...args: string[]): void => {
    execFileSync('/usr/bin/openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  };
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  const caExt = ['-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'];
  run('req', '-x509', ...ec, '-keyout', p('ca.key'), '-out', p('ca.pem'), '-days', '2', '-subj', `/CN=Switchyard ${options.label} Test CA`, ...caExt);
  run('req', '-x509', ...ec, '-keyout', p('other-ca.key'), '-out', p('other-ca.pem'), '-days', '2', '-subj', '/CN=Unrelated Test CA', ...caExt);
  writeFileSync(
    p('server.ext'),
    `basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=${options.serverAltNames.join(',')}\n`,
  );
  run('req', '-new', ...ec, '-keyout', p('server.key'), '-out', p('server.csr'), '-subj', `/CN=${options.serverName}`);
  run('x509', '-req', '-in', p('server.csr'), '-CA', p('ca.pem'), '-CAkey', p('ca.key'), '-set_serial', '2', '-days', '2', '-extfile', p('server.ext'), '-out', p('server.pem'));
  writeFileSync(p('client.ext'), 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n');
  run('req', '-new', ...ec, '-keyout', p('client.key'), '-out', p('client.csr'), '-subj', '/CN=gateway-client');
  run('x509', '-req', '-in', p('client.csr'), '-CA', p('ca.pem'), '-CAkey', p('ca.key'), '-set_serial', '3', '-days', '2', '-extfile', p('client.ext'), '-out', p('client.pem'));
  return {
    dir,
    ca: p('ca.pem'),
    otherCa: p('other-ca.pem'),
    serverCert: p('server.pem'),
    serverKey: p('server.key'),
    clientCert: p('client.pem'),
    clientKey: p('client.key'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** A self-signed certificate for `cn` and 127.0.0.1, made with openssl in `dir` as `<file>.crt` and `<file>.key`. */
export function selfSignedPair(dir: string, cn: string, file = cn): { cert: string; key: string } {
  const cert = join(dir, `${file}.crt`);
  const key = join(dir, `${file}.key`);
  execFileSync(
    '/usr/bin/openssl',
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', `/CN=${cn}`, '-addext', `subjectAltName=DNS:${cn},IP:127.0.0.1`, '-keyout', key, '-out', cert],
    { stdio: 'ignore' },
  );
  return { cert, key };
}

/**
 * Another client certificate signed by `pki`'s CA: `cn` as its common name, `altNames` (openssl's `URI:spiffe://...`,
 * `DNS:x`) as its subject alternative names. Files `<file>.pem` and `<file>.key` in the PKI's directory.
 */
export function issueClientCertificate(pki: TestPki, file: string, cn: string, altNames: readonly string[] = []): { cert: string; key: string } {
  const p = (name: string): string => join(pki.dir, name);
  const run = (...args: string[]): void => {
    execFileSync('/usr/bin/openssl', args, { cwd: pki.dir, stdio: ['ignore', 'ignore', 'pipe'] });
  };
  const san = altNames.length ? `subjectAltName=${altNames.join(',')}\n` : '';
  writeFileSync(p(`${file}.ext`), `basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n${san}`);
  run('req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', p(`${file}.key`), '-out', p(`${file}.csr`), '-subj', `/O=Agents/CN=${cn}`);
  run('x509', '-req', '-in', p(`${file}.csr`), '-CA', pki.ca, '-CAkey', p('ca.key'), '-set_serial', String(100 + Math.floor(Math.random() * 1e9)), '-days', '2', '-extfile', p(`${file}.ext`), '-out', p(`${file}.pem`));
  return { cert: p(`${file}.pem`), key: p(`${file}.key`) };
}
