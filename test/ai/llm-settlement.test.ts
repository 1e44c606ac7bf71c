// How budgets and token limits settle an LLM call whose answer says nothing of its usage (ADR 0116): an answer that
// succeeded keeps its estimate (it is not free because its usage went unreported), a call that failed gives its
// reservation back, its request included. Real gateway and `openai` client; an OpenAI stand-in that answers with or
// without `usage`, or fails, as the request's `x-mode` header says. Prompt "hello" is estimated at 2 tokens, plus
// `max_tokens: 20`: 22 tokens reserved.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import OpenAI from 'openai';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { accessRecords, aiPreset, aiRoute } from './harness.ts';

const KEY = 'sk-settle-0123456789abcdef';
const HOURLY = 'sk-hourly-0123456789abcdef';
const ESTIMATE = 2 + 20;
/** gpt-4o in the built-in catalog: USD per 1M tokens. */
const estimateUsd = (2 * 2.5 + 20 * 10) / 1_000_000;

describe('settling an LLM call without usage', () => {
  let gw: RunningGateway;
  let provider: TestUpstream;
  let base: string;

  before(async () => {
    provider = await startUpstream((req, res) => {
      const mode = req.headers['x-mode'];
      if (mode === 'fail') {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end('{"error":{"message":"down","type":"server_error"}}');
        return;
      }
      const answer: Record<string, unknown> = { id: 'c1', object: 'chat.completion', created: 1, model: 'gpt-4o', choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }] };
      if (mode === 'usage') answer.usage = { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer));
    });
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    const virtualKeys = {
      store: { sqlite: { path: ':memory:' } },
      keys: [
        { id: 'k', key: KEY, budgets: [{ tokens: 100_000, period: 'day' }, { usd: 100, period: 'day' }, { requests: 1000, period: 'day' }] },
        { id: 'hourly', key: HOURLY, budgets: [{ requests: 1, period: 'hour' }] },
      ],
    };
    const ai = (name: string) => ({ name, provider: { openAI: {} }, hostOverride: `127.0.0.1:${provider.port}` });
    gw = await startGateway(
      {
        config: { logging: { format: 'json', level: 'info' } },
        binds: [
          {
            port,
            listeners: [
              {
                routes: [
                  aiRoute('/keys', ai('keyed'), { virtualKeys }),
                  aiRoute('/limit', ai('limited'), { localRateLimit: [{ maxTokens: 1000, tokensPerFill: 1000, fillInterval: '1h', type: 'tokens' }] }),
                ],
              },
            ],
          },
        ],
      },
      { preset: aiPreset },
    );
  });
  after(async () => {
    await gw?.stop();
    await provider?.close();
  });

  const ask = (prefix: string, mode: string, key = 'sk-any') =>
    new OpenAI({ baseURL: `${base}${prefix}/v1`, apiKey: key, maxRetries: 0, defaultHeaders: { 'x-mode': mode } }).chat.completions.create({ model: 'gpt-4o', max_tokens: 20, messages: [{ role: "user", content: "hello" }] }).withResponse();

  const usage = async (): Promise<Record<string, number>> => {
    const body = (await (await fetch(`${gw.adminUrl}/keys/k/usage`)).json()) as { usage: Record<string, unknown>[] };
    // A row names its unit by the budget's field: `{ tokens: 100000, period, used, ... }`.
    return Object.fromEntries(body.usage.map((r) => [['tokens', 'usd', 'requests'].find((u) => u in r)!, Number(r.used)]));
  };
  /** Settlement runs just after the answer: wait until the usage reads as expected. */
  const settledTo = async (want: Record<string, number>): Promise<Record<string, number>> => {
    const until = Date.now() + 5000;
    for (;;) {
      const now = await usage();
      const same = Object.entries(want).every(([unit, v]) => Math.abs((now[unit] ?? 0) - v) < 1e-12);
      if (same || Date.now() > until) return now;
      await sleep(20);
    }
  };

  it('virtualKeys: an answer without usage is charged its estimate on every budget; a failed call nothing, not even its request', async () => {
    await ask('/keys', 'none', KEY);
    const afterNone = await settledTo({ tokens: ESTIMATE, usd: estimateUsd, requests: 1 });
    assert.equal(afterNone.tokens, ESTIMATE, 'tokens: the estimate, not 0');
    assert.ok(Math.abs(afterNone.usd! - estimateUsd) < 1e-12, `usd ${afterNone.usd}: the estimate's price`);
    assert.equal(afterNone.requests, 1);

    await assert.rejects(ask('/keys', 'fail', KEY), (err: { status?: number }) => err.status === 500);
    await accessRecords(gw, '/keys/v1/chat/completions', 2);
    await sleep(100);
    assert.deepEqual(await usage(), afterNone, 'the failed call gave back all it reserved');

    await ask('/keys', 'usage', KEY);
    const afterUsage = await settledTo({ tokens: ESTIMATE + 7, requests: 2 });
    assert.equal(afterUsage.tokens, ESTIMATE + 7, 'the reported usage');
    assert.equal(afterUsage.requests, 2);
  });

  it('the estimate of a request asking for several answers (`n: 3`) is its max_tokens for each (ADR 0150)', async () => {
    const before = await usage();
    await new OpenAI({ baseURL: `${base}/keys/v1`, apiKey: KEY, maxRetries: 0, defaultHeaders: { 'x-mode': 'none' } }).chat.completions.create({ model: 'gpt-4o', max_tokens: 20, n: 3, messages: [{ role: 'user', content: 'hello' }] });
    const after = await settledTo({ tokens: before.tokens! + 2 + 3 * 20, requests: before.requests! + 1 });
    assert.equal(after.tokens! - before.tokens!, 2 + 60, 'kept: the prompt and three answers of 20 tokens at most');
  });

  it('localRateLimit tokens: an answer without usage keeps its estimate in the bucket; a failed call gives it back', async () => {
    // A token bucket reserves the prompt estimate alone (2).
    const ESTIMATE = 2;
    const remaining = async (mode: string): Promise<number> => {
      const { response } = await ask('/limit', mode);
      return Number(response.headers.get('x-ratelimit-remaining'));
    };
    // Each answer's header counts its own reservation (22), not yet its answer.
    assert.equal(await remaining('none'), 1000 - ESTIMATE);
    await accessRecords(gw, '/limit/v1/chat/completions', 1);
    assert.equal(await remaining('usage'), 1000 - 2 * ESTIMATE, 'the first answer kept its estimate');
    await accessRecords(gw, '/limit/v1/chat/completions', 2);
    await assert.rejects(ask('/limit', 'fail'), (err: { status?: number }) => err.status === 500);
    await accessRecords(gw, '/limit/v1/chat/completions', 3);
    assert.equal(await remaining('usage'), 1000 - ESTIMATE - 7 - ESTIMATE, 'the reported usage (7) replaced the second estimate; the failed call gave its own back');
  });

  it('an hour budget spent: Retry-After, and x-should-retry: false when that is over a minute away (the SDKs would not wait)', async () => {
    await ask('/keys', 'usage', HOURLY);
    const refused = await ask('/keys', 'usage', HOURLY).then(
      () => assert.fail('admitted'),
      (err: InstanceType<typeof OpenAI.APIError>) => err,
    );
    assert.equal(refused.status, 429);
    const retryAfter = Number(refused.headers?.get('retry-after'));
    assert.ok(retryAfter >= 1 && retryAfter <= 3600, `retry-after ${retryAfter}`);
    // The OpenAI and Anthropic SDKs wait for a Retry-After of up to 60 s; past that they retry at once.
    assert.equal(refused.headers?.get('x-should-retry') ?? null, retryAfter > 60 ? 'false' : null);
  });
});
