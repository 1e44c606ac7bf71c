// `requestMirror` and request bodies (ADR 0148): the copy is taken as the body streams to the primary
// (`Exchange.copyBody`), so a chunked body up to 1 MiB reaches the mirror byte for byte (it was sent without one), the
// primary is never held back by the copy (a sized body up to 1 MiB was read whole before the primary got a byte), and
// a body past 1 MiB, sized or chunked, is not mirrored (a sized one was sent without its body). A copy of a body the
// client did not finish is not sent. Checked against recording upstreams (byte count and SHA-256) on the lean HTTP/1.1
// server side (the default) and on node:http (`SWITCHYARD_LEAN_HTTP=off`).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { connect as h2connect } from 'node:http2';
import type { ClientHttp2Session } from 'node:http2';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { chunkedBody, sha256, startBodyRecorder, waitFor } from '../helpers/body-recorder.ts';
import type { BodyRecorder, SeenBody } from '../helpers/body-recorder.ts';
import { httpsBind, startRoutesGateway } from '../helpers/gateway.ts';
import type { RoutesGateway, RunningGateway } from '../helpers/gateway.ts';
import { makeTestPki } from '../helpers/pki.ts';
import type { TestPki } from '../helpers/pki.ts';
import { startGatewayOnFreePorts } from './proxy-support.ts';

const MiB = 1024 * 1024;

/** Bytes that differ from one request to the next, so a copy of another request would not compare equal. */
function body(size: number, seed: number): Buffer {
  const b = Buffer.alloc(size);
  for (let i = 0; i < size; i++) b[i] = (i * 31 + seed * 7) & 0xff;
  return b;
}

/** `b` in 16 KiB chunks: undici sends it chunked. */
const chunked = (b: Buffer) => chunkedBody(b, 16384);

const at = (list: SeenBody[], path: string): SeenBody | undefined => list.find((s) => s.url === path && s.complete);

