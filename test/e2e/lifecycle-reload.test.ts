import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createServer } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { stringify } from 'yaml';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';

async function waitFor(check: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await check()) return;
    await sleep(25);
  }
  throw new Error('condition not met in time');
}

async function body(url: string, headers?: Record<string, string>): Promise<{ status: number; text: string }> {
  const res = await request(url, { headers });
  return { status: res.statusCode, text: await res.body.text() };
}

describe('config reload', () => {
  let gw: RunningGateway;
  let port: number;
  let slow: TestUpstream;
  let releaseSlow: () => void = () => undefined;
  const base = (answer: string, extraRoutes: unknown[] = []) => ({
    config: {} as Record<string, unknown>,
    binds: [
      {
        port,
        listeners: [
          {
            routes: [
              ...extraRoutes,
              { name: 'slow', matches: [{ path: { pathPrefix: '/slow' } }], backends: [{ host: `127.0.0.1:${slow.port}` }] },
              { name: 'answer', policies: { directResponse: { status: 200, body: answer } } },
            ],
          },
        ],
      },
    ],
  });
  let adminCfg: Record<string, unknown>;

  before(async () => {
    port = await freePort();
    slow = await startUpstream((_req, res) => {
      // Hold the response until the test releases it, so a request is in flight across a reload.
      const held = new Promise<void>((resolve) => {
        releaseSlow = resolve;
      });
      void held.then(() => res.end('slow done'));
    });
    gw = await startGateway(base('one'), { watch: true });
    adminCfg = gw.gateway.snapshot!.config.config as Record<string, unknown>;
  });
  after(async () => {
    releaseSlow();
    await gw.stop();
    await slow.close();
  });

  const write = (cfg: ReturnType<typeof base>): void => {
    cfg.config = adminCfg;
    writeFileSync(gw.file, stringify(cfg));
  };

  it('a valid change on disk is picked up by the watcher and swapped in', async () => {
    assert.equal((await body(gw.url(port))).text, 'one');
    write(base('two'));
    await waitFor(async () => (await body(gw.url(port))).text === 'two');
    assert.equal(gw.gateway.snapshot!.generation, 2);
  });

  it('an invalid change is logged with its position and the last good config keeps serving', async () => {
    const before = gw.gateway.snapshot!.generation;
    writeFileSync(gw.file, `${stringify({ ...base('three'), config: adminCfg })}\nbogusKey: 1\n`);
    await waitFor(async () => gw.logs.some((l) => l.includes('config reload failed')));
    const text = gw.logs.join('\n');
    assert.match(text, /config\.yaml:\d+:1: unknown key `bogusKey`/);
    assert.equal((await body(gw.url(port))).text, 'two');
    assert.equal(gw.gateway.snapshot!.generation, before);
  });

  it('an in-flight request finishes on the old snapshot while new requests use the new one', async () => {
    write(base('four'));
    await waitFor(async () => (await body(gw.url(port))).text === 'four');
    const inflight = body(`${gw.url(port)}/slow`);
    await waitFor(async () => slow.received.length > 0);
    const old = gw.gateway.snapshot!;
    // The new config removes the slow route entirely.
    const next = base('five');
    next.binds[0]!.listeners[0]!.routes = next.binds[0]!.listeners[0]!.routes.filter((r) => (r as { name: string }).name !== 'slow');
    write(next);
    await waitFor(async () => (await body(gw.url(port))).text === 'five');
    assert.notEqual(gw.gateway.snapshot, old);
    assert.equal(old.inFlight, 1, 'the old snapshot still holds the in-flight request');
    assert.equal((await body(`${gw.url(port)}/slow`)).text, 'five', 'new requests no longer see the slow route');
    releaseSlow();
    const done = await inflight;
    assert.equal(done.status, 200);
    assert.equal(done.text, 'slow done');
    await waitFor(async () => old.inFlight === 0);
  });

  it('a refused config is compiled again when asked again (SIGHUP) once what it lacked is there', async () => {
    const users = join(dirname(gw.file), 'users-later');
    const auth = { name: 'auth', matches: [{ path: { pathPrefix: '/auth' } }], policies: { basicAuth: { htpasswd: { file: users } }, directResponse: { status: 200, body: 'in' } } };
    const failures = () => gw.logs.filter((l) => l.includes('config reload failed')).length;
    const before = failures();
    write(base('six', [auth]));
    await waitFor(async () => failures() > before);
    assert.match(gw.logs.at(-1)!, /cannot read the htpasswd file/);
    // The file the config names appears; the config file is unchanged, and `systemctl reload` sends SIGHUP.
    writeFileSync(users, 'alice:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\n');
    assert.equal(await gw.gateway.reload(), true);
    assert.equal((await body(gw.url(port))).text, 'six');
    // The live config asked again is not compiled again.
    assert.equal(await gw.gateway.reload(), false);
  });
});

