// Listener `tls.minTLSVersion`, `maxTLSVersion`, `cipherSuites` (BEHAVIOUR 2.1b) and the verified client
// certificate in CEL (`source.subjectCn`, ...; BEHAVIOUR 10), ADR 0140. Real TLS clients, certificates made by openssl.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:tls';
import type { ConnectionOptions } from 'node:tls';
import { after, before, describe, it } from 'node:test';
import type { RunningGateway } from '../helpers/gateway.ts';
import { startGatewayOnFreePorts, within } from './proxy-support.ts';
import { issueClientCertificate, makeTestPki } from '../helpers/pki.ts';
import type { TestPki } from '../helpers/pki.ts';

type Answer = { status: number; body: string; protocol: string | null; cipher: string } | 'closed';

/** One request over a new TLS connection: the answer with what TLS negotiated, or `closed` without one. */
function call(port: number, pki: TestPki, servername: string, options: ConnectionOptions = {}, path = '/', headers = ''): Promise<Answer> {
  return within(
    new Promise((resolve) => {
      const s = connect({ host: '127.0.0.1', port, servername, ca: readFileSync(pki.ca), ...options });
      let data = '';
      let negotiated = { protocol: null as string | null, cipher: '' };
      s.on('secureConnect', () => {
        negotiated = { protocol: s.getProtocol(), cipher: s.getCipher().name };
        s.write(`GET ${path} HTTP/1.1\r\nHost: ${servername}\r\n${headers}Connection: close\r\n\r\n`);
      });
      s.on('data', (c: Buffer) => (data += c.toString()));
      s.on('error', () => undefined);
      s.on('close', () => resolve(data ? { status: Number(data.slice(9, 12)), body: data.slice(data.indexOf('\r\n\r\n') + 4), ...negotiated } : 'closed'));
    }),
    5_000,
    `request to ${servername}`,
  );
}

const reply = (body: string) => [{ policies: { directResponse: { status: 200, body } } }];

/** The load error of a config that must not load; a gateway that started anyway is stopped and the test fails. */
async function refusedAtLoad(build: (ports: number[]) => Record<string, unknown>): Promise<Error> {
  const started = await startGatewayOnFreePorts(1, build).then(
    ({ gw }) => gw,
    (err: Error) => err,
  );
  if (started instanceof Error) return started;
  await started.stop();
  return assert.fail('the config loaded');
}

describe('listener `minTLSVersion`, `maxTLSVersion`, `cipherSuites`', () => {
  let pki: TestPki;
  let gw: RunningGateway;
  let modern: number;
  let legacy: number;
  let open: number;
  const alt = ['DNS:modern.test', 'DNS:legacy.test', 'DNS:open.test', 'DNS:also.test', 'IP:127.0.0.1'];

  before(async () => {
    pki = makeTestPki({ label: 'tls-options', serverName: 'modern.test', serverAltNames: alt });
    const tls = { cert: pki.serverCert, key: pki.serverKey };
    const legacyTls = { ...tls, maxTLSVersion: 1.2, cipherSuites: ['TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256', 'ECDHE-ECDSA-AES128-GCM-SHA256'] };
    ({ gw, ports: [modern, legacy, open] } = await startGatewayOnFreePorts(3, ([modern, legacy, open]) => ({
      binds: [
        { port: modern, listeners: [{ name: 'modern', protocol: 'HTTPS', tls: { ...tls, minTLSVersion: 'TLS_V1_3' }, routes: reply('modern') }] },
        {
          port: legacy,
          listeners: [
            { name: 'legacy', hostname: 'legacy.test', protocol: 'HTTPS', tls: legacyTls, routes: reply('legacy') },
            // The same settings in another spelling: one port, listeners that agree.
            { name: 'also', hostname: 'also.test', protocol: 'HTTPS', tls: { ...legacyTls, maxTLSVersion: 'TLSv1.2' }, routes: reply('also') },
          ],
        },
        { port: open, listeners: [{ name: 'open', protocol: 'HTTPS', tls, routes: reply('open') }] },
      ],
    })));
  });
  after(async () => {
    await gw?.stop();
    pki?.remove();
  });

  it('`minTLSVersion: TLS_V1_3`: a TLS 1.3 client is served, a TLS 1.2 one is not', async () => {
    const ok = await call(modern, pki, 'modern.test');
    assert.equal(ok !== 'closed' && ok.status, 200);
    assert.equal(ok !== 'closed' && ok.protocol, 'TLSv1.3');
    assert.equal(await call(modern, pki, 'modern.test', { maxVersion: 'TLSv1.2' }), 'closed');
  });

  it('`maxTLSVersion: 1.2` and `cipherSuites`: TLS 1.2 with a listed suite, the first listed preferred', async () => {
    for (const name of ['legacy.test', 'also.test']) {
      const ok = await call(legacy, pki, name);
      assert.ok(ok !== 'closed');
      assert.equal(ok.protocol, 'TLSv1.2');
      assert.equal(ok.cipher, 'ECDHE-ECDSA-CHACHA20-POLY1305');
      assert.equal(ok.body, name.split('.')[0]);
    }
    const second = await call(legacy, pki, 'legacy.test', { ciphers: 'ECDHE-ECDSA-AES128-GCM-SHA256' });
    assert.equal(second !== 'closed' && second.cipher, 'ECDHE-ECDSA-AES128-GCM-SHA256');
    assert.equal(await call(legacy, pki, 'legacy.test', { ciphers: 'ECDHE-ECDSA-AES256-GCM-SHA384' }), 'closed');
  });

  it('a listener without settings keeps the defaults (TLS 1.2 and 1.3, every default suite)', async () => {
    const v13 = await call(open, pki, 'open.test');
    assert.equal(v13 !== 'closed' && v13.protocol, 'TLSv1.3');
    const v12 = await call(open, pki, 'open.test', { maxVersion: 'TLSv1.2', ciphers: 'ECDHE-ECDSA-AES256-GCM-SHA384' });
    assert.equal(v12 !== 'closed' && v12.body, 'open');
  });
});

