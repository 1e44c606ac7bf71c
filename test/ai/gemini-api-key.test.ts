// `apiKey` in front of a Gemini client (issue 14): Gemini SDK clients send their key in `x-goog-api-key`, so `apiKey`
// reads it there too (after `x-api-key`, before `Authorization: Bearer`) and removes it before the upstream, which
// gets the key of `backendAuth` instead. Plain fetches in the shape of the Gemini SDK's.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { aiRoute, startAiGateway } from './harness.ts';
import type { AiGateway } from './harness.ts';

const ANSWER = { candidates: [{ content: { role: 'model', parts: [{ text: 'hi' }] }, finishReason: 'STOP', index: 0 }], usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 1, totalTokenCount: 2 } };
const ROUTES = { testAi: { routes: { ':generateContent': 'generateContent', '*': 'completions' } } };

describe('apiKey: a Gemini client key in x-goog-api-key', () => {
  let upstream: TestUpstream;
  let gw: AiGateway;
  before(async () => {
    upstream = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(ANSWER));
    });
    gw = await startAiGateway([
      aiRoute('/g', { name: 'g', provider: { gemini: {} }, hostOverride: `127.0.0.1:${upstream.port}` }, {
        ...ROUTES,
        apiKey: { mode: 'strict', keys: [{ key: 'gw-gemini-client', metadata: { team: 'g' } }] },
        backendAuth: { key: 'AIzaUpstreamKey' },
      }),
    ]);
  });
  after(async () => {
    await gw?.stop();
    await upstream?.close();
  });

  const generate = (headers: Record<string, string>): Promise<Response> =>
    fetch(`${gw.base}/g/v1beta/models/gemini-2.5-flash:generateContent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-client': 'google-genai-sdk/1.0.0', ...headers },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hello' }] }] }),
    });

  it('accepts the gateway key in x-goog-api-key and sends the upstream only the backendAuth key', async () => {
    const before = upstream.received.length;
    const res = await generate({ 'x-goog-api-key': 'gw-gemini-client' });
    assert.equal(res.status, 200, await res.clone().text());
    assert.deepEqual(((await res.json()) as typeof ANSWER).candidates[0]!.content.parts, [{ text: 'hi' }]);
    const got = upstream.received.slice(before);
    assert.equal(got.length, 1);
    assert.equal(got[0]!.headers['x-goog-api-key'], 'AIzaUpstreamKey');
    assert.ok(!JSON.stringify(got[0]!.headers).includes('gw-gemini-client'), 'the client key never reaches the upstream');
  });

  it('refuses a wrong key in x-goog-api-key (401) without reaching the upstream', async () => {
    const before = upstream.received.length;
    const res = await generate({ 'x-goog-api-key': 'not-a-key' });
    assert.equal(res.status, 401);
    assert.equal(upstream.received.length, before);
  });
});
