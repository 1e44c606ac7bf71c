// With `config.workers`, `/healthz/ready` is answered by the supervisor from what the workers reported (ADR 0194):
// a worker busy in a CPU-bound plugin must not make the probe outlast the kubelet's default 1 s timeout, while a
// worker that leaves a liveness ping unanswered is reported not ready until it answers again.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { stringify } from 'yaml';
import { LogSink } from 'switchyard';
import { Supervisor } from '../../kernel/boot/supervisor.ts';
import { BIN } from '../helpers/cli.ts';
import { freePort } from '../helpers/ports.ts';
import { WORKER_PROBE as PROBE, getFresh as get } from '../helpers/workers.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function startTwo(liveness: { intervalMs: number; misses: number }): Promise<{ supervisor: Supervisor; port: number; probe: string }> {
  const port = await freePort();
  const readiness = await freePort();
  const file = join(testTempDir('switchyard-workers-ready-'), 'config.yaml');
  writeFileSync(
    file,
    stringify({
      config: { workers: 2, plugins: [PROBE], adminAddr: 'off', statsAddr: 'off', readinessAddr: `127.0.0.1:${readiness}`, logging: { accessLog: false } },
      binds: [{ port, listeners: [{ routes: [{ policies: { workerProbe: { value: 'x' }, directResponse: { status: 200, body: 'ok' } } }] }] }],
    }),
  );
  const supervisor = new Supervisor({ entry: BIN, config: { file }, count: 2, sink: new LogSink(() => undefined), watch: false, liveness });
  await supervisor.start();
  return { supervisor, port, probe: `http://127.0.0.1:${readiness}/healthz/ready` };
}

/** One probe as the kubelet makes it by default: failed when it takes more than 1 s. */
async function probe(url: string): Promise<{ status: number; body: string; ms: number }> {
  const started = Date.now();
  const res = await fetch(url, { signal: AbortSignal.timeout(1_000) });
  return { status: res.status, body: await res.text(), ms: Date.now() - started };
}

describe('config.workers: 2, /healthz/ready', () => {
  it('answers at once while a worker is busy', async () => {
    const { supervisor, port, probe: url } = await startTwo({ intervalMs: 5_000, misses: 6 });
    try {
      assert.equal((await probe(url)).status, 200);
      // One worker keeps its event loop busy for 2.5 s (less than a liveness interval).
      const busy = get(`http://127.0.0.1:${port}/`, { 'x-busy': '2500' });
      await sleep(200);
      const during = await probe(url);
      assert.equal(during.status, 200, during.body);
      assert.ok(during.ms < 900, `took ${during.ms} ms`);
      assert.equal((await busy).status, 200);
    } finally {
      await supervisor.stop();
    }
  });

  it('is not ready while a worker leaves liveness pings unanswered, and ready again once it answers', async () => {
    const { supervisor, port, probe: url } = await startTwo({ intervalMs: 200, misses: 100 });
    try {
      const busy = get(`http://127.0.0.1:${port}/`, { 'x-busy': '2000' });
      let during = await probe(url);
      for (let i = 0; i < 30 && during.status === 200; i++) {
        await sleep(50);
        during = await probe(url);
      }
      assert.equal(during.status, 503);
      assert.match(during.body, /^not ready, pending: worker \d: not answering\n$/);
      assert.ok(during.ms < 900, `took ${during.ms} ms`);
      assert.equal((await busy).status, 200);
      let after = await probe(url);
      for (let i = 0; i < 40 && after.status !== 200; i++) {
        await sleep(50);
        after = await probe(url);
      }
      assert.equal(after.status, 200, after.body);
    } finally {
      await supervisor.stop();
    }
  });

  it('answers 503 `shutting down` at once once a stop begins, while a busy worker still drains', async () => {
    const { supervisor, port, probe: url } = await startTwo({ intervalMs: 5_000, misses: 6 });
    const busy = get(`http://127.0.0.1:${port}/`, { 'x-busy': '1500' });
    await sleep(200);
    const stopped = supervisor.stop();
    try {
      const during = await probe(url);
      assert.equal(during.status, 503);
      assert.equal(during.body, 'not ready, pending: shutting down\n');
      assert.ok(during.ms < 900, `took ${during.ms} ms`);
      assert.equal((await busy).status, 200, 'the busy request drained');
    } finally {
      await stopped;
    }
  });
});