for (const side of ['lean', 'node'] as const) {
  describe(`requestMirror bodies (${side} server side)`, () => {
    let primary: BodyRecorder;
    let mirror: BodyRecorder;
    let silent: BodyRecorder;
    let gw: RoutesGateway;

    before(async () => {
      primary = await startBodyRecorder((res) => res.end('ok'));
      mirror = await startBodyRecorder((res) => res.end('ok'));
      // Reads each copy whole and never answers: every copy sent to it stays in flight until the gateway stops.
      silent = await startBodyRecorder(() => undefined);
      const requestMirror = { backend: { host: `127.0.0.1:${mirror.port}` } };
      const backends = [{ host: `127.0.0.1:${primary.port}` }];
      gw = await startRoutesGateway(
        [
          // A retrying route copies a chunked body as it streams, up to its 64 KiB replay buffer (ADR 0152): two copies at once.
          { name: 'retry', matches: [{ path: { pathPrefix: '/retry' } }], policies: { requestMirror, retry: { attempts: 1, codes: [503] } }, backends },
          // The a2a policy peeks at a JSON body up to 2 MiB before the mirror copies it (ADR 0142).
          { name: 'a2a', matches: [{ path: { pathPrefix: '/a2a' } }], policies: { a2a: {}, requestMirror }, backends },
          { name: 'silent', matches: [{ path: { pathPrefix: '/silent' } }], policies: { requestMirror: { backend: { host: `127.0.0.1:${silent.port}` } } }, backends },
          { name: 'all', policies: { requestMirror }, backends },
        ],
        { env: side === 'node' ? { ...process.env, SWITCHYARD_LEAN_HTTP: 'off' } : process.env },
      );
    });

    after(async () => {
      await gw?.stop();
      await Promise.all([primary?.close(), mirror?.close(), silent?.close()]);
    });


    /** Send `b` to `path` (chunked or with its length); both upstreams must have got it whole, byte for byte. */
    async function mirrored(path: string, b: Buffer, framing: 'chunked' | 'sized', contentType = 'application/octet-stream'): Promise<void> {
      const res = await request(`${gw.base}${path}`, { method: 'POST', headers: { 'content-type': contentType, 'x-client': 'c1' }, body: framing === 'chunked' ? chunked(b) : b });
      assert.equal(res.statusCode, 200, await res.body.text());
      const main = await waitFor(() => at(primary.seen, path), `the primary's ${path}`);
      assert.equal(main.sha256, sha256(b));
      const copy = await waitFor(() => at(mirror.seen, path), `the mirror's ${path}`);
      assert.equal(copy.method, 'POST');
      assert.equal(copy.headers['x-client'], 'c1');
      assert.equal(copy.bytes, b.length);
      assert.equal(copy.sha256, sha256(b));
      assert.equal(copy.headers['content-length'], String(b.length));
    }

    /** Send `b` to `path`: the primary gets it whole; no copy reaches the mirror. */
    async function notMirrored(path: string, b: Buffer, framing: 'chunked' | 'sized'): Promise<void> {
      const res = await request(`${gw.base}${path}`, { method: 'POST', body: framing === 'chunked' ? chunked(b) : b });
      assert.equal(res.statusCode, 200, await res.body.text());
      const main = await waitFor(() => at(primary.seen, path), `the primary's ${path}`);
      assert.equal(main.sha256, sha256(b));
      await sleep(300);
      assert.equal(mirror.seen.find((s) => s.url === path), undefined, 'a copy reached the mirror');
    }

    it('a chunked body reaches the mirror byte for byte (it was sent without one)', async () => {
      await mirrored('/chunked/small', body(3000, 1), 'chunked');
      await mirrored('/chunked/300k', body(300 * 1024, 2), 'chunked');
    });

    it('a chunked body of exactly 1 MiB is mirrored; one byte more is not (as a sized one)', async () => {
      await mirrored('/chunked/1mib', body(MiB, 3), 'chunked');
      await notMirrored('/chunked/past', body(MiB + 1, 4), 'chunked');
    });

    it('sized: up to 1 MiB mirrored, past it not mirrored at all (was a copy without its body)', async () => {
      await mirrored('/sized/small', body(1000, 5), 'sized');
      await mirrored('/sized/1mib', body(MiB, 6), 'sized');
      await notMirrored('/sized/past', body(MiB + 1, 7), 'sized');
    });

    it('the primary gets a sized body as it arrives, not once the copy has read it whole', async () => {
      // 512 KiB declared, 128 KiB sent: the primary must be receiving before the client sends the rest.
      const b = body(512 * 1024, 8);
      const socket = connect(gw.port, '127.0.0.1');
      let answer = '';
      socket.on('data', (c: Buffer) => (answer += c.toString('latin1')));
      socket.write(`POST /held HTTP/1.1\r\nHost: a\r\nContent-Length: ${b.length}\r\nConnection: close\r\n\r\n`);
      socket.write(b.subarray(0, 128 * 1024));
      try {
        const started = await waitFor(() => primary.seen.find((s) => s.url === '/held' && s.bytes > 0), 'the primary receiving /held before the body ended', 3000);
        assert.ok(started.bytes <= 128 * 1024);
      } finally {
        socket.write(b.subarray(128 * 1024));
      }
      await waitFor(() => (answer.includes('\r\n\r\nok') ? true : undefined), 'the answer to /held');
      socket.destroy();
      const copy = await waitFor(() => at(mirror.seen, '/held'), "the mirror's /held");
      assert.equal(copy.sha256, sha256(b));
    });

    it("on a retrying route (the retry's own copy taken as the body streams): the copy has each byte once", async () => {
      await mirrored('/retry/small', body(20 * 1024, 9), 'chunked');
      await mirrored('/retry/200k', body(200 * 1024, 10), 'chunked');
    });

    it('after the a2a policy peeked at a chunked JSON body: mirrored whole', async () => {
      const text = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { parts: [{ text: 'x'.repeat(200 * 1024) }] } } }));
      await mirrored('/a2a/chunked', text, 'chunked', 'application/json');
    });

    it('chunked copies count against the 32 MiB in flight as they are copied: past it, given up and counted', async () => {
      // 32 copies of 1 MiB fill the policy's bytes in flight at a mirror that never answers; the next two are dropped.
      for (let i = 0; i < 34; i++) {
        const res = await request(`${gw.base}/silent/${i}`, { method: 'POST', body: chunked(body(MiB, 20 + i)) });
        assert.equal(res.statusCode, 200, await res.body.text());
      }
      await waitFor(() => (silent.seen.filter((s) => s.complete).length >= 32 ? true : undefined), 'the silent mirror to receive 32 copies');
      await sleep(300);
      assert.equal(silent.seen.length, 32);
      assert.ok(silent.seen.every((s) => s.bytes === MiB));
      const metrics = await (await request(`${gw.statsUrl}/metrics`)).body.text();
      assert.match(metrics, /^switchyard_request_mirror_dropped_total 2$/m);
    });

    it('a chunked upload sent after `Expect: 100-continue` (curl) is mirrored whole', async () => {
      const b = body(40 * 1024, 99);
      const socket = connect(gw.port, '127.0.0.1');
      let answer = '';
      let sent = false;
      socket.on('data', (c: Buffer) => {
        answer += c.toString('latin1');
        if (!sent && answer.startsWith('HTTP/1.1 100')) {
          sent = true;
          socket.write(`${b.length.toString(16)}\r\n`);
          socket.write(b);
          socket.write('\r\n0\r\n\r\n');
        }
      });
      socket.write('POST /expect HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n');
      await waitFor(() => (answer.includes('\r\n\r\nok') ? true : undefined), 'the answer to /expect');
      socket.destroy();
      const copy = await waitFor(() => at(mirror.seen, '/expect'), "the mirror's /expect");
      assert.equal(copy.sha256, sha256(b));
      assert.equal(copy.headers.expect, undefined);
    });

    it('a chunked body the client abandons is not mirrored', async () => {
      const socket = connect(gw.port, '127.0.0.1');
      socket.on('error', () => undefined);
      socket.write('POST /abandoned HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n');
      socket.write(`4000\r\n${'a'.repeat(0x4000)}\r\n`);
      await waitFor(() => primary.seen.find((s) => s.url === '/abandoned' && s.bytes > 0), 'the primary receiving /abandoned');
      socket.destroy();
      await sleep(300);
      assert.equal(mirror.seen.find((s) => s.url === '/abandoned'), undefined, 'a copy of a cut body reached the mirror');
    });
  });
}

