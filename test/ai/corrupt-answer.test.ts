// A provider's compressed answer that does not decode (a corrupt gzip body): the client gets a 502 in its API's
// error shape, not 200 headers and then a cut connection (ADR 0199). Real `openai` client, a loopback provider.
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { aiRoute, rejection, sdkClients, startAiGateway } from './harness.ts';
import type { AiGateway } from './harness.ts';

const ANSWER = JSON.stringify({ id: 'c1', object: 'chat.completion', created: 1, model: 'gpt-x', choices: [{ index: 0, message: { role: 'assistant', content: 'fine' }, finish_reason: 'stop' }], usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } });

describe('a corrupt compressed answer', () => {
  /** Whether the provider's gzip body is cut to its header and garbage. */
  let corrupt = true;
  let provider: TestUpstream;
  let gw: AiGateway;
  before(async () => {
    provider = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      const good = gzipSync(ANSWER);
      // The gzip header, then bytes that are no deflate stream.
      res.end(corrupt ? Buffer.concat([good.subarray(0, 10), Buffer.alloc(40, 0xff)]) : good);
    });
    gw = await startAiGateway([aiRoute('/oa', { name: 'oa', provider: { openAI: {} }, hostOverride: `127.0.0.1:${provider.port}` })]);
  });
  after(async () => {
    await gw?.stop();
    await provider?.close();
  });
  const client = (): OpenAI => sdkClients(() => gw.base, 'sk-test').openai('/oa');

  it('passed through: 502 with the reason, not a cut connection', async () => {
    corrupt = true;
    const err = await rejection(client().chat.completions.create({ model: 'gpt-x', messages: [{ role: 'user', content: 'hi' }] }), OpenAI.APIError);
    assert.equal(err.status, 502);
    assert.match(err.message, /failed to process LLM response/);
  });

  it('a good compressed answer still comes through decoded', async () => {
    corrupt = false;
    const res = await client().chat.completions.create({ model: 'gpt-x', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(res.choices[0]!.message.content, 'fine');
  });
});
