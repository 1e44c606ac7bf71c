// The keys' numbers (ADR 0177): an answer's lifetime usage and cost are summed in the process and handed on every
// FLUSH_MS, to the store, and to the `/metrics` series when they are read. What they hold when the gateway stops is
// written before the store closes, so a restart reads it.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import OpenAI from 'openai';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { testTempDir } from '../helpers/temp-dir.ts';
import { aiPreset, aiRoute, startMock } from './harness.ts';
import type { Mock } from './harness.ts';
import { FLUSH_MS } from '../../plugins/policies/virtual-keys/key-numbers.ts';

const IVY = 'sk-ivy-0123456789abcdefghi';

describe('virtualKeys numbers across a restart', () => {
  let mock: Mock;
  let dir: string;
  let gw: RunningGateway | undefined;

  before(async () => {
    mock = await startMock();
    dir = testTempDir('switchyard-vk-numbers-');
  });
  after(async () => {
    await gw?.stop();
    await mock?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const start = async (): Promise<{ gw: RunningGateway; base: string }> => {
    const port = await freePort();
    const virtualKeys = { store: { sqlite: { path: join(dir, 'keys.db') } }, keys: [{ id: 'ivy', key: IVY, owner: 'ivy@example.com' }] };
    const running = await startGateway(
      {
        config: { drainTimeout: '200ms' },
        binds: [{ port, listeners: [{ routes: [aiRoute('/openai', { name: 'openai', provider: { openAI: {} }, hostOverride: mock.hostPort }, { virtualKeys })] }] }],
      },
      { preset: aiPreset },
    );
    return { gw: running, base: `http://127.0.0.1:${port}` };
  };
  const lifetime = async (g: RunningGateway): Promise<{ tokens: number; usd: number }> =>
    ((await (await fetch(`${g.adminUrl}/keys/ivy/usage`)).json()) as { lifetime: { tokens: number; usd: number } }).lifetime;

  it('what the numbers hold when the gateway stops is written, and the next one reads it', async () => {
    let started = await start();
    gw = started.gw;
    const client = new OpenAI({ baseURL: `${started.base}/openai/v1`, apiKey: IVY, maxRetries: 0 });
    const t0 = Date.now();
    await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }] });
    await sleep(50);
    assert.ok(Date.now() - t0 < FLUSH_MS, 'stopped while the numbers still hold the answer');
    await gw.stop();
    gw = undefined;
    started = await start();
    gw = started.gw;
    const life = await lifetime(gw);
    assert.equal(life.tokens, 16, 'one answer of 16 tokens, written at the stop');
    assert.ok(life.usd > 0);
  });

  it('`/metrics` shows every answer\'s cost after the admin UI validated a pasted key store (its numbers are not the live ones)', async () => {
    await gw?.stop();
    const started = await start();
    gw = started.gw;
    const client = new OpenAI({ baseURL: `${started.base}/openai/v1`, apiKey: IVY, maxRetries: 0 });
    const hello = () => client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }] });
    const cost = async (): Promise<number> => {
      const text = await (await fetch(`${gw!.adminUrl}/metrics`)).text();
      return Number(/^switchyard_virtual_key_cost_usd_total\{key="ivy"\} (\S+)$/m.exec(text)?.[1] ?? 0);
    };
    /** The cost once it passes `above` (an answer is settled just after it ends). */
    const settled = async (above: number): Promise<number> => {
      let seen = 0;
      for (const until = Date.now() + 5000; Date.now() < until && (seen = await cost()) <= above; ) await sleep(20);
      return seen;
    };
    await hello();
    const one = await settled(0);
    assert.ok(one > 0, 'the first answer\'s cost');
    const pasted = { binds: [{ port: await freePort(), listeners: [{ routes: [{ name: 'r', policies: { virtualKeys: { store: { sqlite: { path: ':memory:' } } }, directResponse: { status: 200 } } }] }] }] };
    const check = await fetch(`${gw.adminUrl}/ui/api/validate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: JSON.stringify(pasted) }) });
    assert.equal(((await check.json()) as { ok: boolean }).ok, true);
    await hello();
    assert.ok(Math.abs((await settled(one)) - 2 * one) < 1e-12, 'the second answer\'s cost shows too');
  });
});