describe('upstream pools survive a reload that keeps them', () => {
  it('the same keep-alive connection serves requests before and after an unrelated change', async () => {
    const port = await freePort();
    const upstream = await startUpstream((req, res) => res.end(String(req.socket.remotePort)));
    const cfg = (extra: string) => ({
      binds: [
        {
          port,
          listeners: [
            {
              routes: [
                { name: 'extra', matches: [{ path: { exact: '/extra' } }], policies: { directResponse: { status: 200, body: extra } } },
                { name: 'up', backends: [{ host: `127.0.0.1:${upstream.port}` }] },
              ],
            },
          ],
        },
      ],
    });
    const gw = await startGateway(cfg('a'));
    try {
      const first = (await body(gw.url(port))).text;
      const text = stringify({ ...cfg('b'), config: gw.gateway.snapshot!.config.config });
      assert.equal(await gw.gateway.reload(text), true);
      assert.equal((await body(`${gw.url(port)}/extra`)).text, 'b');
      const second = (await body(gw.url(port))).text;
      assert.equal(second, first, 'the upstream saw the same client port: the pool was reused');
    } finally {
      await gw.stop();
      await upstream.close();
    }
  });

  it('a removed upstream pool is closed once its requests are done', async () => {
    const port = await freePort();
    const upstreamServer = createServer((_req, res) => res.end('x'));
    await new Promise<void>((resolve) => upstreamServer.listen(0, '127.0.0.1', resolve));
    const upstreamPort = (upstreamServer.address() as { port: number }).port;
    const openSockets = (): Promise<number> => new Promise((resolve, reject) => upstreamServer.getConnections((e, n) => (e ? reject(e) : resolve(n))));
    const gw = await startGateway({ binds: [{ port, listeners: [{ routes: [{ backends: [{ host: `127.0.0.1:${upstreamPort}` }] }] }] }] });
    try {
      assert.equal((await body(gw.url(port))).text, 'x');
      assert.equal(await openSockets(), 1, 'the pool keeps one keep-alive connection');
      const text = stringify({
        config: gw.gateway.snapshot!.config.config,
        binds: [{ port, listeners: [{ routes: [{ policies: { directResponse: { status: 204 } } }] }] }],
      });
      assert.equal(await gw.gateway.reload(text), true);
      assert.equal((await body(gw.url(port))).status, 204);
      await waitFor(async () => (await openSockets()) === 0);
    } finally {
      await gw.stop();
      upstreamServer.closeAllConnections();
      await new Promise<void>((resolve) => upstreamServer.close(() => resolve()));
    }
  });
});

describe('a stop during a reload', () => {
  it('a reload still compiling when the stop begins is not applied: no new port opens, no "config reloaded"', async () => {
    const [a, b] = [await freePort(), await freePort()];
    const bind = (port: number): Record<string, unknown> => ({ port, address: '127.0.0.1', listeners: [{ routes: [{ policies: { directResponse: { status: 200, body: 'ok' } } }] }] });
    const gw = await startGateway({ binds: [bind(a)] });
    const text = stringify({ config: { adminAddr: '127.0.0.1:0', statsAddr: '127.0.0.1:0', readinessAddr: '127.0.0.1:0' }, binds: [bind(a), bind(b)] });
    // SIGHUP then SIGTERM: the reload has read nothing yet when the stop starts.
    const reloaded = gw.gateway.reload(text);
    const stopped = gw.stop();
    assert.equal(await reloaded, false);
    await stopped;
    assert.ok(!gw.logs.some((l) => l.includes(`bind listening port=${b}`)), gw.logs.join('\n'));
    assert.ok(!gw.logs.some((l) => l.includes('config reloaded')), gw.logs.join('\n'));
    assert.equal(gw.gateway.generation, 1);
  });
});
