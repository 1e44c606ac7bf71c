// The `openAIModeration` guard (neutral `moderationGuard`) against aimock's OpenAI `/v1/moderations` (a real
// implementation of the API's request and answer shapes) and a recording stand-in for the exact wire body.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { LLMock } from '@copilotkit/aimock';
import { request } from 'undici';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { moderationFlagged } from '../../plugins/guards/openai-moderation/openai-moderation.ts';
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
  let inFlight = 0;
  let maxInFlight = 0;

  before(async () => {
    mock = await LLMock.create({ auth: { apiKeys: [KEY] } });
    mock.onModerate(/hurt someone/, FLAGGED);
    // Flags an image whose URL names bad.png; answers 400 `too_many_images` to an input with more than one image, as
    // the endpoint does.
    // An image URL naming slow.png is answered after 50 ms (to see how many calls are in flight at once), held.png
    // after 400 ms; one naming fail.png gets a 500 at once.
    recorder = await startStandIn((_req, res, body) => {
      const input = (body as { input: unknown[] }).input;
      const images = input.filter((i) => (i as { type?: string }).type === 'image_url').length;
      if (images > 1) return sendJson(res, 400, { error: { message: `Number of images (${images}) exceeds maximum of 1`, code: 'too_many_images' } });
      if (JSON.stringify(input).includes('fail.png')) return sendJson(res, 500, { error: { message: 'internal error', type: 'server_error' } });
      const answer = () => sendJson(res, 200, { id: 'modr-1', model: 'omni-moderation-latest', results: [{ flagged: JSON.stringify(input).includes('bad.png'), categories: {} }] });
      if (JSON.stringify(input).includes('held.png')) return void setTimeout(answer, 400);
      if (!JSON.stringify(input).includes('slow.png')) return answer();
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      setTimeout(() => {
        inFlight--;
        answer();
      }, 50);
    });
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

  it('an omni model judges the request\'s images, one call each; a flagged image rejects; text models get none (ADR 0181)', async () => {
    const send = async (path: string, content: unknown[]) => {
      const res = await request(`${gw.url(port)}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content }] }) });
      return { status: res.statusCode, text: await res.body.text() };
    };
    const png = 'data:image/png;base64,iVBORw0KGgo=';
    const parts = [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url: png } }, { type: 'image_url', image_url: { url: 'https://img.example/ok.png' } }];
    let from = recorder.received.length;
    assert.equal((await send('/recorded-default/v1/chat/completions', parts)).status, 200);
    const inputs = recorder.received.slice(from).map((r) => (r.body as { input: unknown }).input);
    assert.deepEqual(inputs, [['look'], [{ type: 'image_url', image_url: { url: png } }], [{ type: 'image_url', image_url: { url: 'https://img.example/ok.png' } }]]);
    // An image alone is judged; a flagged one rejects.
    const bad = [{ type: 'image_url', image_url: { url: 'https://img.example/bad.png' } }];
    assert.equal((await send('/recorded-default/v1/chat/completions', bad)).status, 403);
    assert.equal((await send('/recorded-default/v1/chat/completions', [...parts, ...bad])).status, 403);
    // A text model sees the text only.
    from = recorder.received.length;
    assert.equal((await send('/recorded/v1/chat/completions', [...parts, ...bad])).status, 200);
    assert.deepEqual(recorder.received.slice(from).map((r) => (r.body as { input: unknown }).input), [['look']]);
    // Image calls run four at a time.
    const slow = Array.from({ length: 12 }, (_, i) => ({ type: 'image_url', image_url: { url: `https://img.example/slow.png?${i}` } }));
    assert.equal((await send('/recorded-default/v1/chat/completions', slow)).status, 200);
    assert.equal(maxInFlight, 4);
    // More images than the bound fail closed.
    const many = Array.from({ length: 17 }, () => ({ type: 'image_url', image_url: { url: png } }));
    from = recorder.received.length;
    assert.equal((await send('/recorded-default/v1/chat/completions', many)).status, 503);
    assert.equal(recorder.received.length, from);
  });

  it('a flagged image rejects although another image call failed; no call starts after a failure', async () => {
    const send = async (content: unknown[]) => {
      const res = await request(`${gw.url(port)}/recorded-default/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content }] }) });
      return { status: res.statusCode, text: await res.body.text() };
    };
    const image = (url: string) => ({ type: 'image_url', image_url: { url } });
    // The failure comes first, the flag 50 ms later: the request was found flagged, so it gets the rejection.
    assert.equal((await send([image('https://img.example/fail.png'), image('https://img.example/bad.png?slow.png')])).status, 403);
    // A failure stops the judging: the calls in flight finish, no other starts (each would be paid for).
    const from = recorder.received.length;
    const res = await send([image('https://img.example/fail.png?1'), ...Array.from({ length: 11 }, (_, i) => image(`https://img.example/held.png?${i}`))]);
    assert.equal(res.status, 503, res.text);
    await new Promise((r) => setTimeout(r, 600));
    assert.equal(recorder.received.length - from, 4);
  });

  it('an answer that decides nothing fails the guard (ADR 0181): no result, a `flagged` that is no boolean', () => {
    assert.equal(moderationFlagged({ results: [{ flagged: false }, { flagged: true }] }), true);
    assert.equal(moderationFlagged({ results: [{ flagged: false }] }), false);
    assert.throws(() => moderationFlagged({ results: [] }), /no results/);
    assert.throws(() => moderationFlagged({ results: [{ flagged: 'true' }] }), /no boolean `flagged`/);
    assert.throws(() => moderationFlagged({ results: [{}] }), /no boolean `flagged`/);
    assert.throws(() => moderationFlagged({ error: 'x' }), /no `results` list/);
  });
});
