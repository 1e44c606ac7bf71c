// A virtual key's USD budget when prices change while a call is in flight (ADR 0150): the reservation, made at the
// prices of its time, is given back as reserved, and the call is charged its `llm.cost`, whatever the prices it was
// reserved at: a catalog file re-read mid-answer prices the answer at the new prices (in force when it came); a config
// reload does not reach a request already served by the old config (its route, limits and prices). No drift. Real
// gateway and `openai` client; a provider stand-in holding its stream until the test lets it end.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import OpenAI from 'openai';
import { stringify } from 'yaml';
import { oneListenerConfig, startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { testTempDir } from '../helpers/temp-dir.ts';
import { accessRecords, aiPreset, aiRoute } from './harness.ts';

const KEY = 'sk-prices-0123456789abcdef';
/** The usage the stand-in reports at the end of its stream. */
const IN = 11;
const OUT = 5;
const chunk = (d: Record<string, unknown>): string => `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'house-model', ...d })}\n\n`;

describe('a USD budget across a price change mid-call', () => {
  let provider: TestUpstream;
  let gw: RunningGateway;
  let base: string;
  let catalogFile: string;
  let release: (() => void) | undefined;
  let port: number;
  const writeCatalog = (input: number, output: number): void =>
    writeFileSync(catalogFile, JSON.stringify({ providers: { openai: { 'house-model': { input, output } } } }));
  const config = (inline: { input: number; output: number }) =>
    stringify({
      config: { adminAddr: '127.0.0.1:0', statsAddr: 'off', readinessAddr: 'off', logging: { format: 'json', level: 'info' }, drainTimeout: '200ms' },
      ...oneListenerConfig(port, [
        aiRoute('/file', { name: 'f', provider: { openAI: {} }, hostOverride: `127.0.0.1:${provider.port}`, costs: { catalog: catalogFile } }, { virtualKeys: keys }),
        aiRoute('/inline', { name: 'i', provider: { openAI: {} }, hostOverride: `127.0.0.1:${provider.port}`, costs: { prices: { 'house-model': inline } } }, { virtualKeys: keys }),
      ]),
    });
  // A budget large enough to be leased (ADR 0108), so the lease's accounting is crossed too.
  const keys = { store: { sqlite: { path: ':memory:' } }, keys: [{ id: 'k', key: KEY, budgets: [{ usd: 100_000, period: 'day' }] }] };

  before(async () => {
    provider = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 'Hel' }, finish_reason: null }] }));
      release = () => {
        res.write(chunk({ choices: [{ index: 0, delta: { content: 'lo' }, finish_reason: 'stop' }] }));
        res.end(chunk({ choices: [], usage: { prompt_tokens: IN, completion_tokens: OUT, total_tokens: IN + OUT } }) + 'data: [DONE]\n\n');
      };
    });
    port = await freePort();
    base = `http://127.0.0.1:${port}`;
    catalogFile = join(testTempDir('switchyard-price-change-'), 'prices.json');
    writeCatalog(3, 7);
    gw = await startGateway(config({ input: 3, output: 7 }), { preset: aiPreset });
  });
  after(async () => {
    await gw?.stop();
    await provider?.close();
  });

  const used = async (): Promise<number> => {
    const body = (await (await fetch(`${gw.adminUrl}/keys/k/usage`)).json()) as { usage: { used: number }[] };
    return Number(body.usage[0]!.used);
  };
  /** Refunds are sent within 1 s (ADR 0097): wait until the budget reads `want`. */
  const settledTo = async (want: number): Promise<number> => {
    const until = Date.now() + 5000;
    for (;;) {
      const now = await used();
      if (Math.abs(now - want) < 1e-12 || Date.now() > until) return now;
      await sleep(50);
    }
  };

  /** Start a stream (reserved at the prices in force), change the prices, then let the answer end. */
  const acrossChange = async (prefix: string, change: () => Promise<void>, nth = 1): Promise<Record<string, unknown>> => {
    const client = new OpenAI({ baseURL: `${base}${prefix}/v1`, apiKey: KEY, maxRetries: 0 });
    const stream = await client.chat.completions.create({ model: 'house-model', max_tokens: 1000, stream: true, messages: [{ role: 'user', content: 'hello' }] });
    const it = stream[Symbol.asyncIterator]();
    assert.equal((await it.next()).value?.choices[0]?.delta?.content, 'Hel');
    await change();
    release!();
    for (let r = await it.next(); !r.done; r = await it.next());
    return (await accessRecords(gw, `${prefix}/v1/chat/completions`, nth))[nth - 1]!;
  };

  it('a catalog file re-read mid-answer: charged at the new prices, the old reservation given back whole', async () => {
    const before = await used();
    const rec = await acrossChange('/file', async () => {
      writeCatalog(30, 70);
      for (const until = Date.now() + 8000; Date.now() < until && !gw.logs.some((l) => l.includes('price catalog reloaded')); ) await sleep(50);
    });
    const cost = (IN * 30 + OUT * 70) / 1e6;
    assert.equal(rec['llm.cost'], cost);
    assert.equal((await settledTo(before + cost)) - before, cost);
  });

  it("a config reload changing the inline prices mid-answer: charged at its config's prices, no drift; the next call at the new ones", async () => {
    const before = await used();
    const rec = await acrossChange('/inline', async () => {
      writeFileSync(gw.file, config({ input: 300, output: 700 }));
      assert.equal(await gw.gateway.reload(), true);
    });
    const cost = (IN * 3 + OUT * 7) / 1e6;
    assert.equal(rec['llm.cost'], cost);
    const after = await settledTo(before + cost);
    assert.ok(Math.abs(after - before - cost) < 1e-12, `charged ${after - before}, cost ${cost}`);
    const next = await acrossChange('/inline', async () => undefined, 2);
    const newCost = (IN * 300 + OUT * 700) / 1e6;
    assert.equal(next['llm.cost'], newCost);
    assert.ok(Math.abs((await settledTo(after + newCost)) - after - newCost) < 1e-12);
  });
});
