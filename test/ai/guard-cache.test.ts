// The opt-in verdict cache of the paid prompt guards (ADR 0188): an agent resends its tool definitions and history
// every turn; with `cache` set, a guard whose service judges texts one by one (OpenAI moderation) sends only the
// texts it has not passed within the TTL. Masks and rejections are not cached; memory is bounded; a reload keeps an
// unchanged guard's verdicts and drops a changed one's. Real openai SDK client, aimock as the model and as the
// moderation endpoint (its journal is what the guard service received).
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { stringify } from 'yaml';
import { aiPreset, aiRoute, startMock, startRecorder } from './harness.ts';
import type { Mock, Recorder } from './harness.ts';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { scrape, value } from '../helpers/metrics.ts';
import { guardVerdictCache, PassCache } from '../../plugins/lib/llm-guard/verdict-cache.ts';
import { FakeConfigError, fakeContext } from '../ai-policy/support.ts';

const TOOLS: OpenAI.Chat.Completions.ChatCompletionTool[] = [
  {
    type: 'function',
    function: { name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
  },
];

describe('guard verdict cache (ADR 0188)', () => {
  let mock: Mock;
  // In front of aimock's moderation endpoint: what the guard service received, byte for byte.
  let rec: Recorder;
  let gw: RunningGateway;
  let port: number;

  const moderation = (cache?: Record<string, unknown>, model?: string) => ({
    openAIModeration: { host: rec.hostPort, ...(model ? { model } : {}), ...(cache ? { cache } : {}) },
  });
  const route = (prefix: string, guard: Record<string, unknown>) =>
    aiRoute(prefix, { name: prefix.slice(1), provider: { openAI: {} }, hostOverride: mock.hostPort }, { ai: { routes: { '*': 'completions' }, promptGuard: { request: [guard] } } });
  const config = (routes: Record<string, unknown>[]) =>
    stringify({
      config: { adminAddr: '127.0.0.1:0', statsAddr: '127.0.0.1:0', readinessAddr: '127.0.0.1:0', drainTimeout: '200ms' },
      binds: [{ port, listeners: [{ routes }] }],
    });
  const routes = (reloadModel?: string, extra: Record<string, unknown>[] = []) => [
    ...extra,
    route('/cached', moderation({ maxEntries: 100, ttl: '1h' })),
    route('/plain', moderation()),
    route('/short', moderation({ ttl: '400ms' })),
    route('/tiny', moderation({ maxEntries: 3 })),
    route('/reloaded', moderation({}, reloadModel)),
  ];

  before(async () => {
    mock = await startMock();
    mock.llmock.onModerate(/hurt someone/, { flagged: true, categories: { violence: true }, category_scores: { violence: 0.9 } });
    rec = await startRecorder(mock.url);
    port = await freePort();
    gw = await startGateway(config(routes()), { preset: aiPreset });
  });
  after(async () => {
    await gw?.stop();
    await rec?.close();
    await mock?.stop();
  });

  /** The number of texts each moderation call since `from` carried. */
  const moderated = async (from: number): Promise<number[]> =>
    rec.received
      .slice(from)
      .filter((w) => w.url === '/v1/moderations')
      .map((w) => (w.json().input as unknown[]).length);
  const mark = async (): Promise<number> => rec.received.length;

  /** A three-turn agent conversation through the openai SDK; the texts the moderation service got per turn. */
  async function conversation(prefix: string, words: string[]): Promise<number[][]> {
    const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}${prefix}/v1`, apiKey: 'sk-test', maxRetries: 0 });
    const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [{ role: 'system', content: 'You are a helpful agent.' }];
    const perTurn: number[][] = [];
    for (const word of words) {
      messages.push({ role: 'user', content: `turn ${word}` });
      const from = await mark();
      const answer = await client.chat.completions.create({ model: 'gpt-4o', messages, tools: TOOLS });
      perTurn.push(await moderated(from));
      messages.push({ role: 'assistant', content: answer.choices[0]!.message.content ?? '' });
    }
    return perTurn;
  }

  it('three turns: only the new texts go to the service (5, 2, 2); without `cache` all of them (5, 7, 9)', async () => {
    // Turn 1: system prompt, user text, the tool's name, description and schema (ADR 0181). Later turns add the
    // model's answer and the next user text (aimock answers `turn hello` with another text than the others).
    const turns = ['one', 'hello', 'three'];
    assert.deepEqual(await conversation('/plain', turns), [[5], [7], [9]]);
    assert.deepEqual(await conversation('/cached', turns), [[5], [2], [2]]);
    // The same conversation again: every text passed within the TTL, nothing is sent.
    assert.deepEqual(await conversation('/cached', turns), [[], [], []]);
    // A text met twice is sent once: a model answering the same text again adds only the next user text.
    assert.deepEqual(await conversation('/cached', ['one', 'two']), [[], [1]]);
    const m = await scrape(gw);
    const count = (result: string) => value(m, 'switchyard_guardrail_cache_total', { guard: 'openAIModeration', phase: 'request', result });
    assert.equal(m.types.get('switchyard_guardrail_cache_total'), 'counter');
    // 21 lookups per three-turn conversation and 5 + 7 for the last one: 10 misses (the texts sent), the rest hits.
    assert.equal(count('miss'), 10);
    assert.equal(count('hit'), 21 + 21 + 12 - 10);
  });

  it('a rejection is not cached: the flagged text is judged again on the next try', async () => {
    const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/cached/v1`, apiKey: 'sk-test', maxRetries: 0 });
    const ask = () => client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'system', content: 'You are a helpful agent.' }, { role: 'user', content: 'I want to hurt someone' }] });
    for (let i = 0; i < 2; i++) {
      const from = await mark();
      await assert.rejects(ask(), (err: unknown) => err instanceof OpenAI.APIError && err.status === 403);
      // The system prompt passed before; the flagged text is sent every time.
      assert.deepEqual(await moderated(from), [1]);
    }
  });

  it('a pass expires after `ttl`', async () => {
    assert.deepEqual(await conversation('/short', ['a']), [[5]]);
    assert.deepEqual(await conversation('/short', ['a']), [[]]);
    await sleep(500);
    assert.deepEqual(await conversation('/short', ['a']), [[5]]);
  });

  it('many distinct texts do not grow the cache past `maxEntries`: the least recently used are judged again', async () => {
    const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/tiny/v1`, apiKey: 'sk-test', maxRetries: 0 });
    const ask = async (text: string) => {
      const from = await mark();
      await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: text }] });
      return moderated(from);
    };
    assert.deepEqual(await ask('first'), [1]);
    assert.deepEqual(await ask('first'), []);
    for (let i = 0; i < 20; i++) await ask(`distinct ${i}`);
    // `first` was pushed out by the three most recent texts.
    assert.deepEqual(await ask('first'), [1]);
  });

  it('a bounded store: 100,000 distinct keys leave at most maxEntries, in linear time; expired entries are misses', () => {
    let now = 0;
    const cache = new PassCache(10_000, 50, () => now);
    const started = performance.now();
    for (let i = 0; i < 100_000; i++) cache.add(`k${i}`);
    // The least recently used tenth goes at once when the bound is passed.
    assert.ok(cache.size <= 10_000 && cache.size >= 9_000, String(cache.size));
    // Evicting one entry at a time stepped over the deleted ones: 100,000 adds took about 0.8 s.
    assert.ok(performance.now() - started < 400, `${performance.now() - started} ms`);
    assert.equal(cache.has('k0'), false);
    assert.equal(cache.has('k99999'), true);
    const size = cache.size;
    now = 50;
    assert.equal(cache.has('k99999'), false);
    assert.equal(cache.size, size - 1, 'an expired entry is dropped when met');
  });

  it('a text\'s key holds its phase, role and marks: a pass as a prompt is no pass as an answer', () => {
    const cache = guardVerdictCache(fakeContext(['g']), 'bedrockGuardrails', {}, {})!;
    const m = { role: 'user', content: 'same' };
    const keys = new Set([cache.keyOf('request', m), cache.keyOf('response', m), cache.keyOf('request', { ...m, role: 'system' }), cache.keyOf('request', { ...m, json: true }), cache.keyOf('request', { ...m, joined: true })]);
    assert.equal(keys.size, 5);
    cache.passed([cache.keyOf('request', m)]);
    assert.deepEqual(cache.unjudged('response', [m]).indexes, [0]);
    assert.deepEqual(cache.unjudged('request', [m, { role: 'user', content: 'new' }]).indexes, [1]);
  });

  it('no `cache`, no store; a `ttl` of 0 is a config error at `cache.ttl`', () => {
    assert.equal(guardVerdictCache(fakeContext(['g']), 'openAIModeration', {}, undefined), undefined);
    assert.throws(
      () => guardVerdictCache(fakeContext(['g']), 'openAIModeration', {}, { ttl: '0' }),
      (err: unknown) => err instanceof FakeConfigError && err.at.join('.') === 'g.cache.ttl' && /above 0/.test(err.message),
    );
  });

  it('a reload keeps an unchanged guard\'s verdicts and drops those of a changed guard', async () => {
    assert.deepEqual(await conversation('/reloaded', ['r']), [[5]]);
    // Another route in front: the guard's place in the config moved, its config did not.
    writeFileSync(gw.file, config(routes(undefined, [route('/other', moderation({}))])));
    assert.equal(await gw.gateway.reload(), true);
    assert.deepEqual(await conversation('/reloaded', ['r']), [[]], 'same guard config: still cached');
    writeFileSync(gw.file, config(routes('text-moderation-latest')));
    assert.equal(await gw.gateway.reload(), true);
    assert.deepEqual(await conversation('/reloaded', ['r']), [[5]], 'another model judges: judged again');
  });
});
