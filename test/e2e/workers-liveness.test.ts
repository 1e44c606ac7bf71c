// A worker whose event loop is stuck (an endless loop in a plugin) is found by the supervisor's liveness pings,
// terminated and restarted (ADR 0033): the request it was serving gets a closed connection instead of hanging for
// ever, and the gateway serves from both workers again; one stuck holding a shared cell's lock leaves it free (ADR
// 0133). The supervisor runs in this process with short pings.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { stringify } from 'yaml';
import { LogSink } from 'switchyard';
import { Supervisor } from '../../kernel/boot/supervisor.ts';
import { BIN } from '../helpers/cli.ts';
import { freePort } from '../helpers/ports.ts';
import { WORKER_PROBE as PROBE, getFresh as get } from '../helpers/workers.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

/** Two workers with the probe plugin, pinged every 200 ms (5 misses: terminated), their log lines into `logs`. */
async function startWatched(logs: string[]): Promise<{ supervisor: Supervisor; port: number }> {
  const port = await freePort();
  const file = join(testTempDir('switchyard-liveness-'), 'config.yaml');
  writeFileSync(
    file,
    stringify({
      config: { workers: 2, plugins: [PROBE], adminAddr: 'off', statsAddr: 'off', readinessAddr: 'off', logging: { accessLog: false } },
      binds: [{ port, listeners: [{ routes: [{ policies: { workerProbe: { value: 'x' }, directResponse: { status: 200, body: 'ok' } } }] }] }],
    }),
  );
  const sink = new LogSink((chunk) => logs.push(...chunk.split('\n').filter(Boolean)));
  const supervisor = new Supervisor({ entry: BIN, config: { file }, count: 2, sink, watch: false, liveness: { intervalMs: 200, misses: 5 }, restartMs: { initial: 100, max: 1000 } });
  await supervisor.start();
  return { supervisor, port };
}

/**
 * Hang the worker that serves a request (`x-hang: hang`): its connection must close once the liveness watch ends it;
 * then wait for its restart. Resolves with the time the request took.
 */
async function hangOne(port: number, hang: string, logs: string[]): Promise<number> {
  const started = Date.now();
  const outcome = await get(`http://127.0.0.1:${port}/`, { 'x-hang': hang }).then(
    (a) => `status ${a.status}`,
    (err: NodeJS.ErrnoException) => `error ${err.code ?? err.message}`,
  );
  const took = Date.now() - started;
  assert.match(outcome, /^error (ECONNRESET|socket hang up)$/);
  for (let i = 0; i < 200 && !logs.some((l) => /worker restarted/.test(l)); i++) await new Promise((r) => setTimeout(r, 100));
  assert.ok(logs.some((l) => /worker restarted/.test(l)), logs.join('\n'));
  return took;
}

describe('a stuck worker', () => {
  it('is terminated and restarted; its in-flight request is closed, not left hanging', async () => {
    const logs: string[] = [];
    const { supervisor, port } = await startWatched(logs);
    try {
      const endedMs = await hangOne(port, '1', logs);
      assert.ok(endedMs < 15_000, `ended after ${endedMs} ms`);
      assert.ok(logs.some((l) => /worker does not answer; terminating it/.test(l)), logs.join('\n'));
      assert.deepEqual(await supervisor.readiness(), { ready: true, pending: '' });
      const answers = [];
      for (let i = 0; i < 30; i++) answers.push(await get(`http://127.0.0.1:${port}/`));
      assert.ok(answers.every((a) => a.status === 200));
      assert.equal(new Set(answers.map((a) => a.worker)).size, 2);
    } finally {
      await supervisor.stop();
    }
  });

  it('holding the lock of a shared cell does not stop the other workers: the lock is freed when it is terminated', async () => {
    const logs: string[] = [];
    const { supervisor, port } = await startWatched(logs);
    try {
      // The worker serving this takes the cell's lock and never lets go; the liveness watch terminates it.
      await hangOne(port, 'locked', logs);
      // Every worker takes the same lock again: none spins on the dead worker's hold (and gets terminated for it).
      const answers = [];
      for (let i = 0; i < 30; i++) answers.push(await get(`http://127.0.0.1:${port}/`, { 'x-count': '1' }));
      assert.deepEqual(answers.map((a) => a.status), new Array(30).fill(200));
      assert.equal(new Set(answers.map((a) => a.worker)).size, 2);
      assert.deepEqual(answers.map((a) => Number(a.headers['x-count'])), Array.from({ length: 30 }, (_, i) => i + 1), 'one sum for both workers');
      assert.equal(logs.filter((l) => /terminating it/.test(l)).length, 1, logs.join('\n'));
    } finally {
      await supervisor.stop();
    }
  });
});
