// A route that lists several `ai` backends fails over between them with no `retry` policy (ADR 0039): connection
// refused, 5xx and 429 move the request to the next provider (each at most once), a 429's Retry-After cools the
// provider down, translation keeps working (an OpenAI client served by Anthropic), streams fail over before their
// first byte. Real gateway, real `openai` client, aimock as the providers.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { aiPreset, startMock, startErrorProvider } from '../ai/harness.ts';
import type { Mock } from '../ai/harness.ts';

/**
 * The weight that makes a route's first backend its first pick: picks are weighted at random, so the other provider
 * goes first once in FIRST + 1 requests. At 1,000 to 1 that failed one CI run (the Anthropic stand-in answered first
 * and the OpenAI one was never tried); at 10⁹ to 1 it is once in a billion.
 */
const FIRST = 1_000_000_000;

describe('LLM routes fail over by default', () => {
  let mock: Mock;
  let gw: RunningGateway;
  let base: string;
  let failing: TestUpstream;
  let limited: TestUpstream;
  let alsoFailing: TestUpstream;
  let claude: TestUpstream;
  let silent: TestUpstream;
  let overloaded: TestUpstream;
  let overloaded200: TestUpstream;


  before(async () => {
    mock = await startMock();
    failing = await startErrorProvider(500);
    limited = await startErrorProvider(429, { 'retry-after': '30' });
    alsoFailing = await startErrorProvider(503);
    silent = await startUpstream(() => undefined);
    // Anthropic's "overloaded" answer: 529 with its error envelope.
    overloaded = await startUpstream((_req, res) => {
      res.writeHead(529, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }));
    });
    // The same error envelope with 200 (a proxy in front of Anthropic): no answer, the next provider is tried.
    overloaded200 = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }));
    });
    // An Anthropic stand-in that records headers as they arrived (aimock's journal redacts credentials).
    claude = await startUpstream((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-x', content: [{ type: 'text', text: 'from claude' }], stop_reason: 'end_turn', usage: { input_tokens: 3, output_tokens: 2 } }));
    });
    const port = await freePort();
    const dead = await freePort();
    base = `http://127.0.0.1:${port}`;
    const ai = (name: string, hostPort: string, provider: Record<string, unknown> = { openAI: {} }) => ({ ai: { name, provider, hostOverride: hostPort } });
    const route = (name: string, backends: unknown[]) => ({ name, matches: [{ path: { pathPrefix: `/${name}` } }], backends });
    gw = await startGateway(
      {
        binds: [
          {
            port,
            listeners: [
              {
                routes: [
                  route('refused', [{ ...ai('down', `127.0.0.1:${dead}`), weight: FIRST }, ai('up', mock.hostPort)]),
                  route('five', [{ ...ai('fails', `127.0.0.1:${failing.port}`), weight: FIRST }, ai('works', mock.hostPort)]),
                  route('limited', [{ ...ai('limited', `127.0.0.1:${limited.port}`), weight: FIRST }, ai('spare', mock.hostPort)]),
                  route('translate', [{ ...ai('openai-down', `127.0.0.1:${alsoFailing.port}`), weight: FIRST }, ai('claude', mock.hostPort, { anthropic: {} })]),
                  route('tstream', [{ ...ai('openai-down2', `127.0.0.1:${alsoFailing.port}`), weight: FIRST }, ai('claude2', mock.hostPort, { anthropic: {} })]),
                  route('keys', [
                    { ...ai('openai-keyed', `127.0.0.1:${alsoFailing.port}`), weight: FIRST, policies: { backendAuth: { key: 'sk-openai-secret' } } },
                    { ...ai('claude-keyed', `127.0.0.1:${claude.port}`, { anthropic: {} }), policies: { backendAuth: { key: 'sk-ant-secret' } } },
                  ]),
                  {
                    ...route('slow', [{ ...ai('silent', `127.0.0.1:${silent.port}`), weight: FIRST }, ai('quick', mock.hostPort)]),
                    policies: { timeout: { backendRequestTimeout: '300ms' } },
                  },
                  route('overloaded', [{ ...ai('claude-busy', `127.0.0.1:${overloaded.port}`, { anthropic: {} }), weight: FIRST }, ai('openai-spare', mock.hostPort)]),
                  route('overloaded200', [{ ...ai('claude-busy200', `127.0.0.1:${overloaded200.port}`, { anthropic: {} }), weight: FIRST }, ai('openai-spare200', mock.hostPort)]),
                  route('allbad', [ai('bad-a', `127.0.0.1:${failing.port}`), ai('bad-b', `127.0.0.1:${alsoFailing.port}`)]),
                  {
                    // A header the client sent and the route added to is a list: each backend's additions go on a copy.
                    ...route('tags', [
                      { ...ai('openai-tagged', `127.0.0.1:${alsoFailing.port}`), weight: FIRST, policies: { requestHeaderModifier: { add: { 'x-tag': 'a' } } } },
                      { ...ai('claude-tagged', `127.0.0.1:${claude.port}`, { anthropic: {} }), policies: { requestHeaderModifier: { add: { 'x-tag': 'b' } } } },
                    ]),
                    policies: { requestHeaderModifier: { add: { 'x-tag': 'route' } } },
                  },
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
    await failing?.close();
    await limited?.close();
    await alsoFailing?.close();
    await claude?.close();
    await silent?.close();
    await overloaded?.close();
    await overloaded200?.close();
    await mock?.stop();
  });

  const client = (prefix: string) => new OpenAI({ baseURL: `${base}/${prefix}/v1`, apiKey: 'client-key', maxRetries: 0 });
  const hello = (prefix: string) => client(prefix).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }] });

  it('a refused connection moves the request to the next provider', async () => {
    for (let i = 0; i < 3; i++) assert.equal((await hello('refused')).choices[0]!.message.content, 'Hello from the mock!');
  });

  it('a 500 moves the request to the next provider; the failing one is cooled down', async () => {
    const res = await hello('five');
    assert.equal(res.choices[0]!.message.content, 'Hello from the mock!');
    assert.equal(failing.received.filter((r) => r.url.startsWith('/v1/chat')).length, 1, 'the failing provider was tried first');
    const before = failing.received.length;
    for (let i = 0; i < 3; i++) assert.equal((await hello('five')).choices[0]!.message.content, 'Hello from the mock!');
    assert.equal(failing.received.length, before, 'skipped during its cooldown');
  });

  it('a 429 with Retry-After: the provider is skipped for that long', async () => {
    for (let i = 0; i < 4; i++) assert.equal((await hello('limited')).choices[0]!.message.content, 'Hello from the mock!');
    assert.equal(limited.received.length, 1, 'one 429, then skipped while Retry-After runs');
  });

  it("Anthropic's 529 (overloaded) moves the request to the next provider", async () => {
    const res = await hello('overloaded');
    assert.equal(res.choices[0]!.message.content, 'Hello from the mock!');
    assert.equal(overloaded.received.filter((r) => r.url === '/v1/messages').length, 1, 'the overloaded provider was tried first');
  });

  it("Anthropic's overloaded error in a 200 body moves the request to the next provider too", async () => {
    const res = await hello('overloaded200');
    assert.equal(res.choices[0]!.message.content, 'Hello from the mock!');
    assert.equal(overloaded200.received.filter((r) => r.url === '/v1/messages').length, 1, 'the overloaded provider was tried first');
  });

  it('an OpenAI client is served by the Anthropic provider after the OpenAI one fails', async () => {
    const res = await hello('translate');
    assert.equal(res.choices[0]!.message.content, 'Hello from the mock!');
    assert.equal(res.object, 'chat.completion');
    const last = await mock.last();
    assert.equal(last.path, '/v1/messages', 'the second provider got an Anthropic Messages request');
    assert.equal(last.body?.model, 'gpt-4o-mini');
    assert.ok(alsoFailing.received.some((r) => r.url === '/v1/chat/completions'));
  });

  it('a stream fails over before its first byte', async () => {
    const before = alsoFailing.received.length;
    const stream = await client('tstream').chat.completions.create({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'hello' }] });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    assert.equal(text, 'Hello from the mock!');
    assert.equal(alsoFailing.received.length, before + 1, 'the first provider was tried');
    assert.equal((await mock.last()).body?.stream, true);
  });

  it('each provider gets its own credential only', async () => {
    const before = alsoFailing.received.length;
    assert.equal((await hello('keys')).choices[0]!.message.content, 'from claude');
    const first = alsoFailing.received[before]!;
    assert.equal(first.headers.authorization, 'Bearer sk-openai-secret');
    const last = claude.received.at(-1)!;
    assert.equal(last.url, '/v1/messages');
    assert.equal(last.headers['x-api-key'], 'sk-ant-secret');
    assert.ok(!JSON.stringify(last.headers).includes('sk-openai-secret'), 'the OpenAI key never reached Anthropic');
  });

  it('the next provider gets the headers as they were before the first one: its additions to a list header too', async () => {
    const before = alsoFailing.received.length;
    const answer = await client('tags').chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }] }, { headers: { 'x-tag': 'client' } });
    assert.equal(answer.choices[0]!.message.content, 'from claude');
    assert.equal(alsoFailing.received[before]!.headers['x-tag'], 'client, route, a');
    assert.equal(claude.received.at(-1)!.headers['x-tag'], 'client, route, b');
  });

  it('a provider that does not answer in time: the request moves on', async () => {
    assert.equal((await hello('slow')).choices[0]!.message.content, 'Hello from the mock!');
    assert.equal(silent.received.length, 1);
  });

  it('each provider is tried at most once; when all fail the client gets the last error', async () => {
    const a = failing.received.length;
    const b = alsoFailing.received.length;
    const res = await fetch(`${base}/allbad/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }] }),
    });
    assert.ok(res.status === 500 || res.status === 503, `status ${res.status}`);
    await res.text();
    assert.equal(failing.received.length - a + (alsoFailing.received.length - b), 2, 'two providers, two attempts');
  });
});

describe('a refusal the gateway makes itself is not a provider failure', () => {
  let gw: RunningGateway;
  let base: string;
  const standIns: TestUpstream[] = [];
  const LIMITED = 'sk-limited-0123456789';
  const OTHER = 'sk-other-0123456789ab';

  /** An OpenAI stand-in answering with its own name. */
  const standIn = (name: string) =>
    startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'c1', object: 'chat.completion', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, message: { role: 'assistant', content: name }, finish_reason: 'stop' }], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } }));
    });

  before(async () => {
    standIns.push(await standIn('main'), await standIn('spare'));
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    const virtualKeys = {
      store: { sqlite: { path: ':memory:' } },
      keys: [
        { id: 'limited', key: LIMITED, budgets: [{ requests: 1, period: 'minute' }] },
        { id: 'other', key: OTHER },
      ],
    };
    const ai = (name: string, up: TestUpstream) => ({ ai: { name, provider: { openAI: {} }, hostOverride: `127.0.0.1:${up.port}` } });
    gw = await startGateway(
      {
        binds: [
          {
            port,
            listeners: [{ routes: [{ name: 'budget', policies: { virtualKeys }, backends: [{ ...ai('main', standIns[0]!), weight: FIRST }, ai('spare', standIns[1]!)] }] }],
          },
        ],
      },
      { preset: aiPreset },
    );
  });
  after(async () => {
    await gw?.stop();
    for (const s of standIns) await s.close();
  });

  it("a key's budget 429 does not cool the provider down for other keys", async () => {
    const ask = (key: string) => new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0 }).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }] });
    assert.equal((await ask(LIMITED)).choices[0]!.message.content, 'main');
    await assert.rejects(ask(LIMITED), (err: { status?: number; message?: string }) => err.status === 429 && /budget exceeded/.test(err.message ?? ''));
    for (let i = 0; i < 3; i++) assert.equal((await ask(OTHER)).choices[0]!.message.content, 'main', 'the main provider stays in rotation');
    assert.equal(standIns[1]!.received.length, 0, 'the spare was never called');
    assert.equal(standIns[0]!.received.length, 4);
  });
});