describe('listener TLS settings refused at load', () => {
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ['a version below 1.2', { minTLSVersion: 'TLS_V1_1' }, /TLS 1\.2.*minTLSVersion/s],
    ['an unknown version', { maxTLSVersion: 'TLS_V1_4' }, /maxTLSVersion/],
    ['min above max', { minTLSVersion: '1.3', maxTLSVersion: '1.2' }, /minTLSVersion.*above.*maxTLSVersion/s],
    ['a misspelt suite', { cipherSuites: ['TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA265'] }, /did you mean `TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256`/],
    ['only TLS 1.3 suites with maxTLSVersion 1.2', { maxTLSVersion: '1.2', cipherSuites: ['TLS_AES_128_GCM_SHA256'] }, /TLS 1\.2.*cipherSuites/s],
  ];
  for (const [what, extra, message] of cases) {
    it(what, async () => {
      const pki = makeTestPki({ label: 'tls-options-bad', serverName: 'localhost', serverAltNames: ['DNS:localhost'] });
      try {
        const err = await refusedAtLoad(([port]) => ({
          binds: [{ port, listeners: [{ protocol: 'HTTPS', tls: { cert: pki.serverCert, key: pki.serverKey, ...extra }, routes: reply('x') }] }],
        }));
        assert.ok(message.test(err.message) && /listeners\[0\]\.tls/.test(err.message), err.message);
      } finally {
        pki.remove();
      }
    });
  }

  it('`tls` on a listener that is not HTTPS (it would serve cleartext)', async () => {
    const pki = makeTestPki({ label: 'tls-options-plain', serverName: 'localhost', serverAltNames: ['DNS:localhost'] });
    try {
      const err = await refusedAtLoad(([port]) => ({
        binds: [{ port, listeners: [{ tls: { cert: pki.serverCert, key: pki.serverKey, minTLSVersion: 'TLS_V1_3' }, routes: reply('x') }] }],
      }));
      assert.ok(/listeners\[0\]\.tls/.test(err.message) && /protocol: HTTPS/.test(err.message), err.message);
    } finally {
      pki.remove();
    }
  });

  it('listeners of one port with different settings (node:tls negotiates per port)', async () => {
    const pki = makeTestPki({ label: 'tls-options-mixed', serverName: 'localhost', serverAltNames: ['DNS:a.test', 'DNS:b.test'] });
    const tls = { cert: pki.serverCert, key: pki.serverKey };
    try {
      const err = await refusedAtLoad(([port]) => ({
        binds: [
          {
            port,
            listeners: [
              { name: 'a', hostname: 'a.test', protocol: 'HTTPS', tls: { ...tls, minTLSVersion: 'TLS_V1_3' }, routes: reply('a') },
              { name: 'b', hostname: 'b.test', protocol: 'HTTPS', tls, routes: reply('b') },
            ],
          },
        ],
      }));
      assert.ok(/listeners\[1\]\.tls/.test(err.message) && /must have the same minTLSVersion, maxTLSVersion and cipherSuites/.test(err.message) && /`a` has TLSv1\.3/.test(err.message), err.message);
    } finally {
      pki.remove();
    }
  });
});