describe('requestMirror bodies from an HTTP/2 client (ADR 0141)', () => {
  // node:http2's compatibility request reads the stream only once read itself: the copy's first read starts it.
  let pki: TestPki, primary: BodyRecorder, mirror: BodyRecorder, gw: RunningGateway, session: ClientHttp2Session;
  before(async () => {
    pki = makeTestPki({ serverName: 'localhost', serverAltNames: ['DNS:localhost', 'IP:127.0.0.1'], label: 'mirror-h2' });
    [primary, mirror] = await Promise.all([startBodyRecorder((res) => res.end('ok')), startBodyRecorder((res) => res.end('ok'))]);
    const requestMirror = { backend: { host: `127.0.0.1:${mirror.port}` } };
    const backends = [{ host: `127.0.0.1:${primary.port}` }];
    let port: number;
    ({ gw, ports: [port] } = await startGatewayOnFreePorts(1, ([p]) => ({
      binds: [
        httpsBind(p!, { cert: pki.serverCert, key: pki.serverKey }, [
          { name: 'all', policies: { requestMirror }, backends },
        ]),
      ],
    })));
    session = h2connect(`https://localhost:${port!}`, { ca: readFileSync(pki.ca, 'utf8') });
    session.on('error', () => undefined);
  });
  after(async () => {
    session?.destroy();
    await gw?.stop();
    await Promise.all([primary?.close(), mirror?.close()]);
    pki?.remove();
  });

  /** POST `b` on a new stream, with its length or without (DATA frames only); the status answered. */
  function post(path: string, b: Buffer, sized: boolean): Promise<number> {
    return new Promise((resolve, reject) => {
      const stream = session.request({ ':method': 'POST', ':path': path, ...(sized ? { 'content-length': String(b.length) } : {}) });
      let status = 0;
      stream.on('response', (h) => (status = Number(h[':status'])));
      stream.on('data', () => undefined);
      stream.on('end', () => resolve(status));
      stream.on('error', reject);
      stream.end(b);
    });
  }

  it('bodies with and without a declared length reach the mirror byte for byte; past 1 MiB not mirrored', async () => {
    const cases = [
      ['/h2/sized', body(5000, 40), true],
      ['/h2/unsized', body(5000, 41), false],
      ['/h2/unsized-300k', body(300 * 1024, 42), false],
      ['/h2/sized-300k', body(300 * 1024, 43), true],
    ] as const;
    for (const [path, b, sized] of cases) {
      assert.equal(await post(path, b, sized), 200);
      assert.equal((await waitFor(() => at(primary.seen, path), `the primary's ${path}`)).sha256, sha256(b));
      const copy = await waitFor(() => at(mirror.seen, path), `the mirror's ${path}`);
      assert.equal(copy.sha256, sha256(b), path);
    }
    assert.equal(await post('/h2/past', body(MiB + 1, 44), false), 200);
    await waitFor(() => at(primary.seen, '/h2/past'), "the primary's /h2/past");
    await sleep(300);
    assert.equal(mirror.seen.find((s) => s.url === '/h2/past'), undefined);
  });
});
