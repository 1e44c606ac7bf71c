// A provider that cannot carry a request's fields (ADR 0135: `n` > 1, `logprobs` to Anthropic) is no target for it
// under failover (ADR 0150): it is skipped, so the client gets the first provider's failure rather than a 400 that
// provider would never have sent, a provider that can carry them serves the request even when it is not the first
// pick, and the 400 comes only when no target of the route could serve it. Real gateway and `openai` client, two
// aimock instances: one answering 503, one answering.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { accessRecords, startAiGateway, startMock } from '../ai/harness.ts';
import type { AiGateway, Mock } from '../ai/harness.ts';

const MINI_KEY = 'sk-mini-only-0123456789';
const NONE_KEY = 'sk-no-model-0123456789';
/** The first pick of a weighted route, all but certainly (see llm-failover.test.ts). */
const FIRST = 1_000_000_000;

describe('failover past a provider that cannot carry the request', () => {
  let down: Mock;
  let up: Mock;
  let chunked: TestUpstream;
  let gw: AiGateway;
  let base: string;

  before(async () => {
    down = await startMock([{ match: {}, response: { error: { message: 'the service is unavailable', type: 'server_error' }, status: 503 } }]);
    up = await startMock([{ match: {}, response: { content: 'served' } }]);
    chunked = await startUpstream((_req, res) => {
      res.writeHead(503, { 'content-type': 'application/json' });
      res.write('{"error":{"message":"the service is ');
      setTimeout(() => res.end('unavailable","type":"server_error"}}'), 50);
    });
    const ai = (name: string, hostPort: string, provider: Record<string, unknown> = { openAI: {} }) => ({ ai: { name, provider, hostOverride: hostPort } });
    const route = (name: string, backends: unknown[], policies?: unknown) => ({ name, matches: [{ path: { pathPrefix: `/${name}` } }], backends, ...(policies ? { policies } : {}) });
    const virtualKeys = { store: { sqlite: { path: ':memory:' } }, keys: [{ id: 'mini-only', key: MINI_KEY, models: ['gpt-4o-mini'] }, { id: 'none', key: NONE_KEY, models: ['o3'] }] };
    gw = await startAiGateway([
      // OpenAI first (down), Anthropic as the fallback.
      route('oa', [{ ...ai('openai-down', down.hostPort), weight: FIRST }, ai('claude', up.hostPort, { anthropic: {} })]),
      route('oa-chunked', [{ ...ai('openai-chunked', `127.0.0.1:${chunked.port}`), weight: FIRST }, ai('claude-c', up.hostPort, { anthropic: {} })]),
      // Anthropic first (up, but it cannot carry `n: 3`), OpenAI second.
      route('ao', [{ ...ai('claude-first', up.hostPort, { anthropic: {} }), weight: FIRST }, ai('openai-up', up.hostPort)]),
      // A virtual model: Anthropic target first, OpenAI second.
      route('vm', [ai('vclaude', up.hostPort, { anthropic: {} }), ai('vopenai', up.hostPort)], {
        ai: { routes: { '*': 'completions' }, virtualModels: { smart: { targets: [{ backend: 'vclaude', model: 'claude-sonnet-4-5' }, { backend: 'vopenai', model: 'gpt-4o' }] } } },
      }),
      // No target can carry it.
      route('aa', [ai('claude-a', up.hostPort, { anthropic: {} }), ai('claude-b', up.hostPort, { anthropic: {} })]),
      // Providers pinned to their models; a virtual key limited to one of them.
      route(
        'pinned',
        [
          { ...ai('pinned-claude', up.hostPort, { anthropic: { model: 'claude-haiku-4-5' } }), weight: FIRST },
          ai('pinned-mini', up.hostPort, { openAI: { model: 'gpt-4o-mini' } }),
        ],
        { virtualKeys },
      ),
      route('pinned-down', [{ ...ai('pinned-down', down.hostPort, { openAI: { model: 'gpt-4o-mini' } }), weight: FIRST }, ai('pinned-claude2', up.hostPort, { anthropic: { model: 'claude-haiku-4-5' } })], { virtualKeys }),
    ]);
    base = gw.base;
  });
  after(async () => {
    await gw?.stop();
    await down?.stop();
    await up?.stop();
    await chunked?.close();
  });

  const client = (prefix: string, apiKey = 'sk-client') => new OpenAI({ baseURL: `${base}/${prefix}/v1`, apiKey, maxRetries: 0 });
  const status = async (p: Promise<unknown>): Promise<number> => {
    try {
      await p;
      return 200;
    } catch (err) {
      return (err as { status?: number }).status ?? -1;
    }
  };

  it("OpenAI fails, the Anthropic fallback cannot carry `n: 3` or `logprobs`: the client gets OpenAI's 503, not the fallback's 400", async () => {
    const from = (await up.journal()).length;
    assert.equal(await status(client('oa').chat.completions.create({ model: 'gpt-4o', n: 3, messages: [{ role: 'user', content: 'hello' }] })), 503);
    assert.equal(await status(client('oa').chat.completions.create({ model: 'gpt-4o', logprobs: true, messages: [{ role: 'user', content: 'hello' }] })), 503);
    // A 503 whose body comes in parts (chunked, after a pause) is read whole while the fallback declines.
    const err = await client('oa-chunked')
      .chat.completions.create({ model: 'gpt-4o', n: 3, stream: true, messages: [{ role: 'user', content: 'hello' }] })
      .then(() => undefined, (e: unknown) => e as { status?: number; message?: string });
    assert.equal(err?.status, 503);
    assert.match(String(err?.message), /the service is unavailable/);
    assert.equal((await up.journal()).length, from, 'the fallback was not called');
    const recs = await accessRecords(gw, '/oa/v1/chat/completions', 2);
    assert.equal(recs[0]!['http.status'], 503);
    // Without such fields the fallback serves as before.
    const res = await client('oa').chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(res.choices[0]!.message.content, 'served');
  });

  it('a first pick that cannot carry the request is passed over for one that can', async () => {
    const from = (await up.journal()).length;
    const res = await client('ao').chat.completions.create({ model: 'gpt-4o', n: 3, messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(res.choices[0]!.message.content, 'served');
    const got = (await up.journal()).slice(from);
    assert.equal(got.length, 1);
    assert.equal(got[0]!.path, '/v1/chat/completions', 'served by the OpenAI provider');
    assert.equal(got[0]!.body?.n, 3);
  });

  it('a virtual model moves past a target that cannot carry the request', async () => {
    const from = (await up.journal()).length;
    const res = await client('vm').chat.completions.create({ model: 'smart', logprobs: true, messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(res.choices[0]!.message.content, 'served');
    const got = (await up.journal()).slice(from);
    assert.deepEqual(got.map((e) => [e.path, e.body?.model]), [['/v1/chat/completions', 'gpt-4o']]);
    // A request every target carries goes to the first, as before.
    const plain = (await up.journal()).length;
    await client('vm').chat.completions.create({ model: 'smart', messages: [{ role: 'user', content: 'hello' }] });
    assert.equal((await up.journal()).slice(plain)[0]!.path, '/v1/messages');
  });

  it('no target can carry it: 400 naming the field, no provider called', async () => {
    const from = (await up.journal()).length;
    const err = await client('aa')
      .chat.completions.create({ model: 'claude-sonnet-4-5', n: 3, messages: [{ role: 'user', content: 'hello' }] })
      .then(() => undefined, (e: unknown) => e as { status?: number; message?: string });
    assert.equal(err?.status, 400);
    assert.match(String(err?.message), /`n`/);
    assert.equal((await up.journal()).length, from);
  });

  it("a virtual key's model allow-list: a backend whose model the key may not use is passed by, 403 only when none is allowed", async () => {
    const from = (await up.journal()).length;
    const res = await client('pinned', MINI_KEY).chat.completions.create({ model: 'anything', messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(res.choices[0]!.message.content, 'served');
    const got = (await up.journal()).slice(from);
    assert.deepEqual(got.map((e) => [e.path, e.body?.model]), [['/v1/chat/completions', 'gpt-4o-mini']]);
    // The allowed provider fails: the client gets its 503, not the other's 403.
    assert.equal(await status(client('pinned-down', MINI_KEY).chat.completions.create({ model: 'anything', messages: [{ role: 'user', content: 'hello' }] })), 503);
    // No backend's model allowed: 403.
    assert.equal(await status(client('pinned', NONE_KEY).chat.completions.create({ model: 'anything', messages: [{ role: 'user', content: 'hello' }] })), 403);
    const m = await (await fetch(`${gw.statsUrl}/metrics`)).text();
    assert.match(m, /switchyard_virtual_key_denials_total\{reason="model"\} 1\n/, 'one denial: the request refused, not each backend passed by');
  });
});
