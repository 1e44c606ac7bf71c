// A reload that adds a bind on a port another process still holds: the gateway stays not ready (readiness names the
// bind) while the other binds serve, and tries the port again every 5 s and on a reload of the same file (SIGHUP),
// with workers too (each worker tries its binds when the supervisor gets the SIGHUP).
// Before, nothing tried it again: only an edit of the config or a restart made the gateway ready.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { Server } from 'node:net';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify } from 'yaml';
import { LogSink } from 'switchyard';
import { Supervisor } from '../../kernel/boot/supervisor.ts';
import { BIN } from '../helpers/cli.ts';
import { startGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

const route = { routes: [{ policies: { directResponse: { body: 'ok', status: 200 } } }] };
const config = (ports: number[]) => ({
  config: { adminAddr: '127.0.0.1:0', statsAddr: '127.0.0.1:0', readinessAddr: '127.0.0.1:0' },
  binds: ports.map((port) => ({ port, address: '127.0.0.1', listeners: [route] })),
});

async function hold(port: number): Promise<Server> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return server;
}
const release = (server: Server): Promise<void> => new Promise((resolve) => server.close(() => resolve()));

describe('a bind that cannot listen after a reload', () => {
  for (const how of ['by itself (every 5 s)', 'on a reload of the same file (SIGHUP)'] as const) {
    it(`is tried again ${how}: the gateway becomes ready once the port is free`, async () => {
      const first = await freePort();
      const second = await freePort();
      const gw = await startGateway(config([first]));
      const other = await hold(second);
      try {
        writeFileSync(gw.file, stringify(config([first, second])));
        assert.equal(await gw.gateway.reload(), true);
        const ready = async (): Promise<{ status: number; text: string }> => {
          const res = await fetch(`${gw.readinessUrl}/healthz/ready`);
          return { status: res.status, text: await res.text() };
        };
        const before = await ready();
        assert.equal(before.status, 503);
        assert.match(before.text, new RegExp(`binds ${second}`));
        assert.equal((await fetch(`http://127.0.0.1:${first}/`)).status, 200, 'the other bind serves');
        // Liveness asks only whether the process answers: a port held elsewhere is no reason to restart (ADR 0197).
        const live = await fetch(`${gw.readinessUrl}/healthz/live`);
        assert.deepEqual([live.status, await live.text()], [200, 'live\n']);
        await release(other);
        if (how === 'on a reload of the same file (SIGHUP)') {
          assert.equal(await gw.gateway.reload(), false, 'nothing new to apply');
          assert.equal((await ready()).status, 200, 'ready at once');
        } else {
          const until = Date.now() + 8000;
          while ((await ready()).status !== 200 && Date.now() < until) await sleep(100);
          assert.equal((await ready()).status, 200, 'ready within a retry');
        }
        assert.equal((await fetch(`http://127.0.0.1:${second}/`)).status, 200);
        assert.ok(gw.logs.some((l) => l.includes('binds that could not listen now do')));
      } finally {
        if (other.listening) await release(other);
        await gw.stop();
      }
    });
  }
});

describe('with config.workers: 2, a bind that cannot listen after a reload', () => {
  /**
   * Two workers serving one port, reloaded to add a second one another server holds (not ready for it); `freed` runs
   * once that server let the port go, then the second port must serve.
   */
  async function heldThenFreed(freed: (supervisor: Supervisor) => Promise<void>): Promise<void> {
    const first = await freePort();
    const second = await freePort();
    const file = join(testTempDir('switchyard-bind-retry-workers-'), 'config.yaml');
    const workers = (ports: number[]) => stringify({ ...config(ports), config: { workers: 2, adminAddr: 'off', statsAddr: 'off', readinessAddr: 'off', logging: { accessLog: false } } });
    writeFileSync(file, workers([first]));
    const supervisor = new Supervisor({ entry: BIN, config: { file }, count: 2, sink: new LogSink(() => undefined), watch: false });
    await supervisor.start();
    const other = await hold(second);
    try {
      writeFileSync(file, workers([first, second]));
      assert.equal(await supervisor.reload(), true);
      assert.equal(supervisor.readiness().pending, `worker 0: binds ${second}; worker 1: binds ${second}`);
      await release(other);
      await freed(supervisor);
      assert.equal((await fetch(`http://127.0.0.1:${second}/`)).status, 200);
    } finally {
      if (other.listening) await release(other);
      await supervisor.stop();
    }
  }

  it('is tried again by every worker on a reload of the same file (SIGHUP): ready at once once the port is free', () =>
    heldThenFreed(async (supervisor) => {
      assert.equal(await supervisor.reload(), false, 'nothing new to apply');
      assert.deepEqual(supervisor.readiness(), { ready: true, pending: '' }, 'ready at once');
    }));

  // The supervisor answers readiness from the workers' reports (ADR 0194): a bind a worker's own retry got listening
  // must be reported by that worker, or the gateway would stay not ready for good.
  it('is tried again by every worker by itself (every 5 s): the supervisor hears that it listens', () =>
    heldThenFreed(async (supervisor) => {
      const until = Date.now() + 12_000;
      while (!supervisor.readiness().ready && Date.now() < until) await sleep(100);
      assert.deepEqual(supervisor.readiness(), { ready: true, pending: '' }, 'ready within a retry');
    }));
});
