// Restarting a worker thread (ADR 0033) when the restart itself goes wrong: a worker whose restart fails (its
// config cannot load any more: a file it names was removed) is tried again with a growing delay, whatever the time
// its predecessor ran, until it starts; a refused reload is compiled again when asked again (SIGHUP); and a worker
// that restarts while a reload is being applied ends on the reloaded config, like the others. The supervisor runs
// in this process with short delays.
import assert from 'node:assert/strict';
import { renameSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { Worker } from 'node:worker_threads';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import { LogSink } from 'switchyard';
import { Supervisor } from '../../kernel/boot/supervisor.ts';
import { BIN } from '../helpers/cli.ts';
import { freePort } from '../helpers/ports.ts';
import { getFresh as get, twoWorkersYaml } from '../helpers/workers.ts';
import { testTempDir } from '../helpers/temp-dir.ts';
import { startUpstream } from '../helpers/upstream.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('config.workers: 2, restarts and reloads that go wrong', () => {
  const logs: string[] = [];
  let supervisor: Supervisor;
  let port: number;
  let file: string;
  let users: string;
  let config: (probe: Record<string, unknown>) => string;

  async function until(what: string, ok: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (!(await ok())) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}:\n${logs.join('\n')}`);
      await sleep(50);
    }
  }

  /** The worker that serves it throws 200 ms later, outside any request. */
  const crashOne = () => get(`http://127.0.0.1:${port}/`, { 'x-crash': '1' }).catch(() => undefined);

  before(async () => {
    port = await freePort();
    const dir = testTempDir('switchyard-workers-restart-');
    file = join(dir, 'config.yaml');
    users = join(dir, 'users');
    writeFileSync(users, 'alice:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\n');
    config = (probe) =>
      twoWorkersYaml([
        {
          port,
          listeners: [
            {
              routes: [
                { name: 'auth', matches: [{ path: { pathPrefix: '/auth' } }], policies: { basicAuth: { htpasswd: { file: users } }, directResponse: { status: 200, body: 'in' } } },
                { name: 'plain', policies: { workerProbe: probe, directResponse: { status: 200, body: 'ok' } } },
              ],
            },
          ],
        },
      ]);
    writeFileSync(file, config({ value: 'one' }));
    const sink = new LogSink((chunk) => logs.push(...chunk.split('\n').filter(Boolean)));
    supervisor = new Supervisor({
      entry: BIN,
      config: { file },
      count: 2,
      sink,
      watch: false,
      restartMs: { initial: 100, max: 800, stableMs: 300 },
      liveness: { intervalMs: 200, misses: 50 },
    });
    await supervisor.start();
  });

  after(async () => {
    await supervisor?.stop();
  });

  it('tries a worker whose restart fails again, with a growing delay, until it starts', async () => {
    // The worker ran longer than `stableMs`: its first restart comes after the first delay.
    await sleep(500);
    renameSync(users, `${users}.gone`);
    await crashOne();
    const restarts = () => logs.filter((l) => /worker exited; restarting it/.test(l));
    // The crash and three failed restarts.
    await until('three failed restarts', () => restarts().length >= 4);
    const delays = restarts().map((l) => Number(/inMs=(\d+)/.exec(l)![1]));
    assert.deepEqual(delays.slice(0, 4), [100, 100, 200, 400], logs.join('\n'));
    renameSync(`${users}.gone`, users);
    await until('the worker restarted', () => logs.some((l) => /worker restarted/.test(l)), 15_000);
    await until('readiness', async () => (await supervisor.readiness()).ready);
    const answers = await Promise.all(Array.from({ length: 30 }, () => get(`http://127.0.0.1:${port}/auth`, { authorization: `Basic ${Buffer.from('alice:password').toString('base64')}` })));
    assert.ok(answers.every((a) => a.status === 200));
  });

  it('compiles a refused config again when asked again (SIGHUP) once the file it named is there', async () => {
    const later = `${users}-later`;
    writeFileSync(file, config({ value: 'three' }).replace(users, later));
    assert.equal(await supervisor.reload(), false);
    await until('the refusal logged', () => logs.some((l) => /config reload failed.*cannot read the htpasswd file/.test(l)));
    writeFileSync(later, 'alice:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\n');
    assert.equal(await supervisor.reload(), true);
    const answers = await Promise.all(Array.from({ length: 20 }, () => get(`http://127.0.0.1:${port}/`)));
    assert.ok(answers.every((a) => a.headers['x-probe'] === 'three'));
    assert.equal(await supervisor.reload(), false, 'the live config is not compiled again');
  });

  it('brings a worker that restarted while a reload was applied to the reloaded config', async () => {
    logs.length = 0;
    await crashOne();
    await until('the crash', () => logs.some((l) => /worker exited; restarting it/.test(l)));
    // The reload's compile takes 4 s: the crashed worker restarts meanwhile, on the config it had.
    writeFileSync(file, config({ value: 'two', compileDelayMs: 4_000 }));
    assert.equal(await supervisor.reload(), true);
    assert.ok(logs.some((l) => /worker restarted/.test(l)), 'the worker restarted during the reload');
    await until('every worker on the new config', async () => {
      const answers = await Promise.all(Array.from({ length: 20 }, () => get(`http://127.0.0.1:${port}/`).catch(() => undefined)));
      return answers.every((a) => a?.headers['x-probe'] === 'two');
    }, 10_000);
  });
});

