// What LLM calls cost (issue 13 item 3): a price catalog (built in, overridable per backend with `ai.costs`, a
// catalog file re-read when it changes) gives each call a cost in the access log (`llm.cost`), in CEL (`llm.cost`,
// through `config.logging.fields.add`) and on /metrics (`switchyard_llm_cost_usd_total{provider,model}`); a model
// without a price has no cost and is counted in `switchyard_llm_unpriced_requests_total{provider}`. Usage comes from
// aimock's fixtures (harness FIXTURES: "hello" = 11 input + 5 output tokens), driven by the real `openai` client.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { compileError, headlines, yaml } from '../config/helpers.ts';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream, UpstreamHandler } from '../helpers/upstream.ts';
import { accessRecords, aiPreset, aiRoute, startMock } from './harness.ts';
import type { Mock } from './harness.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

/** The documented formula: (uncached × input + cached × cachedInput + written × cacheCreationInput + output × output) / 1,000,000. */
const cost = (p: { input: number; output: number; cachedInput?: number; cacheCreationInput?: number }, input: number, output: number, cached = 0, written = 0): number =>
  ((input - cached - written) * p.input + cached * (p.cachedInput ?? p.input) + written * (p.cacheCreationInput ?? p.input) + output * p.output) / 1_000_000;

/** An Anthropic Messages answer with cache reads and writes (aimock does not report cache usage). */
const cachingAnthropic: UpstreamHandler = (_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(
    JSON.stringify({
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'claude-haiku-4-5',
      content: [{ type: 'text', text: 'from the cache' }],
      stop_reason: 'end_turn',
      usage: { input_tokens: 100, cache_read_input_tokens: 800, cache_creation_input_tokens: 100, output_tokens: 50 },
    }),
  );
};

