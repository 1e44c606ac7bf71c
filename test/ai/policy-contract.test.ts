// The backend's side of the `AI_POLICY` contract (plugins/lib/llm/contract.ts): route types, applyRequest and
// request guards on the client-format body before translation, response guards on non-streamed answers in the
// client's format. A stand-in policy (harness.ts `testAi`) publishes the runtime, as the `ai` policy does.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { aiRoute, recordedAi, seen, startAiGateway, startMock, startRecorder } from './harness.ts';
import type { AiGateway, Mock, Recorder } from './harness.ts';

describe('ai backend and the AI_POLICY attribute', () => {
  const t = recordedAi((hostPort) => [
    aiRoute('/xlate', { name: 'xlate', provider: { openAI: {} }, hostOverride: hostPort }, { testAi: { routes: { '/v1/messages': 'messages' }, overrides: { temperature: 0.9 } } }),
    aiRoute('/guarded', { name: 'guarded', provider: { anthropic: {} }, hostOverride: hostPort }, { testAi: { rejectWord: 'forbidden', rejectResponseWord: 'REJECTME' } }),
    aiRoute('/checked', { name: 'checked', provider: { anthropic: {} }, hostOverride: hostPort }, { testAi: { rejectResponseWord: 'mock!' } }),
    aiRoute('/pass', { name: 'pass', provider: { anthropic: {} }, hostOverride: hostPort }, { testAi: { routes: { '*': 'passthrough', '/v1/messages': 'messages' } } }),
    aiRoute('/detect', { name: 'detect', provider: { openAI: {} }, hostOverride: hostPort }, { testAi: { routes: { '*': 'detect' } } }),
    aiRoute('/plain', { name: 'plain', provider: { openAI: {} }, hostOverride: hostPort }),
    aiRoute('/cached', { name: 'cached', provider: { anthropic: {} }, hostOverride: hostPort }, { testAi: { promptCaching: { cacheSystem: true, cacheMessages: true, cacheTools: true, minTokens: 0, cacheMessageOffset: 0 } } }),
  ]);
  beforeEach(() => {
    seen.applied.length = 0;
    seen.guardedResponses.length = 0;
  });

  it('calls applyRequest with the client-format body before translating it', async () => {
    const anthropic = new Anthropic({ baseURL: `${t.gw.base}/xlate`, apiKey: 'k', maxRetries: 0 });
    await anthropic.messages.create({ model: 'gpt-4o', max_tokens: 20, system: 'sys', messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(seen.applied.length, 1);
    assert.equal(seen.applied[0]!.format, 'messages');
    assert.equal(seen.applied[0]!.body.system, 'sys', 'the policy saw the Anthropic body, system field and all');
    const wire = t.rec.last().json();
    assert.equal(wire.temperature, 0.9, 'what applyRequest set was translated and sent');
    assert.deepEqual(wire.messages, [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'hello' },
    ]);
  });

  it('answers with the request guard’s reply and sends nothing upstream', async () => {
    const count = t.rec.received.length;
    const res = await fetch(`${t.gw.base}/guarded/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'this is forbidden' }] }),
    });
    assert.equal(res.status, 403);
    assert.equal(await res.text(), 'rejected by request guard');
    assert.equal(t.rec.received.length, count);
  });

  it('runs response guards on the translated (client-format) answer', async () => {
    const client = new OpenAI({ baseURL: `${t.gw.base}/guarded/v1`, apiKey: 'k', maxRetries: 0 });
    const res = await client.chat.completions.create({ model: 'claude-test-1', messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(res.choices[0]!.message.content, 'Hello from the mock!');
    assert.equal(seen.guardedResponses.length, 1);
    assert.equal(seen.guardedResponses[0]!.format, 'completions');
    assert.equal(seen.guardedResponses[0]!.body.object, 'chat.completion', 'the guard saw the OpenAI shape, not Anthropic’s');
  });

  it('answers with the response guard’s reply when it rejects', async () => {
    const res = await fetch(`${t.gw.base}/checked/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-test-1', messages: [{ role: 'user', content: 'hello' }] }),
    });
    assert.equal(res.status, 403);
    assert.equal(await res.text(), 'rejected by response guard');
  });

  it('does not hold streamed answers for response guards', async () => {
    const client = new OpenAI({ baseURL: `${t.gw.base}/checked/v1`, apiKey: 'k', maxRetries: 0 });
    let text = '';
    for await (const c of await client.chat.completions.create({ model: 'claude-test-1', stream: true, messages: [{ role: 'user', content: 'hello' }] })) text += c.choices[0]?.delta.content ?? '';
    assert.equal(text, 'Hello from the mock!');
    assert.equal(seen.guardedResponses.length, 0);
  });

  it('forwards a passthrough route untouched: path, body and query, with provider headers', async () => {
    const body = '{"anything": [1, 2, 3]}';
    const res = await fetch(`${t.gw.base}/pass/v1/files/abc?x=1`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer sk-ant-k' }, body });
    assert.ok(res.status >= 200);
    const wire = t.rec.last();
    assert.equal(wire.url, '/pass/v1/files/abc?x=1');
    assert.equal(wire.body.toString(), body);
    assert.equal(wire.headers['x-api-key'], 'sk-ant-k');
    assert.equal(wire.headers['anthropic-version'], '2023-06-01');
    assert.equal(seen.applied.length, 0, 'no body processing on passthrough');
  });

  it('detects an Anthropic-shaped body on a detect route and translates it', async () => {
    const res = await fetch(`${t.gw.base}/detect/anything`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o', max_tokens: 10, system: 'sys', messages: [{ role: 'user', content: [{ type: 'text', text: 'hello' }] }] }),
    });
    const json = (await res.json()) as { type: string; content: { text: string }[] };
    assert.equal(json.type, 'message');
    assert.equal(json.content[0]!.text, 'Hello from the mock!');
    assert.equal(t.rec.last().url, '/v1/chat/completions');
    assert.equal(seen.applied[0]!.format, 'messages');
  });

  it('detects a Chat Completions body on a detect route', async () => {
    await fetch(`${t.gw.base}/detect/other`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }] }) });
    assert.equal(seen.applied[0]!.format, 'completions');
  });

  it('treats every request as Chat Completions without the attribute', async () => {
    const res = await fetch(`${t.gw.base}/plain/some/other/path`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }] }) });
    assert.equal(res.status, 200);
    assert.equal(t.rec.last().url, '/v1/chat/completions');
  });

  it('puts promptCaching markers on a body translated into Anthropic Messages', async () => {
    const client = new OpenAI({ baseURL: `${t.gw.base}/cached/v1`, apiKey: 'k', maxRetries: 0 });
    await client.chat.completions.create({
      model: 'claude-test-1',
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
      messages: [
        { role: 'system', content: 'a long system prompt' },
        { role: 'user', content: 'first' },
        { role: 'assistant', content: 'answer' },
        { role: 'user', content: 'hello' },
      ],
    });
    const wire = t.rec.last().json() as { system: unknown; messages: { content: unknown }[]; tools: Record<string, unknown>[] };
    assert.deepEqual(wire.system, [{ type: 'text', text: 'a long system prompt', cache_control: { type: 'ephemeral' } }]);
    assert.deepEqual(wire.messages[1]!.content, [{ type: 'text', text: 'answer', cache_control: { type: 'ephemeral' } }]);
    assert.deepEqual(wire.tools[0]!.cache_control, { type: 'ephemeral' });
  });
});