describe('config.workers: 2, a start that fails after the workers started', () => {
  it('stops every worker and restarts none (its readiness port is taken)', async () => {
    const port = await freePort();
    const held = createServer();
    await new Promise<void>((r) => held.listen(0, '127.0.0.1', r));
    const readinessAddr = `127.0.0.1:${(held.address() as { port: number }).port}`;
    const file = join(testTempDir('switchyard-workers-failed-start-'), 'config.yaml');
    writeFileSync(
      file,
      stringify({
        config: { workers: 2, adminAddr: 'off', statsAddr: 'off', readinessAddr, logging: { accessLog: false } },
        binds: [{ port, listeners: [{ routes: [{ policies: { directResponse: { status: 200, body: 'ok' } } }] }] }],
      }),
    );
    const logs: string[] = [];
    const supervisor = new Supervisor({ entry: BIN, config: { file }, count: 2, sink: new LogSink((chunk) => logs.push(chunk)), watch: false, restartMs: { initial: 50, max: 100 } });
    try {
      await assert.rejects(supervisor.start(), /EADDRINUSE/);
      await sleep(1_000);
      assert.deepEqual(logs.filter((l) => /restart/.test(l)), []);
      await assert.rejects(get(`http://127.0.0.1:${port}/`), 'no worker serves the bind');
    } finally {
      await supervisor.stop();
      held.close();
    }
  });
});

describe('config.workers: 2, a restart that hangs', () => {
  it('is terminated after `startMs` and tried again, not left starting for ever', async () => {
    const port = await freePort();
    const file = join(testTempDir('switchyard-workers-hung-start-'), 'config.yaml');
    // Every compile takes 1.5 s: the first start waits for it, a restart has 0.5 s.
    writeFileSync(
      file,
      twoWorkersYaml([{ port, listeners: [{ routes: [{ policies: { workerProbe: { value: 'x', compileDelayMs: 1_500 }, directResponse: { status: 200, body: 'ok' } } }] }] }]),
    );
    const logs: string[] = [];
    const supervisor = new Supervisor({
      entry: BIN,
      config: { file },
      count: 2,
      sink: new LogSink((chunk) => logs.push(...chunk.split('\n').filter(Boolean))),
      watch: false,
      restartMs: { initial: 100, max: 200, startMs: 500 },
    });
    await supervisor.start();
    try {
      await get(`http://127.0.0.1:${port}/`, { 'x-crash': '1' });
      const end = Date.now() + 15_000;
      while (logs.filter((l) => /worker did not start in time; terminating it/.test(l)).length < 2 && Date.now() < end) await sleep(50);
      assert.ok(logs.filter((l) => /worker did not start in time; terminating it/.test(l)).length >= 2, logs.join('\n'));
      assert.ok(logs.filter((l) => /worker exited; restarting it/.test(l)).length >= 3, 'tried again after each');
      assert.equal((await get(`http://127.0.0.1:${port}/`)).status, 200, 'the other worker serves meanwhile');
    } finally {
      await supervisor.stop();
    }
  });
});

