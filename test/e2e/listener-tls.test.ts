import assert from 'node:assert/strict';
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { connect as tcpConnect } from 'node:net';
import { join } from 'node:path';
import { connect } from 'node:tls';
import type { TLSSocket } from 'node:tls';
import { after, before, describe, it } from 'node:test';
import type { RunningGateway } from '../helpers/gateway.ts';
import { startGatewayOnFreePorts, waitFor, within } from './proxy-support.ts';
import { testTempDir } from '../helpers/temp-dir.ts';
import { makeTestPki, selfSignedPair } from '../helpers/pki.ts';
import type { TestPki } from '../helpers/pki.ts';

const selfSigned = selfSignedPair;

/** A TLS 1.2 connection (renegotiation exists only before 1.3) trusting `ca`. */
function tls12(port: number, servername: string, ca: string): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port, servername, ca, maxVersion: 'TLSv1.2' }, () => resolve(s));
    s.on('error', reject);
  });
}

describe('HTTPS listener: handshake deadline and renegotiation', () => {
  let dir: string;
  let gw: RunningGateway;
  let port: number;
  let ca: string;

  before(async () => {
    dir = testTempDir('switchyard-listener-tls-');
    const pair = selfSigned(dir, 'localhost');
    ca = readFileSync(pair.cert, 'utf8');
    ({ gw, ports: [port] } = await startGatewayOnFreePorts(1, ([port]) => ({
      // The handshake counts against the header deadline: 1 s here, so the test need not wait 15 s.
      config: { headerTimeout: '1s' },
      binds: [{ port, listeners: [{ protocol: 'HTTPS', tls: pair, routes: [{ policies: { directResponse: { status: 200, body: 'ok' } } }] }] }],
    })));
  });
  after(async () => {
    await gw?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a client that starts a TLS handshake and never finishes it is closed within the header deadline', async () => {
    const started = performance.now();
    const closed = await within(
      new Promise<number>((resolve) => {
        const s = tcpConnect(port, '127.0.0.1', () => s.write(Buffer.from([0x16, 0x03, 0x01, 0x00, 0x50])));
        s.on('error', () => undefined);
        s.on('close', () => resolve(performance.now() - started));
      }),
      10_000,
      'a stalled handshake',
    );
    assert.ok(closed >= 900 && closed < 5_000, `closed after ${Math.round(closed)} ms`);
  });

  it('a client that renegotiates (TLS 1.2) is refused; the connection serves no more requests', async () => {
    const s = await tls12(port, 'localhost', ca);
    try {
      const outcome = await within(
        new Promise<string>((resolve) => {
          s.on('error', (e: NodeJS.ErrnoException) => resolve(`error ${e.code}`));
          s.on('close', () => resolve('closed'));
          s.renegotiate({ rejectUnauthorized: true }, (e) => resolve(e ? `error ${(e as NodeJS.ErrnoException).code}` : 'renegotiated'));
        }),
        5_000,
        'renegotiation',
      );
      assert.notEqual(outcome, 'renegotiated');
    } finally {
      s.destroy();
    }
  });
});

/** The subject CN of the certificate the bind presents to a client naming `servername` (none: no SNI). */
function presentedCn(port: number, servername?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port, servername: servername ?? '', rejectUnauthorized: false }, () => {
      const cn = String(s.getPeerCertificate().subject.CN);
      s.destroy();
      resolve(cn);
    });
    s.on('error', reject);
  });
}

/** Put the pair made for `cn` in place of `target`'s files, each by an atomic rename (as cert-manager's writers do). */
function replacePair(dir: string, target: { cert: string; key: string }, cn: string): void {
  const made = selfSigned(dir, cn, `${cn}-new`);
  renameSync(made.cert, target.cert);
  renameSync(made.key, target.key);
}

