import assert from 'node:assert/strict';
import { chmodSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createSecureServer } from 'node:http2';
import type { Http2SecureServer, Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import type { AddressInfo, Socket } from 'node:net';
import { join, relative } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { ConfigLoadError } from 'switchyard';
import { fullPreset } from '../../plugins/presets/full.ts';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { makeTestPki } from '../helpers/pki.ts';
import type { TestPki } from '../helpers/pki.ts';
import { waitFor } from './proxy-support.ts';

const preset = fullPreset;

type Pki = TestPki;

/** A CA, a server certificate with SANs and a client certificate signed by it, and an unrelated second CA. */
function makePki(): Pki {
  return makeTestPki({
    serverName: 'upstream.test',
    serverAltNames: ['DNS:upstream.test', 'DNS:localhost', 'IP:127.0.0.1', 'URI:spiffe://switchyard.test/upstream'],
    label: 'backend-tls',
  });
}

/** What the TLS upstream saw of one request. */
interface Seen {
  path: string;
  host: string | undefined;
  httpVersion: string;
  servername: string | false | null | undefined;
  alpn: string | false | null | undefined;
  clientCN: string | undefined;
  clientAuthorized: boolean;
}

interface TlsUpstream {
  port: number;
  seen: Seen[];
  close(): Promise<void>;
}

/**
 * A real TLS upstream on 127.0.0.1 speaking HTTP/1.1 and h2 (ALPN), asking for a client certificate from the test CA
 * without requiring one, so each response reports whether the gateway presented one, plus SNI and ALPN.
 */
async function startTlsUpstream(pki: Pki): Promise<TlsUpstream> {
  const seen: Seen[] = [];
  const server: Http2SecureServer = createSecureServer(
    {
      key: readFileSync(pki.serverKey),
      cert: readFileSync(pki.serverCert),
      ca: readFileSync(pki.ca),
      requestCert: true,
      rejectUnauthorized: false,
      allowHTTP1: true,
      ALPNProtocols: ['h2', 'http/1.1'],
    },
    (req: Http2ServerRequest | IncomingMessage, res: Http2ServerResponse | ServerResponse) => {
      const socket = ('stream' in req && req.stream ? req.stream.session!.socket : req.socket) as TLSSocket;
      const peer = socket.getPeerCertificate();
      const entry: Seen = {
        path: req.url ?? '',
        host: req.headers[':authority'] as string | undefined ?? req.headers.host,
        httpVersion: req.httpVersion,
        servername: socket.servername,
        alpn: socket.alpnProtocol,
        clientCN: peer && Object.keys(peer).length ? (peer.subject?.CN as string | undefined) : undefined,
        clientAuthorized: socket.authorized,
      };
      seen.push(entry);
      (res as ServerResponse).writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(entry));
    },
  );
  const sockets = new Set<Socket>();
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}