describe('config.workers: 2, drainTimeout changed by a reload', () => {
  it('bounds the drain on SIGTERM by the reloaded drainTimeout in the supervisor too', async () => {
    const upstream = await startUpstream((_req, res) => void setTimeout(() => res.end('slow done'), 6_500));
    const port = await freePort();
    const file = join(testTempDir('switchyard-workers-drain-'), 'config.yaml');
    const config = (drainTimeout: string) =>
      stringify({
        config: { workers: 2, adminAddr: 'off', statsAddr: 'off', readinessAddr: 'off', logging: { accessLog: false }, drainTimeout },
        binds: [{ port, listeners: [{ routes: [{ backends: [{ host: `127.0.0.1:${upstream.port}` }] }] }] }],
      });
    writeFileSync(file, config('300ms'));
    const logs: string[] = [];
    const supervisor = new Supervisor({ entry: BIN, config: { file }, count: 2, sink: new LogSink((chunk) => logs.push(chunk)), watch: false });
    try {
      await supervisor.start();
      writeFileSync(file, config('20s'));
      assert.equal(await supervisor.reload(), true);
      assert.ok(!logs.some((l) => /take effect after a restart/.test(l)), 'drainTimeout applies on reload');
      const inflight = get(`http://127.0.0.1:${port}/slow`).then(
        (a) => `${a.status} ${a.body}`,
        (err: NodeJS.ErrnoException) => `error ${err.code ?? err.message}`,
      );
      while (upstream.received.length === 0) await sleep(20);
      await supervisor.stop();
      // 6.5 s is past the first drainTimeout plus the supervisor's 5 s margin, within the reloaded one.
      assert.equal(await inflight, '200 slow done');
    } finally {
      await supervisor.stop();
      await upstream.close();
    }
  });
});


/** A supervisor of two workers with short restart delays, its log lines into `logs`. */
function quickSupervisor(file: string, logs: string[]): Supervisor {
  const sink = new LogSink((chunk) => logs.push(...chunk.split('\n').filter(Boolean)));
  return new Supervisor({ entry: BIN, config: { file }, count: 2, sink, watch: false, restartMs: { initial: 100, max: 800 }, liveness: { intervalMs: 200, misses: 50 } });
}

/** Crash the worker that serves `url` (the probe plugin) and wait until its restart is scheduled. */
async function crashOneAt(url: string, logs: string[]): Promise<void> {
  await get(url, { 'x-crash': '1' });
  while (!logs.some((l) => /worker exited; restarting it/.test(l))) await sleep(20);
}