describe('HTTPS listener certificates renewed on disk (ADR 0138)', () => {
  let dir: string;
  let gw: RunningGateway;
  let port: number;
  let pair: { cert: string; key: string };
  let named: { cert: string; key: string };

  before(async () => {
    dir = testTempDir('switchyard-cert-renewal-');
    pair = selfSigned(dir, 'one.test', 'served');
    named = selfSigned(dir, 'a.test', 'named');
    const reply = [{ policies: { directResponse: { status: 200, body: 'ok' } } }];
    ({ gw, ports: [port] } = await startGatewayOnFreePorts(
      1,
      ([port]) => ({
        binds: [
          {
            port,
            listeners: [
              { name: 'any', protocol: 'HTTPS', tls: pair, routes: reply },
              { name: 'a', hostname: 'a.test', protocol: 'HTTPS', tls: named, routes: reply },
            ],
          },
        ],
      }),
      { watch: true },
    ));
  });
  after(async () => {
    await gw?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the access log names the SNI a request came with (`tls.sni`), and none without', async () => {
    for (const servername of ['a.test', undefined]) {
      await new Promise<void>((resolve, reject) => {
        const s = connect({ host: '127.0.0.1', port, servername: servername ?? '', rejectUnauthorized: false }, () => s.end(`GET /sni-${servername ?? 'none'} HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n`));
        s.on('data', () => undefined);
        s.on('close', () => resolve());
        s.on('error', reject);
      });
    }
    await waitFor(() => gw.logs.some((l) => l.includes('http.path=/sni-none')), 5_000, 'the access lines');
    assert.match(gw.logs.find((l) => l.includes('http.path=/sni-a.test'))!, / tls\.sni=a\.test /);
    assert.doesNotMatch(gw.logs.find((l) => l.includes('http.path=/sni-none'))!, /tls\.sni/);
  });

  it('a renewed certificate and key are served to new connections without a reload (SNI or none)', async () => {
    assert.equal(await presentedCn(port), 'one.test');
    assert.equal(await presentedCn(port, 'a.test'), 'a.test');
    replacePair(dir, pair, 'two.test');
    replacePair(dir, named, 'a2.test');
    await waitFor(async () => (await presentedCn(port)) === 'two.test', 10_000, 'the renewed default certificate');
    await waitFor(async () => (await presentedCn(port, 'a.test')) === 'a2.test', 10_000, 'the renewed certificate of a.test');
    assert.equal(await presentedCn(port, 'other.test'), 'two.test');
    await waitFor(() => gw.logs.some((l) => /listener certificate reloaded/.test(l) && /listener=any/.test(l)), 5_000, 'the reload line');
  });

  it('a broken renewal (not PEM, or a key of another certificate) keeps the last good certificate, with an error logged', async () => {
    writeFileSync(pair.cert + '.tmp', 'not a certificate');
    renameSync(pair.cert + '.tmp', pair.cert);
    await waitFor(() => gw.logs.some((l) => /cannot reload the listener certificate/.test(l) && /listener=any/.test(l)), 10_000, 'the error line');
    assert.equal(await presentedCn(port), 'two.test');
    const other = selfSigned(dir, 'three.test', 'other');
    renameSync(other.cert, pair.cert); // the key on disk is still two.test's
    await waitFor(() => gw.logs.filter((l) => /cannot reload the listener certificate/.test(l)).length >= 2, 10_000, 'the mismatch error');
    assert.equal(await presentedCn(port), 'two.test');
    renameSync(other.key, pair.key);
    await waitFor(async () => (await presentedCn(port)) === 'three.test', 10_000, 'the repaired pair');
  });
});

