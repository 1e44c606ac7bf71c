// A Redis key store that becomes unreachable while the gateway runs (ADR 0143): the gateway's connection to it is
// held by a server that stopped (SIGSTOP), and the host then drops new handshakes (its accept queue full). A request
// with a virtual key fails within the reply deadline (the held connection) and then within the connect deadline (the
// reconnect), 500 each time, where the reconnect waited for the kernel's retries (about 2 min). Once Redis is back,
// requests are served again. A real redis-server, gateway and `openai` client against aimock.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Socket } from 'node:net';
import OpenAI from 'openai';
import { CONNECT_TIMEOUT_MS, REPLY_TIMEOUT_MS } from '../../plugins/lib/key-store/resp.ts';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { redisSkip, startRedis } from '../helpers/redis.ts';
import type { RunningRedis } from '../helpers/redis.ts';
import { fillAcceptQueue } from '../helpers/unanswered-address.ts';
import { aiPreset, startMock } from './harness.ts';
import type { Mock } from './harness.ts';

const KEY = 'sk-dora-0123456789abcdefgh';

describe('virtualKeys on a Redis store that becomes unreachable', { skip: redisSkip }, () => {
  let mock: Mock;
  let redis: RunningRedis;
  let gw: RunningGateway;
  let base: string;
  let fillers: Socket[] = [];

  before(async () => {
    mock = await startMock();
    // A backlog of 1: once stopped, two connections fill its accept queue.
    redis = await startRedis(['--tcp-backlog', '1']);
    const port = await freePort();
    const virtualKeys = { store: { redis: { url: redis.url, prefix: 'gone:' } }, keys: [{ id: 'dora', key: KEY, budgets: [{ tokens: 100_000, period: 'day' }] }] };
    gw = await startGateway(
      {
        config: { logging: { format: 'json' } },
        binds: [{ port, listeners: [{ routes: [{ name: 'chat', matches: [{ path: { pathPrefix: '/' } }], backends: [{ ai: { name: 'openai', provider: { openAI: {} }, hostOverride: mock.hostPort } }], policies: { virtualKeys } }] }] }],
      },
      { preset: aiPreset },
    );
    base = `http://127.0.0.1:${port}`;
  });
  after(async () => {
    for (const s of fillers) s.destroy();
    try {
      process.kill(redis.pid, 'SIGCONT');
    } catch {
      // already gone
    }
    await gw?.stop();
    await mock?.stop();
    await redis?.stop();
  });

  /** Status and seconds taken of one chat request with the key (the client gives up after 30 s). */
  async function ask(): Promise<{ status: number; seconds: number }> {
    const started = performance.now();
    const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: KEY, maxRetries: 0, timeout: 30_000 });
    const status = await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }], max_tokens: 20 }).then(
      () => 200,
      (err: { status?: number }) => err.status ?? 0,
    );
    return { status, seconds: (performance.now() - started) / 1000 };
  }

  it('fails each request within the reply or the connect deadline (500), and serves again once Redis is back', async () => {
    assert.equal((await ask()).status, 200);
    process.kill(redis.pid, 'SIGSTOP');
    fillers = await fillAcceptQueue(redis.port);
    const limit = (Math.max(REPLY_TIMEOUT_MS, CONNECT_TIMEOUT_MS) + 3000) / 1000;
    // The first waits on the held connection (the reply deadline), the next on new connections (the connect deadline).
    for (let i = 0; i < 3; i++) {
      const { status, seconds } = await ask();
      assert.equal(status, 500, `request ${i + 1} during the outage`);
      assert.ok(seconds < limit, `request ${i + 1} took ${seconds.toFixed(1)} s (at most ${limit} s)`);
    }
    for (const s of fillers) s.destroy();
    fillers = [];
    process.kill(redis.pid, 'SIGCONT');
    let status = 0;
    for (let i = 0; i < 20 && status !== 200; i++) ({ status } = await ask());
    assert.equal(status, 200, 'served again once Redis answers');
  });
});