describe('config.workers: 2, a worker that catches up with a reload', () => {
  it("keeps the ejections the other worker made on the reload's new backends", async () => {
    const bad = await startUpstream((_req, res) => void res.writeHead(500, { 'content-type': 'text/plain' }).end('bad'));
    const good = await startUpstream((_req, res) => void res.writeHead(200, { 'content-type': 'text/plain' }).end('good'));
    const port = await freePort();
    const file = join(testTempDir('switchyard-workers-catch-up-'), 'config.yaml');
    const plain = (probe: Record<string, unknown>) => ({ name: 'plain', matches: [{ path: { pathPrefix: '/plain' } }], policies: { workerProbe: probe, directResponse: { status: 200, body: 'ok' } } });
    const eject = {
      name: 'eject',
      matches: [{ path: { pathPrefix: '/eject' } }],
      policies: { workerProbe: { value: 'two' }, outlierDetection: { consecutive5xx: 3, baseEjectionTime: '60s' } },
      backends: [{ host: `127.0.0.1:${bad.port}` }, { host: `127.0.0.1:${good.port}` }],
    };
    writeFileSync(file, twoWorkersYaml([{ port, listeners: [{ routes: [plain({ value: 'one' })] }] }]));
    const logs: string[] = [];
    const supervisor = quickSupervisor(file, logs);
    try {
      await supervisor.start();
      await crashOneAt(`http://127.0.0.1:${port}/plain`, logs);
      // The reload (a new route and backends) compiles for 4 s in the live worker: the other restarts meanwhile on
      // the first config, and catches up once it is applied (its own compile of it takes 4 s too).
      writeFileSync(file, twoWorkersYaml([{ port, listeners: [{ routes: [plain({ value: 'two', compileDelayMs: 4_000 }), eject] }] }]));
      assert.equal(await supervisor.reload(), true);
      assert.ok(logs.some((l) => /worker restarted/.test(l)), 'the worker restarted during the reload');
      // The worker on the reloaded config ejects the failing backend (the other has no such route yet: 404).
      const first = [];
      while (bad.received.length < 3) first.push(await get(`http://127.0.0.1:${port}/eject`));
      assert.equal(first.filter((a) => a.status === 500).length, 3);
      await until('both workers on the reloaded config', async () => {
        const answers = await Promise.all(Array.from({ length: 20 }, () => get(`http://127.0.0.1:${port}/eject`)));
        return answers.every((a) => a.status === 200 && a.headers['x-probe'] === 'two') && new Set(answers.map((a) => a.worker)).size === 2;
      });
      const answers = [];
      for (let i = 0; i < 30; i++) answers.push(await get(`http://127.0.0.1:${port}/eject`));
      assert.equal(new Set(answers.map((a) => a.worker)).size, 2, 'both workers served');
      assert.deepEqual(new Set(answers.map((a) => a.status)), new Set([200]));
      assert.equal(bad.received.length, 3, 'the ejection held in the worker that caught up, and in the other');
    } finally {
      await supervisor.stop();
      await Promise.all([bad.close(), good.close()]);
    }

    async function until(what: string, ok: () => Promise<boolean>): Promise<void> {
      const end = Date.now() + 30_000;
      while (!(await ok())) {
        if (Date.now() > end) throw new Error(`timed out waiting for ${what}:\n${logs.join('\n')}`);
        await sleep(100);
      }
    }
  });
});

describe('config.workers: 2, a restarted worker that refuses the reload it catches up with', () => {
  it('is restarted on the live config, not left serving the one it started with', async () => {
    const port = await freePort();
    const file = join(testTempDir('switchyard-workers-catch-up-refused-'), 'config.yaml');
    const yaml = (probe: Record<string, unknown>) => twoWorkersYaml([{ port, listeners: [{ routes: [{ policies: { workerProbe: probe, directResponse: { status: 200, body: 'ok' } } }] }] }]);
    writeFileSync(file, yaml({ value: 'one' }));
    const logs: string[] = [];
    const supervisor = quickSupervisor(file, logs);
    try {
      await supervisor.start();
      // Thread ids are handed out in order: the restarted worker gets one after this probe thread's (not the next: a
      // reload's check thread in the live worker, ADR 0179, may take that first).
      const probe = new Worker('', { eval: true });
      const before = probe.threadId;
      await probe.terminate();
      await crashOneAt(`http://127.0.0.1:${port}/`, logs);
      // Compiled for 4 s by the live worker (the other restarts meanwhile); refused by the restarted one only.
      writeFileSync(file, yaml({ value: 'two', compileDelayMs: 4_000, failOnceAfterThread: before }));
      assert.equal(await supervisor.reload(), true);
      assert.ok(logs.some((l) => /worker restarted/.test(l)), 'the worker restarted during the reload');
      const end = Date.now() + 40_000;
      let answers: Awaited<ReturnType<typeof get>>[] = [];
      while (Date.now() < end) {
        answers = await Promise.all(Array.from({ length: 20 }, () => get(`http://127.0.0.1:${port}/`).catch(() => undefined))).then((a) => a.filter((x) => x !== undefined));
        if (answers.length === 20 && answers.every((a) => a.headers['x-probe'] === 'two') && new Set(answers.map((a) => a.worker)).size === 2) break;
        await sleep(200);
      }
      assert.ok(logs.some((l) => /refused in thread \d+/.test(l) && Number(/refused in thread (\d+)/.exec(l)![1]) > before), logs.join('\n'));
      assert.deepEqual(new Set(answers.map((a) => a.headers['x-probe'])), new Set(['two']), 'every worker serves the live config');
      assert.equal(new Set(answers.map((a) => a.worker)).size, 2);
    } finally {
      await supervisor.stop();
    }
  });
});