describe('HTTPS listener certificates renewed on disk: a reload of the unchanged config (SIGHUP) reads them', () => {
  it('without a file watch, a reload of the same config text serves the renewed pair; the generation stays', async () => {
    const dir = testTempDir('switchyard-cert-sighup-');
    const pair = selfSigned(dir, 'one.test', 'served');
    const { gw, ports } = await startGatewayOnFreePorts(1, ([port]) => ({
      binds: [{ port, listeners: [{ protocol: 'HTTPS', tls: pair, routes: [{ policies: { directResponse: { status: 200, body: 'ok' } } }] }] }],
    }));
    try {
      assert.equal(await presentedCn(ports[0]!), 'one.test');
      replacePair(dir, pair, 'two.test');
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(await presentedCn(ports[0]!), 'one.test', 'no watch: nothing changes by itself');
      assert.equal(await gw.gateway.reload(), false, 'the config itself did not change');
      assert.equal(await presentedCn(ports[0]!), 'two.test');
      assert.equal(gw.gateway.generation, 1);
    } finally {
      await gw.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('HTTPS listener `tls.root`: client certificates required and verified (mutual TLS, ADR 0138)', () => {
  let pki: TestPki;
  let gw: RunningGateway;
  let port: number;
  let stranger: { cert: string; key: string };
  let caText: Buffer;

  before(async () => {
    pki = makeTestPki({ label: 'listener-mtls', serverName: 'secure.test', serverAltNames: ['DNS:secure.test', 'DNS:open.test', 'IP:127.0.0.1'] });
    stranger = selfSigned(pki.dir, 'stranger');
    caText = readFileSync(pki.ca); // the clients' trust, whatever a test writes to the listener's client CA file
    const tls = { cert: pki.serverCert, key: pki.serverKey };
    const reply = (body: string) => [{ policies: { directResponse: { status: 200, body } } }];
    ({ gw, ports: [port] } = await startGatewayOnFreePorts(1, ([port]) => ({
      binds: [
        {
          port,
          listeners: [
            { name: 'open', hostname: 'open.test', protocol: 'HTTPS', tls, routes: reply('open') },
            { name: 'secure', hostname: 'secure.test', protocol: 'HTTPS', tls: { ...tls, root: pki.ca }, routes: reply('secure') },
          ],
        },
      ],
    })));
  });
  after(async () => {
    await gw?.stop();
    pki?.remove();
  });

  /** A request over TLS: the status and body, or `closed` when the connection ended without an answer. */
  function call(servername: string | undefined, host: string, client?: { cert: string; key: string }): Promise<{ status: number; body: string } | 'closed'> {
    return within(
      new Promise((resolve) => {
        const s = connect({
          host: '127.0.0.1',
          port,
          ca: caText,
          ...(servername === undefined ? { servername: '', checkServerIdentity: () => undefined } : { servername }),
          ...(client ? { cert: readFileSync(client.cert), key: readFileSync(client.key) } : {}),
        });
        let data = '';
        s.on('secureConnect', () => s.write(`GET / HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`));
        s.on('data', (c: Buffer) => (data += c.toString()));
        s.on('error', () => undefined);
        s.on('close', () => resolve(data ? { status: Number(data.slice(9, 12)), body: data.slice(data.indexOf('\r\n\r\n') + 4) } : 'closed'));
      }),
      5_000,
      `request to ${host}`,
    );
  }

  it('a client certificate the CA signed is served', async () => {
    assert.deepEqual(await call('secure.test', 'secure.test', { cert: pki.clientCert, key: pki.clientKey }), { status: 200, body: 'secure' });
  });

  it('no client certificate, or one the CA did not sign, gets no answer', async () => {
    assert.equal(await call('secure.test', 'secure.test'), 'closed');
    assert.equal(await call('secure.test', 'secure.test', stranger), 'closed');
  });

  it('the listener without `root` asks nothing of its clients', async () => {
    assert.deepEqual(await call('open.test', 'open.test'), { status: 200, body: 'open' });
  });

  it('a renewed certificate read on SIGHUP keeps the client CA: verified clients still served, others still not', async () => {
    writeFileSync(pki.serverCert, readFileSync(pki.serverCert, 'utf8') + '\n');
    assert.equal(await gw.gateway.reload(), false);
    await waitFor(() => gw.logs.some((l) => /listener certificate reloaded/.test(l) && /listener=secure/.test(l)), 5_000, 'the reload line');
    assert.deepEqual(await call('secure.test', 'secure.test', { cert: pki.clientCert, key: pki.clientKey }), { status: 200, body: 'secure' });
    assert.equal(await call('secure.test', 'secure.test'), 'closed');
  });

  it('the mutual-TLS listener cannot be reached over another listener\'s connection (SNI, or none)', async () => {
    const other = await call('open.test', 'secure.test');
    assert.notEqual(other, 'closed');
    assert.equal((other as { status: number }).status, 421);
    const bare = await call(undefined, 'secure.test');
    assert.notEqual(bare, 'closed');
    assert.equal((bare as { status: number }).status, 421);
  });

  it('a client CA renewed into a cut file (BEGIN and no END) keeps the last good one, with an error logged', async () => {
    const good = readFileSync(pki.ca, 'utf8');
    try {
      writeFileSync(pki.ca, '-----BEGIN CERTIFICATE-----\n');
      assert.equal(await gw.gateway.reload(), false);
      await waitFor(() => gw.logs.some((l) => /cannot reload the listener certificate/.test(l) && /listener=secure/.test(l) && /no END line/.test(l)), 5_000, 'the error line');
      assert.deepEqual(await call('secure.test', 'secure.test', { cert: pki.clientCert, key: pki.clientKey }), { status: 200, body: 'secure' });
      assert.equal(await call('secure.test', 'secure.test', stranger), 'closed');
    } finally {
      writeFileSync(pki.ca, good);
    }
  });
});

describe('HTTPS listener `tls.root` added by a reload', () => {
  it('is required from then on, on the same server (the port never stops listening)', async () => {
    const pki = makeTestPki({ label: 'mtls-reload', serverName: 'secure.test', serverAltNames: ['DNS:secure.test', 'DNS:open.test', 'IP:127.0.0.1'] });
    const tls = { cert: pki.serverCert, key: pki.serverKey };
    const config = (root: boolean) => (port: number) => ({
      binds: [
        {
          port,
          listeners: [
            { name: 'open', hostname: 'open.test', protocol: 'HTTPS', tls, routes: [{ policies: { directResponse: { status: 200, body: 'open' } } }] },
            { name: 'secure', hostname: 'secure.test', protocol: 'HTTPS', tls: root ? { ...tls, root: pki.ca } : tls, routes: [{ policies: { directResponse: { status: 200, body: 'secure' } } }] },
          ],
        },
      ],
    });
    const { gw, ports } = await startGatewayOnFreePorts(1, ([port]) => config(false)(port));
    const port = ports[0]!;
    const status = (servername: string, client?: boolean): Promise<number> =>
      new Promise((resolve) => {
        const s = connect({ host: '127.0.0.1', port, servername, ca: readFileSync(pki.ca), ...(client ? { cert: readFileSync(pki.clientCert), key: readFileSync(pki.clientKey) } : {}) });
        let data = '';
        s.on('secureConnect', () => s.write(`GET / HTTP/1.1\r\nHost: ${servername}\r\nConnection: close\r\n\r\n`));
        s.on('data', (c: Buffer) => (data += c.toString()));
        s.on('error', () => undefined);
        s.on('close', () => resolve(data ? Number(data.slice(9, 12)) : 0));
      });
    try {
      assert.equal(await status('secure.test'), 200);
      const { stringify } = await import('yaml');
      const text = readFileSync(gw.file, 'utf8');
      writeFileSync(gw.file, text.replace(/^binds:[\s\S]*$/m, stringify({ binds: config(true)(port).binds })));
      assert.equal(await gw.gateway.reload(), true);
      assert.equal(await status('secure.test'), 0, 'no client certificate: no answer');
      assert.equal(await status('secure.test', true), 200);
      assert.equal(await status('open.test'), 200);
    } finally {
      await gw.stop();
      pki.remove();
    }
  });
});

describe('HTTPS listener `tls.root` cut short', () => {
  it('is a config error at that field (node:tls would take it and verify no client)', async () => {
    const dir = testTempDir('switchyard-mtls-cut-');
    const pair = selfSigned(dir, 'localhost');
    const cut = join(dir, 'cut-ca.pem');
    writeFileSync(cut, '-----BEGIN CERTIFICATE-----\n');
    try {
      await assert.rejects(
        startGatewayOnFreePorts(1, ([port]) => ({
          binds: [{ port, listeners: [{ protocol: 'HTTPS', tls: { ...pair, root: cut }, routes: [{ policies: { directResponse: { status: 200 } } }] }] }],
        })),
        (err: Error) => /the listener client CA file `.*cut-ca\.pem` is not valid PEM: PEM block 1 \(CERTIFICATE\) has no END line/.test(err.message) && /listeners\[0\]\.tls\.root/.test(err.message),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('HTTPS listener `tls.root` that cannot be read', () => {
  it('is a config error at that field', async () => {
    const dir = testTempDir('switchyard-mtls-missing-');
    const pair = selfSigned(dir, 'localhost');
    try {
      await assert.rejects(
        startGatewayOnFreePorts(1, ([port]) => ({
          binds: [{ port, listeners: [{ protocol: 'HTTPS', tls: { ...pair, root: join(dir, 'missing-ca.pem') }, routes: [{ policies: { directResponse: { status: 200 } } }] }] }],
        })),
        (err: Error) => /cannot read the listener client CA file/.test(err.message) && /listeners\[0\]\.tls\.root/.test(err.message),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