/** A Chat Completions answer of an audio model (gpt-audio): audio tokens within the prompt and completion counts. */
const audioAnswer: UpstreamHandler = (_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(
    JSON.stringify({
      id: 'chatcmpl-a',
      object: 'chat.completion',
      created: 1,
      model: 'gpt-audio-2025-08-28',
      choices: [{ index: 0, message: { role: 'assistant', content: null, audio: { id: 'audio_1', data: 'AAAA', expires_at: 2, transcript: 'hi' } }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 300, completion_tokens: 120, total_tokens: 420, prompt_tokens_details: { cached_tokens: 0, audio_tokens: 250 }, completion_tokens_details: { audio_tokens: 100, reasoning_tokens: 0 } },
    }),
  );
};

describe('LLM costs', () => {
  let mock: Mock;
  let cacheUpstream: TestUpstream;
  let audioUpstream: TestUpstream;
  let gw: RunningGateway;
  let base: string;
  let dir: string;
  let catalogFile: string;

  const writeCatalog = (input: number, output: number) =>
    writeFileSync(catalogFile, JSON.stringify({ updated: '2026-11-25', providers: { openai: { 'house-model': { input, output } } } }, null, 2));

  before(async () => {
    mock = await startMock();
    cacheUpstream = await startUpstream(cachingAnthropic);
    audioUpstream = await startUpstream(audioAnswer);
    dir = testTempDir('switchyard-prices-');
    catalogFile = join(dir, 'prices.json');
    writeCatalog(3, 7);
    const ai = (name: string, extra: Record<string, unknown> = {}) => ({ name, provider: { openAI: {} }, hostOverride: mock.hostPort, ...extra });
    const port = await freePort();
    gw = await startGateway(
      {
        config: { logging: { format: 'json', level: 'info', fields: { add: { spend: 'llm.cost', tokens: 'llm.totalTokens', priced: 'has(llm.cost)' } } }, drainTimeout: '200ms' },
        binds: [
          {
            port,
            listeners: [
              {
                routes: [
                  aiRoute('/builtin', ai('builtin')),
                  aiRoute('/override', ai('override', { costs: { prices: { 'gpt-4o': { input: 1, output: 2 }, 'team-*': { input: 0.5, output: 1.5 } } } })),
                  aiRoute('/file', ai('file', { costs: { catalog: catalogFile } })),
                  aiRoute('/an', { name: 'an', provider: { anthropic: {} }, hostOverride: mock.hostPort }, { testAi: { routes: { '/v1/messages': 'messages' } } }),
                  aiRoute('/claude', { name: 'claude', provider: { anthropic: {} }, hostOverride: `127.0.0.1:${cacheUpstream.port}` }),
                  aiRoute('/audio', { name: 'audio', provider: { openAI: {} }, hostOverride: `127.0.0.1:${audioUpstream.port}` }),
                ],
              },
            ],
          },
        ],
      },
      { preset: aiPreset },
    );
    base = `http://127.0.0.1:${port}`;
  });
  after(async () => {
    await gw?.stop();
    await mock?.stop();
    await cacheUpstream?.close();
    await audioUpstream?.close();
  });

  const client = (prefix: string) => new OpenAI({ baseURL: `${base}${prefix}/v1`, apiKey: 'sk-test', maxRetries: 0 });
  const ask = (prefix: string, model: string, content = 'hello') => client(prefix).chat.completions.create({ model, messages: [{ role: 'user', content }] });
  const metrics = async (): Promise<string> => (await fetch(`${gw.statsUrl}/metrics`)).text();
  const series = (text: string, name: string): number | undefined => {
    const line = text.split('\n').find((l) => l.startsWith(`${name} `));
    return line === undefined ? undefined : Number(line.slice(name.length + 1));
  };
  const lastLog = async (prefix: string, count: number) => (await accessRecords(gw, `${prefix}/v1/chat/completions`, count)).at(-1)!;

  it('prices a call from the built-in catalog: access log, CEL and /metrics agree with the catalog exactly', async () => {
    const answer = await ask('/builtin', 'gpt-4o');
    assert.deepEqual(answer.usage, { prompt_tokens: 11, completion_tokens: 5, total_tokens: 16 });
    const want = cost({ input: 2.5, output: 10 }, 11, 5);
    const log = await lastLog('/builtin', 1);
    assert.equal(log['llm.cost'], want);
    assert.equal(log.spend, want, 'CEL llm.cost (config.logging.fields.add)');
    assert.equal(log.tokens, 16, 'CEL llm.totalTokens');
    assert.equal(log.priced, true);
    assert.equal(series(await metrics(), 'switchyard_llm_cost_usd_total{provider="openai",model="gpt-4o"}'), want);
  });

  it('bills cache reads and writes at their own prices, not twice', async () => {
    const answer = await ask('/claude', 'claude-haiku-4-5');
    assert.equal(answer.usage?.prompt_tokens, 1000, 'input includes cache reads and writes');
    const log = await lastLog('/claude', 1);
    assert.equal(log['llm.cachedInputTokens'], 800);
    const want = cost({ input: 1, cachedInput: 0.1, cacheCreationInput: 1.25, output: 5 }, 1000, 50, 800, 100);
    assert.equal(log['llm.cost'], want);
    assert.equal(series(await metrics(), 'switchyard_llm_cost_usd_total{provider="anthropic",model="claude-haiku-4-5"}'), want);
  });

  it("bills a Chat Completions audio model's audio tokens at the built-in catalog's audio prices (ADR 0192)", async () => {
    await ask('/audio', 'gpt-audio');
    const log = await lastLog('/audio', 1);
    // gpt-audio: text $2.50 in, $10 out; audio $32 in, $64 out.
    const want = (50 * 2.5 + 250 * 32 + 20 * 10 + 100 * 64) / 1_000_000;
    assert.ok(Math.abs(Number(log['llm.cost']) - want) < 1e-12, `cost ${String(log['llm.cost'])} != ${want}`);
  });

  it('prices a stream from the usage its events carry (Anthropic: input first, output at the end)', async () => {
    const client = new Anthropic({ baseURL: `${base}/an`, apiKey: 'sk-ant-test', maxRetries: 0 });
    const stream = await client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'hello' }] });
    for await (const _event of stream) void _event;
    const log = (await accessRecords(gw, '/an/v1/messages', 1)).at(-1)!;
    assert.equal(log['llm.streaming'], true);
    const want = cost({ input: 3, output: 15 }, 11, 5);
    assert.equal(log['llm.cost'], want);
    assert.equal(log.spend, want);
    const counted = series(await metrics(), 'switchyard_llm_cost_usd_total{provider="anthropic",model="claude-sonnet-4-5"}')!;
    assert.ok(Math.abs(counted - want) < 1e-15, `the counter grew by the cost (${counted} vs ${want}), in steps as usage arrived`);
  });

  it('an inline price in ai.costs replaces the catalog for that backend (wildcards too)', async () => {
    await ask('/override', 'gpt-4o');
    assert.equal((await lastLog('/override', 1))['llm.cost'], cost({ input: 1, output: 2 }, 11, 5));
    await ask('/override', 'team-special');
    assert.equal((await lastLog('/override', 2))['llm.cost'], cost({ input: 0.5, output: 1.5 }, 11, 5));
    // The built-in catalog still prices what the override does not name.
    await ask('/override', 'gpt-4.1');
    assert.equal((await lastLog('/override', 3))['llm.cost'], cost({ input: 2, output: 8 }, 11, 5));
  });

  it('a model without a price has no cost and is counted as unpriced', async () => {
    const before = series(await metrics(), 'switchyard_llm_unpriced_requests_total{provider="openai"}') ?? 0;
    await ask('/builtin', 'mystery-model');
    const log = await lastLog('/builtin', 2);
    assert.equal(log['llm.inputTokens'], 11);
    assert.ok(!('llm.cost' in log), 'no llm.cost field');
    assert.ok(!('spend' in log), 'CEL llm.cost fails: the field is left out');
    assert.equal(log.priced, false);
    const text = await metrics();
    assert.equal(series(text, 'switchyard_llm_unpriced_requests_total{provider="openai"}'), before + 1);
    assert.ok(!text.includes('model="mystery-model"}') || !text.includes('switchyard_llm_cost_usd_total{provider="openai",model="mystery-model"}'));
  });

  it('a catalog file replaces the built-in one, and a change to it applies without a config reload', async () => {
    await ask('/file', 'house-model');
    assert.equal((await lastLog('/file', 1))['llm.cost'], cost({ input: 3, output: 7 }, 11, 5));
    await ask('/file', 'gpt-4o');
    assert.ok(!('llm.cost' in (await lastLog('/file', 2))), 'the built-in prices do not apply next to a catalog file');

    writeCatalog(4, 9);
    let n = 2;
    let got: unknown;
    for (const until = Date.now() + 8000; Date.now() < until; ) {
      await sleep(300);
      await ask('/file', 'house-model');
      got = (await lastLog('/file', ++n))['llm.cost'];
      if (got === cost({ input: 4, output: 9 }, 11, 5)) break;
    }
    assert.equal(got, cost({ input: 4, output: 9 }, 11, 5), 'the new prices apply');

    // A change that does not parse is logged; the last good prices stay.
    writeFileSync(catalogFile, '{"providers": {"openai": {"house-model": {"input": "cheap", "output": 1}}}}');
    for (const until = Date.now() + 8000; Date.now() < until && !gw.logs.some((l) => l.includes('price catalog change ignored')); ) await sleep(100);
    const warning = gw.logs.find((l) => l.includes('price catalog change ignored'));
    assert.ok(warning, 'the bad change is logged');
    assert.match(warning, /prices\.json:1:\d+: `openai\.house-model\.input` must be a number/);
    await ask('/file', 'house-model');
    assert.equal((await lastLog('/file', ++n))['llm.cost'], cost({ input: 4, output: 9 }, 11, 5));
  });
});