describe('backendTLS', () => {
  let pki: Pki;
  let upstream: TlsUpstream;
  let gw: RunningGateway;
  let port: number;

  before(async () => {
    pki = makePki();
    upstream = await startTlsUpstream(pki);
    port = await freePort();
    const ip = `127.0.0.1:${upstream.port}`;
    const tlsRoute = (name: string, backendTLS: Record<string, unknown>, host = ip) => ({
      name,
      matches: [{ path: { pathPrefix: `/${name}` } }],
      policies: { backendTLS },
      backends: [{ host }],
    });
    gw = await startGateway(
      {
        backends: [{ name: 'secure', host: ip, policies: { backendTLS: { root: pki.ca, hostname: 'upstream.test' } } }],
        binds: [
          {
            port,
            listeners: [
              {
                routes: [
                  tlsRoute('root', { root: pki.ca }),
                  tlsRoute('no-root', {}),
                  tlsRoute('wrong-root', { root: pki.otherCa }),
                  tlsRoute('insecure', { insecure: true }),
                  tlsRoute('sni', { root: pki.ca, hostname: 'upstream.test' }),
                  tlsRoute('wrong-name', { root: pki.ca, hostname: 'wrong.test' }),
                  tlsRoute('insecure-host', { root: pki.ca, hostname: 'wrong.test', insecureHost: true }),
                  tlsRoute('insecure-host-wrong-root', { root: pki.otherCa, hostname: 'wrong.test', insecureHost: true }),
                  tlsRoute('san-typed', { root: pki.ca, hostname: 'wrong.test', subjectAltNames: ['DNS:other.test', 'DNS:upstream.test'] }),
                  tlsRoute('san-plain', { root: pki.ca, hostname: 'wrong.test', subjectAltNames: ['UPSTREAM.test'] }),
                  tlsRoute('san-ip', { root: pki.ca, hostname: 'wrong.test', subjectAltNames: ['IP Address:127.0.0.1'] }),
                  tlsRoute('san-uri', { root: pki.ca, hostname: 'wrong.test', subjectAltNames: ['URI:spiffe://switchyard.test/upstream'] }),
                  tlsRoute('san-mismatch', { root: pki.ca, subjectAltNames: ['DNS:other.test', 'IP:10.0.0.1', 'URI:upstream.test'] }),
                  tlsRoute('san-wrong-root', { root: pki.otherCa, subjectAltNames: ['DNS:upstream.test'] }),
                  tlsRoute('mtls', { root: pki.ca, cert: pki.clientCert, key: pki.clientKey }),
                  tlsRoute('alpn-h1', { root: pki.ca, alpn: ['http/1.1'] }),
                  tlsRoute('alpn-h2', { root: pki.ca, alpn: ['h2', 'http/1.1'] }),
                  tlsRoute('https-scheme', { root: pki.ca }, `https://${ip}`),
                  tlsRoute('dns-name', { root: pki.ca }, `localhost:${upstream.port}`),
                  { name: 'named', matches: [{ path: { pathPrefix: '/named' } }], backends: [{ backend: 'secure' }] },
                  {
                    // The backend reference's policy replaces the route's (route < named backend < backend ref).
                    name: 'layered',
                    matches: [{ path: { pathPrefix: '/layered' } }],
                    policies: { backendTLS: { root: pki.otherCa } },
                    backends: [{ host: ip, policies: { backendTLS: { root: pki.ca, hostname: 'upstream.test' } } }],
                  },
                  { name: 'plain', matches: [{ path: { pathPrefix: '/plain' } }], backends: [{ host: ip }] },
                ],
              },
            ],
          },
        ],
      },
      { preset, knownKeys: [] },
    );
  });

  after(async () => {
    await gw?.stop();
    await upstream?.close();
    if (pki) rmSync(pki.dir, { recursive: true, force: true });
  });

  type Answer = Partial<Seen> & { error?: { type: string; message: string } };
  const get = async (path: string, headers: Record<string, string> = {}) => {
    const before = upstream.seen.length;
    const res = await request(`${gw.url(port)}${path}`, { headers });
    const text = await res.body.text();
    const reached = upstream.seen.length > before;
    return { status: res.statusCode, headers: res.headers, text, json: (text ? JSON.parse(text) : {}) as Answer, reached };
  };

  /** A TLS failure: 502 with a JSON error naming the TLS problem, and the upstream application never saw it. */
  const assertTlsFailure = (res: Awaited<ReturnType<typeof get>>, code: RegExp) => {
    assert.equal(res.status, 502, res.text);
    assert.match(String(res.headers['content-type']), /application\/json/);
    assert.equal(res.json.error?.type, 'upstream_tls_error');
    assert.match(String(res.json.error?.message), code);
    assert.equal(res.reached, false, 'the upstream application must not see the request');
  };

  it('`root` verifies the upstream chain: 200 and the upstream saw the request', async () => {
    const res = await get('/root/x?q=1');
    assert.equal(res.status, 200, res.text);
    assert.equal(res.reached, true);
    assert.equal(res.json.path, '/root/x?q=1');
    assert.equal(res.json.servername, false, 'no SNI for an IP literal upstream');
    assert.equal(res.json.clientCN, undefined, 'no client certificate without cert/key');
  });

  it('without `root` the system roots do not trust the test CA: 502', async () => {
    assertTlsFailure(await get('/no-root/x'), /UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_GET_ISSUER_CERT/);
  });

  it('an unrelated CA as `root` is refused: 502', async () => {
    assertTlsFailure(await get('/wrong-root/x'), /UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_GET_ISSUER_CERT/);
  });

  it('`insecure: true` skips verification entirely: 200 without any root', async () => {
    const res = await get('/insecure/x');
    assert.equal(res.status, 200, res.text);
    assert.equal(res.reached, true);
    assert.ok(
      gw.logs.some((line) => line.includes('`insecure: true` turns off all verification') && line.includes('insecure')),
      'loading `insecure: true` logs a warning',
    );
  });

  it('`hostname` is the SNI and the verified name (upstream is an IP literal)', async () => {
    const res = await get('/sni/x');
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.servername, 'upstream.test');
  });

  it("`hostname` wins over the client's Host header, for SNI and verification", async () => {
    const res = await get('/sni/host-header', { host: 'api.client.example' });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.servername, 'upstream.test');
    assert.equal(res.json.host, 'api.client.example', 'the Host header itself is still forwarded');
    // An IP-literal upstream without `hostname` is verified against its IP, not the client's Host.
    const ip = await get('/root/host-header', { host: 'api.client.example' });
    assert.equal(ip.status, 200, ip.text);
    assert.equal(ip.json.servername, false);
  });

  it('a `hostname` the certificate does not carry is refused: 502', async () => {
    assertTlsFailure(await get('/wrong-name/x'), /ERR_TLS_CERT_ALTNAME_INVALID/);
    // The access log says why, naming what the certificate carries: the code alone left the operator guessing.
    await waitFor(() => gw.logs.some((l) => l.includes('http.path=/wrong-name/x')), 5_000, 'the access line');
    assert.match(gw.logs.find((l) => l.includes('http.path=/wrong-name/x'))!, /ERR_TLS_CERT_ALTNAME_INVALID \(.*wrong\.test.*altnames.*DNS:/);
  });

  it('`insecureHost` skips the name check but still verifies the chain', async () => {
    const ok = await get('/insecure-host/x');
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.json.servername, 'wrong.test');
    assertTlsFailure(await get('/insecure-host-wrong-root/x'), /UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_GET_ISSUER_CERT/);
  });

  it('`subjectAltNames` replaces the hostname check: typed, bare, IP and URI entries', async () => {
    for (const path of ['/san-typed/x', '/san-plain/x', '/san-ip/x', '/san-uri/x']) {
      const res = await get(path);
      assert.equal(res.status, 200, `${path}: ${res.text}`);
      assert.equal(res.json.servername, 'wrong.test', 'SNI is still `hostname`');
    }
  });

  it('`subjectAltNames` matching nothing in the certificate is refused (types must match too): 502', async () => {
    assertTlsFailure(await get('/san-mismatch/x'), /ERR_TLS_CERT_ALTNAME_INVALID/);
    await waitFor(() => gw.logs.some((l) => l.includes('http.path=/san-mismatch/x')), 5_000, 'the access line');
    assert.match(gw.logs.find((l) => l.includes('http.path=/san-mismatch/x'))!, /match none of: /);
  });

  it('`subjectAltNames` still verifies the chain', async () => {
    assertTlsFailure(await get('/san-wrong-root/x'), /UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_GET_ISSUER_CERT/);
  });

  it('`cert` + `key`: the upstream sees the client certificate (mTLS)', async () => {
    const res = await get('/mtls/x');
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.clientCN, 'gateway-client');
    assert.equal(res.json.clientAuthorized, true, 'the client certificate chains to the CA the upstream trusts');
  });

  it('`alpn` decides the protocol negotiated with the upstream', async () => {
    const h1 = await get('/alpn-h1/x');
    assert.equal(h1.status, 200, h1.text);
    assert.equal(h1.json.alpn, 'http/1.1');
    assert.equal(h1.json.httpVersion, '1.1');
    const h2 = await get('/alpn-h2/x');
    assert.equal(h2.status, 200, h2.text);
    assert.equal(h2.json.alpn, 'h2');
    assert.equal(h2.json.httpVersion, '2.0');
  });

  it('without `alpn` the gateway offers HTTP/1.1', async () => {
    const res = await get('/root/alpn');
    assert.equal(res.json.alpn, 'http/1.1');
  });

  it('applies to a named backend through its `policies`', async () => {
    const res = await get('/named/x');
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.servername, 'upstream.test');
  });

  it("a backend reference's backendTLS replaces the route's", async () => {
    const res = await get('/layered/x');
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.servername, 'upstream.test');
  });

  it('`host: https://…` with `root` works', async () => {
    const res = await get('/https-scheme/x');
    assert.equal(res.status, 200, res.text);
    assert.equal(res.reached, true);
  });

  it('a DNS-name host is the default SNI and verified name', async () => {
    const res = await get('/dns-name/x');
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.servername, 'localhost');
  });

  it('without backendTLS a scheme-less host is plain HTTP (the TLS upstream rejects it)', async () => {
    const res = await get('/plain/x');
    assert.notEqual(res.status, 200);
    assert.equal(res.reached, false);
  });

  describe('config errors', () => {
    const config = (policy: string): string =>
      [
        'binds:',
        `- port: ${port}`,
        '  listeners:',
        '  - routes:',
        '    - backends:',
        '      - host: 127.0.0.1:1',
        '      policies:',
        '        backendTLS:',
        ...policy.split('\n').map((l) => `          ${l}`),
        '',
      ].join('\n');

    const compileError = async (text: string): Promise<ConfigLoadError> => {
      try {
        const snapshot = await gw.gateway.compile(text);
        snapshot.dispose();
      } catch (err) {
        if (err instanceof ConfigLoadError) return err;
        throw err;
      }
      assert.fail('expected a ConfigLoadError');
    };

    it('an unreadable `root` file is an error at that field', async () => {
      const missing = join(pki.dir, 'missing-ca.pem');
      const err = await compileError(config(`root: ${missing}\nhostname: upstream.test`));
      assert.match(err.message, new RegExp(`:9:17: cannot read the CA bundle file \`${missing.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\`.*no such file`));
      assert.match(err.message, /at binds\[0\]\.listeners\[0\]\.routes\[0\]\.policies\.backendTLS\.root/);
    });

    it('an unreadable `cert` file is an error at that field', async () => {
      const unreadable = join(pki.dir, 'unreadable.pem');
      writeFileSync(unreadable, readFileSync(pki.clientCert));
      chmodSync(unreadable, 0o000);
      let canStillRead = false;
      try {
        readFileSync(unreadable);
        canStillRead = true; // running as root: permissions do not apply, use a missing file instead
      } catch {
        /* expected */
      }
      const path = canStillRead ? join(pki.dir, 'nope', 'client.pem') : unreadable;
      const err = await compileError(config(`cert: ${path}\nkey: ${pki.clientKey}`));
      assert.match(err.message, /:9:17: cannot read the client certificate file/);
      assert.match(err.message, canStillRead ? /no such file/ : /permission denied/);
      assert.match(err.message, /policies\.backendTLS\.cert\b/);
    });

    it('a CA bundle cut short (a BEGIN line and no END) is an error at `root`, not a bundle that trusts nothing', async () => {
      const cut = join(pki.dir, 'cut-ca.pem');
      writeFileSync(cut, '-----BEGIN CERTIFICATE-----\n');
      const err = await compileError(config(`root: ${cut}\nhostname: upstream.test`));
      assert.match(err.message, /:9:17: the CA bundle `.*cut-ca\.pem` is not valid PEM: PEM block 1 \(CERTIFICATE\) has no END line/);
      const second = join(pki.dir, 'cut-second-ca.pem');
      const whole = readFileSync(pki.ca, 'utf8');
      writeFileSync(second, `${whole}${whole.slice(0, 120)}`);
      assert.match((await compileError(config(`root: ${second}`))).message, /PEM block 2 \(CERTIFICATE\) has no END line/);
    });

    it('a file that holds no PEM is an error at that field', async () => {
      const junk = join(pki.dir, 'junk.pem');
      writeFileSync(junk, 'not a certificate\n');
      const err = await compileError(config(`root: ${pki.ca}\nkey: ${junk}\ncert: ${pki.clientCert}`));
      assert.match(err.message, /:10:16: the private key file `.*junk\.pem` holds no PEM block/);
    });

    it('a key that does not belong to the certificate is an error at `key`', async () => {
      const err = await compileError(config(`cert: ${pki.clientCert}\nkey: ${pki.serverKey}`));
      assert.match(err.message, /:10:16: the private key .* does not belong to/);
    });

    it('`cert` without `key` (and `key` without `cert`) is an error', async () => {
      const a = await compileError(config(`root: ${pki.ca}\ncert: ${pki.clientCert}`));
      assert.match(a.message, /:10:17: `cert` needs `key`/);
      const b = await compileError(config(`key: ${pki.clientKey}`));
      assert.match(b.message, /:9:16: `key` needs `cert`/);
    });

    it('a malformed `subjectAltNames` entry is an error at that entry', async () => {
      const err = await compileError(config('subjectAltNames: ["DNS:ok.test", "IP:not-an-ip"]'));
      assert.match(err.message, /:9:44: `not-an-ip` is not an IP address/);
    });

    it('an `alpn` protocol the gateway cannot speak is a schema error', async () => {
      const err = await compileError(config('alpn: [spdy/3]'));
      assert.match(err.message, /backendTLS\.alpn\[0\]/);
    });

    it('a relative path resolves against the working directory', async () => {
      const snapshot = await gw.gateway.compile(config(`root: ${relative(process.cwd(), pki.ca)}`));
      snapshot.dispose();
    });
  });
});
