import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { stringify } from 'yaml';
import { childEnv, startCli } from '../helpers/cli-process.ts';
import { BIN, ROOT } from '../helpers/cli.ts';
import { startRoutesGateway } from '../helpers/gateway.ts';
import type { RoutesGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

describe('admin, stats and readiness endpoints', () => {
  let gw: RoutesGateway;
  let port: number;
  before(async () => {
    gw = await startRoutesGateway([
      {
        name: 'secretive',
        policies: {
          requestHeaderModifier: { set: { authorization: 'Bearer s3cr3t-value' } },
          directResponse: { status: 201, body: 'ok' },
        },
      },
    ]);
    port = gw.port;
  });
  after(() => gw.stop());

  it('readiness answers 200 ready once every bind listens', async () => {
    const res = await request(`${gw.readinessUrl}/healthz/ready`);
    assert.equal(res.statusCode, 200);
    assert.equal(await res.body.text(), 'ready\n');
  });

  it('liveness answers 200 live on the readiness address (ADR 0197)', async () => {
    const res = await request(`${gw.readinessUrl}/healthz/live`);
    assert.equal(res.statusCode, 200);
    assert.equal(await res.body.text(), 'live\n');
  });

  it('readiness rejects other methods and paths', async () => {
    assert.equal((await request(`${gw.readinessUrl}/healthz/ready`, { method: 'POST' })).statusCode, 405);
    assert.equal((await request(`${gw.readinessUrl}/healthz/live`, { method: 'POST' })).statusCode, 405);
    assert.equal((await request(`${gw.readinessUrl}/nope`)).statusCode, 404);
  });

  it('config_dump shows the live config with secrets redacted', async () => {
    const res = await request(`${gw.adminUrl}/config_dump`);
    assert.equal(res.statusCode, 200);
    const text = await res.body.text();
    assert.doesNotMatch(text, /s3cr3t/);
    const dump = JSON.parse(text) as { generation: number; config: { binds: { listeners: { routes: { name: string; policies: Record<string, { set?: Record<string, string> }> }[] }[] }[] } };
    assert.equal(dump.generation, 1);
    const route = dump.config.binds[0]!.listeners[0]!.routes[0]!;
    assert.equal(route.name, 'secretive');
    assert.equal(route.policies.requestHeaderModifier!.set!.authorization, '<redacted>');
  });

  it('metrics count requests and durations by route and status', async () => {
    for (let i = 0; i < 3; i++) await (await request(gw.url(port))).body.text();
    const res = await request(`${gw.statsUrl}/metrics`);
    assert.equal(res.statusCode, 200);
    const text = await res.body.text();
    assert.match(text, new RegExp(`switchyard_requests_total\\{bind="${port}",listener="listener0",route="secretive",status="201"\\} 3`));
    assert.match(text, new RegExp(`switchyard_request_duration_seconds_count\\{bind="${port}",listener="listener0",route="secretive",status="201"\\} 3`));
    assert.match(text, /switchyard_request_duration_seconds_bucket\{.*le="\+Inf"\} 3/);
    assert.match(text, /switchyard_config_generation 1/);
  });
});

/** Resolves once nothing listens on `port` any more (a refused connect), polling; rejects after `ms`. */
async function refusedOn(port: number, ms = 30_000): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    const refused = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(false);
      });
      socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED'));
    });
    if (refused) return;
    if (Date.now() > until) throw new Error(`port ${port} still accepts connections after ${ms} ms`);
    await sleep(20);
  }
}

describe('graceful shutdown (SIGTERM)', () => {
  it('stops accepting, lets the in-flight request finish, and exits 0', async () => {
    let release: () => void = () => undefined;
    const upstream = await startUpstream((_req, res) => {
      release = () => res.end('finished');
    });
    const [port, readiness] = [await freePort(), await freePort()];
    const dir = testTempDir('switchyard-shutdown-');
    const file = join(dir, 'config.yaml');
    writeFileSync(
      file,
      stringify({
        config: { adminAddr: 'off', statsAddr: 'off', readinessAddr: `127.0.0.1:${readiness}`, drainTimeout: '10s' },
        binds: [{ port, listeners: [{ routes: [{ backends: [{ host: `127.0.0.1:${upstream.port}` }] }] }] }],
      }),
    );
    // Ready when it says so (a start under load can take long; a fixed deadline made this test flaky).
    const cli = await startCli(process.execPath, [BIN, '-f', file], { cwd: ROOT, env: childEnv(), readyMs: 90_000 });
    try {
      const inflight = request(`http://127.0.0.1:${port}/work`).then(async (r) => ({ status: r.statusCode, text: await r.body.text() }));
      while (upstream.received.length === 0) await sleep(10);
      const code = cli.stop(); // SIGTERM
      // New connections are refused once the listener is closed (polled: how soon depends on the machine's load).
      await refusedOn(port);
      assert.equal(upstream.received.length, 1, 'nothing new reached the upstream');
      release();
      assert.deepEqual(await inflight, { status: 200, text: 'finished' });
      assert.equal(await code, 0, cli.output());
      assert.match(cli.output(), /switchyard stopped/);
    } finally {
      await cli.stop();
      await upstream.close();
    }
  });

  it('bounds the drain by drainTimeout and still exits 0', async () => {
    const upstream = await startUpstream(() => undefined); // never answers
    const [port, readiness] = [await freePort(), await freePort()];
    const dir = testTempDir('switchyard-drain-');
    const file = join(dir, 'config.yaml');
    writeFileSync(
      file,
      stringify({
        config: { adminAddr: 'off', statsAddr: 'off', readinessAddr: `127.0.0.1:${readiness}`, drainTimeout: '300ms' },
        binds: [{ port, listeners: [{ routes: [{ backends: [{ host: `127.0.0.1:${upstream.port}` }] }] }] }],
      }),
    );
    const cli = await startCli(process.execPath, [BIN, '-f', file], { cwd: ROOT, env: childEnv(), readyMs: 90_000 });
    try {
      const inflight = request(`http://127.0.0.1:${port}/hang`).then(
        () => 'answered',
        () => 'cut',
      );
      while (upstream.received.length === 0) await sleep(10);
      const started = Date.now();
      assert.equal(await cli.stop(), 0, cli.output()); // SIGTERM
      const took = Date.now() - started;
      assert.ok(took >= 250 && took < 5000, `exit after ${took}ms`);
      assert.equal(await inflight, 'cut');
      assert.match(cli.output(), /drain deadline passed/);
      // Cut by the gateway, not left by the client: 503, not 499.
      const line = cli.output().split('\n').find((l) => l.includes('http.path=/hang '));
      assert.match(line ?? '', / http\.status=503 /, cli.output());
    } finally {
      await cli.stop();
      await upstream.close();
    }
  });
});
