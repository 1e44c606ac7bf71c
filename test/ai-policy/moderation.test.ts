// The `openAIModeration` guard (neutral `moderationGuard`) against aimock's OpenAI `/v1/moderations` (a real
// implementation of the API's request and answer shapes) and a recording stand-in for the exact wire body.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { LLMock } from '@copilotkit/aimock';
import { request } from 'undici';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { aiConfig, aiGatewayOptions, GUARD_FAILED, sendJson, startStandIn } from './support.ts';
import type { StandIn } from './support.ts';

const KEY = 'sk-test-moderation-key';

const FLAGGED = {
  flagged: true,
  categories: { violence: true, hate: false },
  category_scores: { violence: 0.97, hate: 0.01 },
};

describe('openAIModeration guard', () => {
  let gw: RunningGateway;
  let port: number;
  let mock: LLMock;
  let recorder: StandIn;

  before(async () => {
    mock = await LLMock.create({ auth: { apiKeys: [KEY] } });
    mock.onModerate(/hurt someone/, FLAGGED);
    recorder = await startStandIn((_req, res) => sendJson(res, 200, { id: 'modr-1', model: 'omni-moderation-latest', results: [{ flagged: false, categories: {} }] }));
    port = await freePort();
    const dead = await freePort();
    const auth = { backendAuth: { key: KEY } };
    gw = await startGateway(
      aiConfig(port, [
        { name: 'guarded', policies: { ai: { promptGuard: { request: [{ openAIModeration: { host: mock.url, policies: auth }, rejection: { status: 400, body: 'moderated' } }] } } } },
        { name: 'neutral', policies: { ai: { promptGuard: { request: [{ moderationGuard: { host: mock.url, policies: auth } }] } } } },
        { name: 'responses', policies: { ai: { promptGuard: { response: [{ openAIModeration: { host: mock.url, policies: auth } }] } } } },
        { name: 'wrong-key', policies: { ai: { promptGuard: { request: [{ openAIModeration: { host: mock.url, policies: { backendAuth: { key: 'sk-wrong' } } } }] } } } },
        { name: 'down', policies: { ai: { promptGuard: { request: [{ openAIModeration: { host: `127.0.0.1:${dead}`, policies: auth } }] } } } },
        { name: 'recorded-default', policies: { ai: { promptGuard: { request: [{ openAIModeration: { host: recorder.url, policies: auth } }] } } } },
        { name: 'recorded', policies: { ai: { promptGuard: { request: [{ openAIModeration: { host: recorder.url, model: 'text-moderation-stable', policies: auth } }] } } } },
      ]),
      aiGatewayOptions,
    );
  });

  after(async () => {
    await gw?.stop();
    await mock?.stop();
    await recorder?.close();
  });

  async function post(path: string, content: string, headers: Record<string, string> = {}) {
    const res = await request(`${gw.url(port)}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'system', content: 'be nice' }, { role: 'user', content }] }),
    });
    return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
  }

  it('sends POST /v1/moderations {"input":[texts],"model":…} with the backendAuth key', async () => {
    const res = await post('/recorded/v1/chat/completions', 'hello there');
    assert.equal(res.status, 200, res.text);
    const call = recorder.received.at(-1)!;
    assert.equal(call.method, 'POST');
    assert.equal(call.url, '/v1/moderations');
    assert.equal(call.headers.authorization, `Bearer ${KEY}`);
    assert.equal(call.headers['content-type'], 'application/json');
    assert.deepEqual(call.body, { input: ['be nice', 'hello there'], model: 'text-moderation-stable' });
  });

  it('an unflagged prompt passes; the default model is omni-moderation-latest', async () => {
    const before = mock.getRequests().length;
    const res = await post('/guarded/v1/chat/completions', 'what a nice day');
    assert.equal(res.status, 200, res.text);
    const entry = mock.getRequests()[before]!;
    assert.equal(entry.path, '/v1/moderations');
    assert.equal(entry.response.status, 200);
    assert.ok(entry.headers.authorization, 'aimock checked the key (it redacts it in its journal)');
    const recorded = await post('/recorded-default/v1/chat/completions', 'hello');
    assert.equal(recorded.status, 200);
    assert.equal((recorder.received.at(-1)!.body as { model: string }).model, 'omni-moderation-latest');
  });

  it('a flagged prompt is rejected with the entry\'s rejection', async () => {
    const res = await post('/guarded/v1/chat/completions', 'I want to hurt someone');
    assert.equal(res.status, 400);
    assert.equal(res.text, 'moderated');
  });

  it('the neutral name `moderationGuard` is the same guard (default rejection)', async () => {
    const res = await post('/neutral/v1/chat/completions', 'I want to hurt someone');
    assert.equal(res.status, 403);
    assert.equal(res.text, 'The request was rejected due to inappropriate content');
  });

  it('checks model output too when listed under `response`', async () => {
    const ok = await post('/responses/v1/chat/completions', 'hi', { 'x-test-response': JSON.stringify({ choices: [{ message: { role: 'assistant', content: 'fine' } }] }) });
    assert.equal(ok.status, 200);
    const bad = await post('/responses/v1/chat/completions', 'hi', { 'x-test-response': JSON.stringify({ choices: [{ message: { role: 'assistant', content: 'go hurt someone' } }] }) });
    assert.equal(bad.status, 403);
  });

  it('a refused key or an unreachable endpoint fails closed: 503', async () => {
    for (const path of ['/wrong-key/x', '/down/x']) {
      const res = await post(path, 'hello');
      assert.equal(res.status, 503, path);
      assert.deepEqual(JSON.parse(res.text), GUARD_FAILED);
      assert.equal(res.headers['content-type'], 'application/json');
    }
  });
});
