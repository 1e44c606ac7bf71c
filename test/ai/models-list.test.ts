// `/v1/models` on an `ai` route (issue 13): the gateway answers with the models the route serves (the configured
// models of its `ai` backends plus the `ai` policy's `modelAliases` names), in the OpenAI list shape, or in
// Anthropic's when the client sends `anthropic-version`. Driven by the real `openai` and `@anthropic-ai/sdk` clients.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startAiGateway, startMock } from './harness.ts';
import type { AiGateway, Mock } from './harness.ts';

describe('the models route', () => {
  let mock: Mock;
  let gw: AiGateway;

  before(async () => {
    mock = await startMock();
    const routes = { '/v1/models': 'models', '/v1/messages': 'messages', '*': 'completions' };
    gw = await startAiGateway([
      {
        name: 'team',
        matches: [{ path: { pathPrefix: '/team' } }],
        policies: { ai: { routes, modelAliases: { fast: 'gpt-4o-mini', smart: 'gpt-4.1', 'claude-*': 'gpt-4o' } } },
        backends: [
          { ai: { name: 'primary', provider: { openAI: { model: 'gpt-4o' } }, hostOverride: mock.hostPort }, weight: 1 },
          { ai: { name: 'secondary', provider: { openAI: { model: 'gpt-4.1-mini' } }, hostOverride: mock.hostPort }, weight: 1 },
        ],
      },
      {
        name: 'mixed',
        matches: [{ path: { pathPrefix: '/mixed' } }],
        policies: { ai: { routes, modelAliases: { fast: 'claude-haiku' } } },
        backends: [
          { ai: { name: 'oa', provider: { openAI: { model: 'gpt-4o' } }, hostOverride: mock.hostPort }, weight: 1 },
          { ai: { name: 'an', provider: { anthropic: { model: 'claude-haiku' } }, hostOverride: mock.hostPort }, weight: 1 },
        ],
      },
      {
        name: 'open',
        matches: [{ path: { pathPrefix: '/open' } }],
        policies: { ai: { routes } },
        backends: [{ ai: { name: 'open', provider: { openAI: {} }, hostOverride: mock.hostPort } }],
      },
    ]);
  });
  after(async () => {
    await gw?.stop();
    await mock?.stop();
  });

  it('lists the configured models and alias names to the openai client, without calling the provider', async () => {
    const client = new OpenAI({ baseURL: `${gw.base}/team/v1`, apiKey: 'sk-test', maxRetries: 0 });
    for (let i = 0; i < 4; i++) {
      // Whichever backend the route picks answers with the whole route's list.
      const ids: string[] = [];
      for await (const m of client.models.list()) {
        assert.equal(m.object, 'model');
        assert.equal(m.owned_by, 'openai');
        assert.ok(Number.isInteger(m.created) && m.created > 1_700_000_000, 'created is a Unix time');
        ids.push(m.id);
      }
      assert.deepEqual(ids, ['gpt-4o', 'gpt-4.1-mini', 'fast', 'smart'], 'the wildcard alias is not a model name');
    }
    const raw = await fetch(`${gw.base}/team/v1/models`);
    assert.equal(raw.status, 200);
    assert.equal(raw.headers.get('content-type'), 'application/json');
    const body = (await raw.json()) as { object: string; data: unknown[] };
    assert.equal(body.object, 'list');
    assert.equal(body.data.length, 4);
    assert.equal((await mock.journal()).length, 0, 'the provider was not asked');
  });

  it('answers Anthropic clients in the Anthropic shape', async () => {
    const client = new Anthropic({ baseURL: `${gw.base}/team`, apiKey: 'sk-ant-test', maxRetries: 0 });
    const ids: string[] = [];
    for await (const m of client.models.list()) {
      assert.equal(m.type, 'model');
      assert.equal(m.display_name, m.id);
      assert.ok(!Number.isNaN(Date.parse(m.created_at)), 'created_at is an RFC 3339 time');
      ids.push(m.id);
    }
    assert.deepEqual(ids, ['gpt-4o', 'gpt-4.1-mini', 'fast', 'smart']);

    // Pages, as the SDK walks them with `limit` and `after_id`.
    const pages: string[][] = [];
    for await (const p of (await client.models.list({ limit: 3 })).iterPages()) pages.push(p.data.map((m) => m.id));
    assert.deepEqual(pages, [['gpt-4o', 'gpt-4.1-mini', 'fast'], ['smart']]);
    const raw = await fetch(`${gw.base}/team/v1/models?limit=2`, { headers: { 'anthropic-version': '2023-06-01' } });
    const body = (await raw.json()) as Record<string, unknown>;
    assert.equal(body.has_more, true);
    assert.equal(body.first_id, 'gpt-4o');
    assert.equal(body.last_id, 'gpt-4.1-mini');
    // A limit Anthropic refuses is refused here too, in its error shape.
    for (const limit of ['0', '1001', 'x', '2.5', '-1']) {
      const bad = await fetch(`${gw.base}/team/v1/models?limit=${limit}`, { headers: { 'anthropic-version': '2023-06-01' } });
      assert.equal(bad.status, 400, limit);
      const err = (await bad.json()) as { type: string; error: { type: string; message: string } };
      assert.equal(err.type, 'error');
      assert.equal(err.error.type, 'invalid_request_error');
      assert.match(err.error.message, /limit: must be a whole number from 1 to 1000/);
    }
  });

  it('on a route of several providers, each model is owned by its own provider whichever backend answers', async () => {
    for (let i = 0; i < 12; i++) {
      const res = await fetch(`${gw.base}/mixed/v1/models`);
      assert.equal(res.status, 200);
      const body = (await res.json()) as { data: { id: string; owned_by: string }[] };
      assert.deepEqual(
        body.data.map((m) => [m.id, m.owned_by]),
        [['gpt-4o', 'openai'], ['claude-haiku', 'anthropic'], ['fast', 'openai']],
      );
    }
  });

  it('lists nothing on a route that names no model (the client chooses any)', async () => {
    const res = await fetch(`${gw.base}/open/v1/models`);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { object: 'list', data: [] });
    const an = await fetch(`${gw.base}/open/v1/models`, { headers: { 'anthropic-version': '2023-06-01' } });
    assert.deepEqual(await an.json(), { data: [], has_more: false, first_id: null, last_id: null });
  });

  it('retrieves one model (GET /v1/models/{id}: the SDKs\' models.retrieve), 404 in the client\'s shape for another', async () => {
    const openai = new OpenAI({ baseURL: `${gw.base}/mixed/v1`, apiKey: 'sk-test', maxRetries: 0 });
    const one = await openai.models.retrieve('claude-haiku');
    assert.deepEqual({ id: one.id, object: one.object, owned_by: one.owned_by }, { id: 'claude-haiku', object: 'model', owned_by: 'anthropic' });
    assert.ok(Number.isInteger(one.created));
    await assert.rejects(openai.models.retrieve('gpt-9'), (err: unknown) => {
      assert.ok(err instanceof OpenAI.NotFoundError, String(err));
      assert.match((err as Error).message, /gpt-9/);
      return true;
    });
    const anthropic = new Anthropic({ baseURL: `${gw.base}/team`, apiKey: 'sk-ant-test', maxRetries: 0 });
    const alias = await anthropic.models.retrieve('fast');
    assert.deepEqual({ id: alias.id, type: alias.type, display_name: alias.display_name }, { id: 'fast', type: 'model', display_name: 'fast' });
    await assert.rejects(anthropic.models.retrieve('claude-9'), (err: unknown) => {
      assert.ok(err instanceof Anthropic.NotFoundError, String(err));
      return true;
    });
    // A route that lists nothing accepts any model: it cannot say one is not served.
    const open = await fetch(`${gw.base}/open/v1/models/any-model`);
    assert.equal(open.status, 200);
    assert.equal(((await open.json()) as { id: string }).id, 'any-model');
    assert.equal((await mock.journal()).length, 0, 'the provider was not asked');
  });
});