describe('listener TLS settings changed by a reload', () => {
  it('apply to new connections', async () => {
    const pki = makeTestPki({ label: 'tls-options-reload', serverName: 'localhost', serverAltNames: ['DNS:localhost', 'IP:127.0.0.1'] });
    const tls = { cert: pki.serverCert, key: pki.serverKey };
    const { gw, ports } = await startGatewayOnFreePorts(1, ([port]) => ({ binds: [{ port, listeners: [{ protocol: 'HTTPS', tls, routes: reply('ok') }] }] }));
    const port = ports[0]!;
    try {
      const before = await call(port, pki, 'localhost', { maxVersion: 'TLSv1.2' });
      assert.equal(before !== 'closed' && before.status, 200);
      const { stringify } = await import('yaml');
      const text = readFileSync(gw.file, 'utf8');
      writeFileSync(gw.file, text.replace(/^binds:[\s\S]*$/m, stringify({ binds: [{ port, listeners: [{ protocol: 'HTTPS', tls: { ...tls, minTLSVersion: '1.3' }, routes: reply('ok') }] }] })));
      assert.equal(await gw.gateway.reload(), true);
      assert.equal(await call(port, pki, 'localhost', { maxVersion: 'TLSv1.2' }), 'closed');
      const after = await call(port, pki, 'localhost');
      assert.equal(after !== 'closed' && after.protocol, 'TLSv1.3');
    } finally {
      await gw.stop();
      pki.remove();
    }
  });
});

describe('the verified client certificate in CEL (`source.subjectCn`, ...)', () => {
  let pki: TestPki;
  let gw: RunningGateway;
  let port: number;
  let agent1: { cert: string; key: string };
  let agent2: { cert: string; key: string };

  before(async () => {
    pki = makeTestPki({ label: 'tls-cel', serverName: 'secure.test', serverAltNames: ['DNS:secure.test', 'DNS:open.test', 'IP:127.0.0.1'] });
    agent1 = issueClientCertificate(pki, 'agent1', 'agent-1', ['URI:spiffe://example.org/ns/prod/sa/agent-1', 'DNS:agent-1.example.org']);
    agent2 = issueClientCertificate(pki, 'agent2', 'agent-2');
    const tls = { cert: pki.serverCert, key: pki.serverKey };
    const rule = (name: string, expr: string) => ({ name, matches: [{ path: { exact: `/${name}` } }], policies: { authorization: { rules: [expr] }, directResponse: { status: 200, body: name } } });
    const routes = [
      rule('cn', 'source.subjectCn == "agent-1"'),
      rule('spiffe', 'source.spiffeId == "spiffe://example.org/ns/prod/sa/agent-1"'),
      rule('sans', '"agent-1.example.org" in source.subjectAltNames && "spiffe://example.org/ns/prod/sa/agent-1" in source.subjectAltNames'),
      rule('subject', 'source.subject == "O=Agents, CN=agent-1" && source.issuer == "CN=Switchyard tls-cel Test CA"'),
      rule('pem', 'source.certificate.startsWith("-----BEGIN CERTIFICATE-----\\n")'),
      rule('none', '!has(source.subjectCn) && !has(source.certificate)'),
    ];
    ({ gw, ports: [port] } = await startGatewayOnFreePorts(1, ([port]) => ({
      binds: [
        {
          port,
          listeners: [
            { name: 'secure', hostname: 'secure.test', protocol: 'HTTPS', tls: { ...tls, root: pki.ca }, routes },
            { name: 'open', hostname: 'open.test', protocol: 'HTTPS', tls, routes },
          ],
        },
      ],
    })));
  });
  after(async () => {
    await gw?.stop();
    pki?.remove();
  });

  const as = (client: { cert: string; key: string }): ConnectionOptions => ({ cert: readFileSync(client.cert), key: readFileSync(client.key) });
  const status = (a: Answer) => (a === 'closed' ? 0 : a.status);

  it('an `authorization` rule on `source.subjectCn` lets agent-1 in and refuses agent-2', async () => {
    assert.equal(status(await call(port, pki, 'secure.test', as(agent1), '/cn')), 200);
    assert.equal(status(await call(port, pki, 'secure.test', as(agent2), '/cn')), 403);
  });

  it('`spiffeId`, `subjectAltNames`, `subject`, `issuer`, `certificate` (PEM) of the verified certificate', async () => {
    for (const path of ['/spiffe', '/sans', '/subject', '/pem']) assert.equal(status(await call(port, pki, 'secure.test', as(agent1), path)), 200, path);
    assert.equal(status(await call(port, pki, 'secure.test', as(agent2), '/spiffe')), 403, 'no URI SAN: no spiffeId');
  });

  it('none without mutual TLS, even for a client that sends a certificate; never from headers', async () => {
    assert.equal(status(await call(port, pki, 'open.test', as(agent1), '/none')), 200);
    assert.equal(status(await call(port, pki, 'open.test', as(agent1), '/cn', 'X-Forwarded-Client-Cert: Subject="CN=agent-1"\r\nX-Client-Cert-Cn: agent-1\r\n')), 403);
  });
});
