import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { stringify } from 'yaml';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';

const BIN = new URL('../../bin/switchyard.js', import.meta.url).pathname;

describe('admin, stats and readiness endpoints', () => {
  let gw: RunningGateway;
  let port: number;
  before(async () => {
    port = await freePort();
    gw = await startGateway({
      binds: [
        {
          port,
          listeners: [
            {
              routes: [
                {
                  name: 'secretive',
                  policies: {
                    requestHeaderModifier: { set: { authorization: 'Bearer s3cr3t-value' } },
                    directResponse: { status: 201, body: 'ok' },
                  },
                },
              ],
            },
          ],
        },
      ],
    });
  });
  after(() => gw.stop());

  it('readiness answers 200 ready once every bind listens', async () => {
    const res = await request(`${gw.readinessUrl}/healthz/ready`);
    assert.equal(res.statusCode, 200);
    assert.equal(await res.body.text(), 'ready\n');
  });

  it('readiness rejects other methods and paths', async () => {
    assert.equal((await request(`${gw.readinessUrl}/healthz/ready`, { method: 'POST' })).statusCode, 405);
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

interface Proc {
  code: Promise<number | null>;
  output: () => string;
  pid: number;
}

function runCli(args: string[]): Proc {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  return { code: new Promise((resolve) => child.on('exit', (code) => resolve(code))), output: () => out, pid: child.pid! };
}

async function waitReady(url: string, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    try {
      const res = await request(url);
      await res.body.text();
      if (res.statusCode === 200) return;
    } catch {
      // not listening yet
    }
    await sleep(25);
  }
  throw new Error(`not ready: ${url}`);
}

describe('graceful shutdown (SIGTERM)', () => {
  it('stops accepting, lets the in-flight request finish, and exits 0', async () => {
    let release: () => void = () => undefined;
    const upstream = await startUpstream((_req, res) => {
      release = () => res.end('finished');
    });
    const [port, readiness] = [await freePort(), await freePort()];
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-shutdown-'));
    const file = join(dir, 'config.yaml');
    writeFileSync(
      file,
      stringify({
        config: { adminAddr: 'off', statsAddr: 'off', readinessAddr: `127.0.0.1:${readiness}`, drainTimeout: '10s' },
        binds: [{ port, listeners: [{ routes: [{ backends: [{ host: `127.0.0.1:${upstream.port}` }] }] }] }],
      }),
    );
    const proc = runCli(['-f', file]);
    try {
      await waitReady(`http://127.0.0.1:${readiness}/healthz/ready`);
      const inflight = request(`http://127.0.0.1:${port}/work`).then(async (r) => ({ status: r.statusCode, text: await r.body.text() }));
      while (upstream.received.length === 0) await sleep(10);
      process.kill(proc.pid, 'SIGTERM');
      // New connections are refused once the listener is closed.
      await sleep(150);
      await assert.rejects(request(`http://127.0.0.1:${port}/new`, { reset: true }), /ECONNREFUSED|other side closed|SocketError/);
      release();
      assert.deepEqual(await inflight, { status: 200, text: 'finished' });
      assert.equal(await proc.code, 0, proc.output());
      assert.match(proc.output(), /switchyard stopped/);
    } finally {
      try {
        process.kill(proc.pid, 'SIGKILL');
      } catch {
        // already exited
      }
      await upstream.close();
    }
  });

  it('bounds the drain by drainTimeout and still exits 0', async () => {
    const upstream = await startUpstream(() => undefined); // never answers
    const [port, readiness] = [await freePort(), await freePort()];
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-drain-'));
    const file = join(dir, 'config.yaml');
    writeFileSync(
      file,
      stringify({
        config: { adminAddr: 'off', statsAddr: 'off', readinessAddr: `127.0.0.1:${readiness}`, drainTimeout: '300ms' },
        binds: [{ port, listeners: [{ routes: [{ backends: [{ host: `127.0.0.1:${upstream.port}` }] }] }] }],
      }),
    );
    const proc = runCli(['-f', file]);
    try {
      await waitReady(`http://127.0.0.1:${readiness}/healthz/ready`);
      const inflight = request(`http://127.0.0.1:${port}/hang`).then(
        () => 'answered',
        () => 'cut',
      );
      while (upstream.received.length === 0) await sleep(10);
      const started = Date.now();
      process.kill(proc.pid, 'SIGTERM');
      assert.equal(await proc.code, 0, proc.output());
      const took = Date.now() - started;
      assert.ok(took >= 250 && took < 5000, `exit after ${took}ms`);
      assert.equal(await inflight, 'cut');
      assert.match(proc.output(), /drain deadline passed/);
    } finally {
      try {
        process.kill(proc.pid, 'SIGKILL');
      } catch {
        // already exited
      }
      await upstream.close();
    }
  });
});