describe('ai.costs config errors', () => {
  const ai = (...body: string[]): string =>
    yaml('binds:', '  - port: 8080', '    listeners:', '      - routes:', '          - backends:', '              - ai:', ...body.map((l) => `                  ${l}`));
  const options = { preset: aiPreset };

  it('a malformed catalog file is a config error at `costs.catalog`, positioned in the catalog too', async () => {
    const dir = testTempDir('switchyard-prices-');
    const file = join(dir, 'bad.json');
    writeFileSync(file, '{\n  "providers": {\n    "openai": {\n      "gpt-4o": { "input": 2.5, "outptu": 10 }\n    }\n  }\n}\n');
    const err = await compileError(ai('name: x', 'provider: { openAI: {} }', 'costs:', `  catalog: ${file}`), options);
    const line = headlines(err)[0]!;
    assert.match(line, /^test\.yaml:10:30: cannot use the price catalog .*bad\.json:4:33: unknown price field `outptu` of `openai\.gpt-4o`/);
    assert.match(line, /\(at binds\[0\]\.listeners\[0\]\.routes\[0\]\.backends\[0\]\.ai\.costs\.catalog\)/);

    writeFileSync(file, '{ "providers": { "openai": { "gpt-4o": { "input": 2.5, "output": 10 } } }');
    const syntax = await compileError(ai('name: x', 'provider: { openAI: {} }', 'costs:', `  catalog: ${file}`), options);
    assert.match(headlines(syntax)[0]!, /cannot use the price catalog .*bad\.json:1:\d+: /);

    const missing = await compileError(ai('name: x', 'provider: { openAI: {} }', 'costs:', `  catalog: ${join(dir, 'none.json')}`), options);
    assert.match(headlines(missing)[0]!, /cannot use the price catalog .*none\.json: no such file/);
  });

  it('an inline price needs input and output, numbers ≥ 0', async () => {
    const err = await compileError(ai('name: x', 'provider: { openAI: {} }', 'costs:', '  prices:', '    gpt-4o: { input: -1 }'), options);
    const lines = headlines(err).join('\n');
    assert.match(lines, /costs\.prices\.gpt-4o/);
    assert.match(lines, /output|input/);
  });
});
