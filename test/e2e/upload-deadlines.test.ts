// The response deadline (`config.defaultTimeouts.backendRequestTimeout`, `timeout.backendRequestTimeout`) starts once
// the request body streamed from the client has been sent upstream whole, as Envoy's route timeout starts once the
// whole request was received (ADR 0117): a slow upload is not cut by it. While the upload runs, the route's stream idle
// deadline bounds a client that stops sending (408). Checked on the lean HTTP/1.1 client (direct forward), undici's
// `request()` (a `timeout` policy) and undici over TLS.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Server } from 'node:net';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { RunningGateway } from '../helpers/gateway.ts';
import { makeTestPki } from '../helpers/pki.ts';
import type { TestPki } from '../helpers/pki.ts';
import { sleep, startGatewayOnFreePorts, within } from './proxy-support.ts';

/** Bodies as the upstream received them, by path. */
const received = new Map<string, string>();

function answer(req: IncomingMessage, res: ServerResponse): void {
  let body = '';
  req.setEncoding('latin1');
  req.on('data', (c: string) => (body += c));
  req.on('end', () => {
    received.set(req.url!, body);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ bytes: body.length }));
  });
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/**
 * A chunked POST whose body is `chunks` one-byte chunks, one every `everyMs`; with `stallAfter`, only that many are
 * sent and the client then waits. Resolves with the answer's status line and body (or `closed` when none came).
 */
function slowUpload(port: number, path: string, chunks: number, everyMs: number, stallAfter = Infinity): Promise<{ status: number; text: string; ms: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let got = '';
    let timer: NodeJS.Timeout | undefined;
    socket.on('data', (c: Buffer) => (got += c.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      const status = /^HTTP\/1\.1 (\d{3})/.exec(got)?.[1];
      resolve({ status: status ? Number(status) : 0, text: got, ms: performance.now() - started });
    });
    socket.write(`POST ${path} HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`);
    let sent = 0;
    const next = (): void => {
      if (socket.destroyed) return;
      if (sent === chunks) return void socket.write('0\r\n\r\n');
      if (sent >= stallAfter) return;
      socket.write(`1\r\n${String.fromCharCode(97 + (sent % 26))}\r\n`);
      sent++;
      timer = setTimeout(next, everyMs);
    };
    next();
    setTimeout(() => reject(new Error(`no answer to ${path}`)), 20_000).unref();
  });
}

describe('response deadlines start after the upload', () => {
  let gw: RunningGateway;
  let port: number;
  let pki: TestPki;
  const servers: Server[] = [];

  before(async () => {
    pki = makeTestPki({ serverName: 'upstream.test', serverAltNames: ['DNS:upstream.test'], label: 'upload' });
    const plain = createServer(answer);
    const tls = createHttpsServer({ cert: readFileSync(pki.serverCert), key: readFileSync(pki.serverKey) }, answer);
    servers.push(plain, tls);
    const plainPort = await listen(plain);
    const tlsPort = await listen(tls);
    const host = `127.0.0.1:${plainPort}`;
    const route = (name: string, policies: Record<string, unknown> | undefined, backend: Record<string, unknown> = { host }) => ({
      name,
      matches: [{ path: { pathPrefix: `/${name}` } }],
      ...(policies ? { policies } : {}),
      backends: [backend],
    });
    ({ gw, ports: [port] } = await startGatewayOnFreePorts(1, ([p]) => ({
      // A default response deadline of 1 s: every upload below lasts longer.
      config: { defaultTimeouts: { backendRequestTimeout: '1s' } },
      binds: [
        {
          port: p,
          listeners: [
            {
              routes: [
                route('direct', undefined),
                route('attempt', { timeout: { backendRequestTimeout: '1s' } }),
                route('tls', undefined, { host: `127.0.0.1:${tlsPort}`, policies: { backendTLS: { root: pki.ca, hostname: 'upstream.test' } } }),
                route('stall-direct', { timeout: { streamIdleTimeout: '1s' } }),
                route('stall-attempt', { timeout: { backendRequestTimeout: '10s', streamIdleTimeout: '1s' } }),
              ],
            },
          ],
        },
      ],
    })));
  });
  after(async () => {
    await gw?.stop();
    for (const s of servers) {
      (s as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
      await new Promise<void>((resolve) => s.close(() => resolve()));
    }
    pki?.remove();
  });

  for (const name of ['direct', 'attempt', 'tls']) {
    it(`a chunked upload of 2.5 s is answered under a 1 s response deadline (${name})`, async () => {
      const path = `/${name}/upload`;
      const res = await within(slowUpload(port, path, 5, 500), 15_000, path);
      assert.equal(res.status, 200, res.text);
      assert.match(res.text, /\{"bytes":5\}/);
      assert.equal(received.get(path), 'abcde', 'the upstream got the whole body');
      assert.ok(res.ms >= 2000, `the upload took ${res.ms} ms`);
    });
  }

  for (const name of ['stall-direct', 'stall-attempt']) {
    it(`an upload that stops is cut after the route's stream idle deadline with 408 (${name})`, async () => {
      const path = `/${name}/upload`;
      const res = await within(slowUpload(port, path, 5, 200, 2), 15_000, path);
      assert.equal(res.status, 408, res.text);
      assert.match(res.text, /request_timeout/);
      assert.doesNotMatch(res.text, /127\.0\.0\.1/);
      assert.ok(res.ms < 6000, `cut after ${res.ms} ms`);
      assert.equal(received.get(path), undefined, 'the upstream never got a whole body');
    });
  }

  it('the upstream still has its response deadline once the body is sent', async () => {
    // Nothing here answers late; the default-deadlines suite covers a silent upstream. This checks the gateway still
    // serves after the cut uploads.
    await sleep(10);
    const res = await within(slowUpload(port, '/direct/after', 1, 10), 5000, 'after');
    assert.equal(res.status, 200, res.text);
  });
});
