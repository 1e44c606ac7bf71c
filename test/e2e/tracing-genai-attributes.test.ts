// The GenAI CLIENT span's request and response attributes, read back from a real Jaeger (ADR 0180): what the client
// asked for (`gen_ai.request.max_tokens`, `temperature`, `top_p`, `top_k`, penalties, stop sequences, seed, choice
// count) and what the provider answered (`gen_ai.response.id`, `gen_ai.response.finish_reasons`), for whole and
// streamed answers, on the untouched fast path and on a route whose `ai` policy parses the body; and a `passthrough`
// call's span (provider, model from the path or body, usage).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { locateJaeger, startJaeger, tag } from '../helpers/jaeger.ts';
import type { JaegerSpan, RunningJaeger } from '../helpers/jaeger.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';

// Spans leave 50 ms after their batch's first, not a second (OTEL_BSP_SCHEDULE_DELAY): each test waits for its trace.
process.env.OTEL_BSP_SCHEDULE_DELAY = '50';

const found = locateJaeger();
const traceparent = (trace: string): string => `00-${trace}-00f067aa0ba902b7-01`;
const sse = (events: { event?: string; data: unknown }[]): string => events.map((e) => `${e.event ? `event: ${e.event}\n` : ''}data: ${typeof e.data === 'string' ? e.data : JSON.stringify(e.data)}\n\n`).join('');

function chatAnswer(body: Record<string, unknown>): { type: string; text: string } {
  if (body.stream === true) {
    const chunk = (choices: unknown[], usage?: unknown): unknown => ({ id: 'chatcmpl-s1', object: 'chat.completion.chunk', model: 'gpt-4o-mini', choices, ...(usage ? { usage } : {}) });
    return {
      type: 'text/event-stream',
      text: sse([
        { data: chunk([{ index: 0, delta: { role: 'assistant', content: 'hi' }, finish_reason: null }]) },
        { data: chunk([{ index: 0, delta: {}, finish_reason: 'length' }]) },
        { data: chunk([], { prompt_tokens: 9, completion_tokens: 3, total_tokens: 12 }) },
        { data: '[DONE]' },
      ]),
    };
  }
  const choice = (index: number, reason: string): unknown => ({ index, message: { role: 'assistant', content: 'hi' }, finish_reason: reason });
  return {
    type: 'application/json',
    text: JSON.stringify({ id: 'chatcmpl-w1', object: 'chat.completion', created: 1, model: 'gpt-4o-mini', choices: [choice(0, 'stop'), choice(1, 'length')], usage: { prompt_tokens: 9, completion_tokens: 6, total_tokens: 15 } }),
  };
}

function messagesAnswer(body: Record<string, unknown>): { type: string; text: string } {
  if (body.stream === true) {
    return {
      type: 'text/event-stream',
      text: sse([
        { event: 'message_start', data: { type: 'message_start', message: { id: 'msg_s1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [], stop_reason: null, usage: { input_tokens: 11, output_tokens: 1 } } } },
        { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } } },
        { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'hi' } } },
        { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
        { event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: 'stop_sequence', stop_sequence: 'END' }, usage: { output_tokens: 4 } } },
        { event: 'message_stop', data: { type: 'message_stop' } },
      ]),
    };
  }
  return {
    type: 'application/json',
    text: JSON.stringify({ id: 'msg_w1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: 'hi' }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 11, output_tokens: 4 } }),
  };
}

function geminiAnswer(): { type: string; text: string } {
  const candidate = { index: 0, content: { role: 'model', parts: [{ text: 'hi' }] }, finishReason: 'MAX_TOKENS' };
  return { type: 'application/json', text: JSON.stringify({ candidates: [candidate], usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 2, totalTokenCount: 5 }, modelVersion: 'gemini-2.5-flash', responseId: 'g-1' }) };
}

describe('GenAI request and response attributes on the call span, in Jaeger', { skip: 'skip' in found ? found.skip : false }, () => {
  let jaeger: RunningJaeger;
  let upstream: TestUpstream;
  let gw: RunningGateway;
  let base: string;

  before(async () => {
    jaeger = await startJaeger(found as { bin: string });
    upstream = await startUpstream((req, res, raw) => {
      const body = raw.length > 0 ? (JSON.parse(raw.toString('utf8')) as Record<string, unknown>) : {};
      if (req.url!.endsWith('/audio/speech') || req.url!.endsWith('/html/chat/completions')) {
        // An answer not read for usage (audio), and a provider's error page: neither JSON nor a stream.
        const status = req.url!.endsWith('/audio/speech') ? 200 : 502;
        res.writeHead(status, { 'content-type': status === 200 ? 'audio/mpeg' : 'text/html' }).end('<html>bad gateway</html>');
        return;
      }
      const answer = req.url!.endsWith('/chat/completions') ? chatAnswer(body) : req.url!.endsWith('/messages') ? messagesAnswer(body) : req.url!.includes(':generateContent') ? geminiAnswer() : undefined;
      if (answer === undefined) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"no such path"}}');
        return;
      }
      res.writeHead(200, { 'content-type': answer.type }).end(answer.text);
    });
    const port = await freePort();
    const ai = (name: string, provider: object): object => ({ ai: { name, provider, hostOverride: `127.0.0.1:${upstream.port}` } });
    gw = await startGateway({
      config: { logging: { format: 'json' }, tracing: { otlpEndpoint: jaeger.otlpHttp, otlpProtocol: 'http', serviceName: 'switchyard-genai' } },
      binds: [
        {
          port,
          listeners: [
            {
              name: 'main',
              routes: [
                { name: 'openai', matches: [{ path: { pathPrefix: '/v1/chat' } }], policies: { backendAuth: { key: 'sk-test' } }, backends: [ai('openai', { openAI: {} })] },
                {
                  name: 'policy',
                  matches: [{ path: { pathPrefix: '/policy/v1/chat' } }],
                  policies: { backendAuth: { key: 'sk-test' }, ai: { defaults: { temperature: 0.25 } } },
                  backends: [ai('openai-policy', { openAI: {} })],
                },
                {
                  name: 'passthrough',
                  matches: [{ path: { pathPrefix: '/pt/' } }],
                  policies: { backendAuth: { key: 'sk-test' }, ai: { routes: { '*': 'passthrough' } } },
                  backends: [ai('openai-passthrough', { openAI: {} })],
                },
                {
                  name: 'gemini-passthrough',
                  matches: [{ path: { pathPrefix: '/v1beta/' } }],
                  policies: { backendAuth: { key: 'g-key' }, ai: { routes: { '*': 'passthrough' } } },
                  backends: [ai('gemini-passthrough', { gemini: {} })],
                },
                { name: 'claude', matches: [{ path: { pathPrefix: '/v1/messages' } }], policies: { backendAuth: { key: 'sk-test' } }, backends: [ai('anthropic', { anthropic: {} })] },
              ],
            },
          ],
        },
      ],
    });
    base = `http://127.0.0.1:${port}`;
  });

  after(async () => {
    await gw?.stop();
    await upstream?.close();
    await jaeger?.stop();
  });

  /** The trace's GenAI span once it has ended (its usage written). */
  const callSpan = async (trace: string): Promise<JaegerSpan> => {
    const stored = await jaeger.waitForTrace(trace, (t) => t.spans.some((s) => tag(s, 'gen_ai.provider.name') !== undefined && tag(s, 'gen_ai.usage.output_tokens') !== undefined));
    return stored.spans.find((s) => tag(s, 'gen_ai.provider.name') !== undefined)!;
  };
  /** An array attribute as Jaeger stores it (OTLP arrays become JSON text). */
  const list = (span: JaegerSpan, key: string): unknown => {
    const v = tag(span, key);
    return typeof v === 'string' ? JSON.parse(v) : v;
  };
  /** The answer's id and finish reasons on the span. */
  const outcome = (span: JaegerSpan): { id: unknown; reasons: unknown } => ({ id: tag(span, 'gen_ai.response.id'), reasons: list(span, 'gen_ai.response.finish_reasons') });
  const openai = (trace: string, prefix = ''): OpenAI => new OpenAI({ apiKey: 'client-key', baseURL: `${base}${prefix}/v1`, maxRetries: 0, defaultHeaders: { traceparent: traceparent(trace) } });
  const anthropic = (trace: string): Anthropic => new Anthropic({ apiKey: 'client-key', baseURL: base, maxRetries: 0, defaultHeaders: { traceparent: traceparent(trace) } });

  it('an OpenAI chat call on the fast path: its sampling settings, the answer id and every choice finish reason', async () => {
    const trace = '8bf92f3577b34da6a3ce929d0e0e4701';
    const answer = await openai(trace).chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'hi' }],
      max_completion_tokens: 50,
      temperature: 0.5,
      top_p: 0.9,
      frequency_penalty: 0.4,
      presence_penalty: 0.1,
      stop: ['END', 'STOP'],
      seed: 7,
      n: 2,
    });
    assert.equal(answer.id, 'chatcmpl-w1');
    const span = await callSpan(trace);
    assert.equal(tag(span, 'gen_ai.request.max_tokens'), 50);
    assert.equal(tag(span, 'gen_ai.request.temperature'), 0.5);
    assert.equal(tag(span, 'gen_ai.request.top_p'), 0.9);
    assert.equal(tag(span, 'gen_ai.request.frequency_penalty'), 0.4);
    assert.equal(tag(span, 'gen_ai.request.presence_penalty'), 0.1);
    assert.deepEqual(list(span, 'gen_ai.request.stop_sequences'), ['END', 'STOP']);
    assert.equal(tag(span, 'gen_ai.request.seed'), 7);
    assert.equal(tag(span, 'gen_ai.request.choice.count'), 2);
    assert.deepEqual(outcome(span), { id: 'chatcmpl-w1', reasons: ['stop', 'length'] });
  });

  it('an OpenAI chat stream: the id of its chunks and the finish reason of its last choice chunk', async () => {
    const trace = '8bf92f3577b34da6a3ce929d0e0e4702';
    const stream = await openai(trace).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 20, stream: true });
    for await (const chunk of stream) void chunk;
    const span = await callSpan(trace);
    assert.equal(tag(span, 'gen_ai.request.max_tokens'), 20);
    assert.equal(tag(span, 'gen_ai.request.temperature'), undefined);
    assert.equal(tag(span, 'gen_ai.request.choice.count'), undefined);
    assert.deepEqual(outcome(span), { id: 'chatcmpl-s1', reasons: ['length'] });
  });

  it("a route whose ai policy parses the body: the settings as sent, the policy's default among them", async () => {
    const trace = '8bf92f3577b34da6a3ce929d0e0e4703';
    await openai(trace, '/policy').chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], top_p: 0.5 });
    const span = await callSpan(trace);
    assert.equal(tag(span, 'gen_ai.request.temperature'), 0.25);
    assert.equal(tag(span, 'gen_ai.request.top_p'), 0.5);
    assert.equal(tag(span, 'gen_ai.response.id'), 'chatcmpl-w1');
  });

  it('an Anthropic message, whole and streamed: top_k, stop sequences, the message id and its stop reason', async () => {
    const trace = '8bf92f3577b34da6a3ce929d0e0e4704';
    // Sampling settings the installed SDK's types leave out: sent as given.
    const sampling = { top_k: 5, temperature: 1, stop_sequences: ['END'] };
    await anthropic(trace).messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }], ...sampling });
    const whole = await callSpan(trace);
    assert.equal(tag(whole, 'gen_ai.request.max_tokens'), 64);
    assert.equal(tag(whole, 'gen_ai.request.top_k'), 5);
    assert.equal(tag(whole, 'gen_ai.request.temperature'), 1);
    assert.deepEqual(list(whole, 'gen_ai.request.stop_sequences'), ['END']);
    assert.deepEqual(outcome(whole), { id: 'msg_w1', reasons: ['end_turn'] });

    const streamTrace = '8bf92f3577b34da6a3ce929d0e0e4705';
    const stream = await anthropic(streamTrace).messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'hi' }] });
    for await (const event of stream) void event;
    const streamed = await callSpan(streamTrace);
    assert.deepEqual(outcome(streamed), { id: 'msg_s1', reasons: ['stop_sequence'] });
  });

  it('a passthrough chat call: a span with the provider, the model and settings its body names, the usage and outcome of its answer', async () => {
    const trace = '8bf92f3577b34da6a3ce929d0e0e4706';
    await openai(trace, '/pt').chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], temperature: 0.7 });
    const span = await callSpan(trace);
    assert.equal(span.operationName.startsWith('chat'), true);
    assert.equal(tag(span, 'gen_ai.operation.name'), 'chat');
    assert.equal(tag(span, 'gen_ai.provider.name'), 'openai');
    assert.equal(tag(span, 'gen_ai.request.model'), 'gpt-4o-mini');
    assert.equal(tag(span, 'gen_ai.request.temperature'), 0.7);
    assert.equal(tag(span, 'gen_ai.response.model'), 'gpt-4o-mini');
    assert.equal(tag(span, 'gen_ai.usage.input_tokens'), 9);
    assert.equal(tag(span, 'gen_ai.usage.output_tokens'), 6);
    assert.deepEqual(outcome(span), { id: 'chatcmpl-w1', reasons: ['stop', 'length'] });

    const streamTrace = '8bf92f3577b34da6a3ce929d0e0e4708';
    const stream = await openai(streamTrace, '/pt').chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } });
    for await (const chunk of stream) void chunk;
    const streamed = await callSpan(streamTrace);
    assert.equal(tag(streamed, 'gen_ai.request.stream'), true);
    assert.equal(tag(streamed, 'gen_ai.usage.output_tokens'), 3);
    assert.deepEqual(outcome(streamed), { id: 'chatcmpl-s1', reasons: ['length'] });
  });

  it("a passthrough Gemini call: the model its path names, the provider's OTel name, usage and finish reason", async () => {
    const trace = '8bf92f3577b34da6a3ce929d0e0e4707';
    const body = JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }], generationConfig: { maxOutputTokens: 2, topK: 3 } });
    const r = await fetch(`${base}/v1beta/models/gemini-2.5-flash:generateContent`, { method: 'POST', headers: { 'content-type': 'application/json', traceparent: traceparent(trace) }, body });
    assert.equal(r.status, 200);
    await r.arrayBuffer();
    const span = await callSpan(trace);
    assert.equal(tag(span, 'gen_ai.operation.name'), 'generate_content');
    assert.equal(tag(span, 'gen_ai.provider.name'), 'gcp.gemini');
    assert.equal(tag(span, 'gen_ai.request.model'), 'gemini-2.5-flash');
    assert.equal(tag(span, 'gen_ai.request.max_tokens'), 2);
    assert.equal(tag(span, 'gen_ai.request.top_k'), 3);
    assert.equal(tag(span, 'gen_ai.usage.output_tokens'), 2);
    assert.deepEqual(outcome(span), { id: 'g-1', reasons: ['MAX_TOKENS'] });
  });

  it("a passthrough call whose answer is not read (an HTML error page): its span still ends, failed by the status", async () => {
    const trace = '8bf92f3577b34da6a3ce929d0e0e4709';
    const r = await fetch(`${base}/pt/html/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', traceparent: traceparent(trace) }, body: '{"model":"gpt-4o-mini","messages":[]}' });
    assert.equal(r.status, 502);
    await r.arrayBuffer();
    const stored = await jaeger.waitForTrace(trace, (t) => t.spans.some((s) => tag(s, 'gen_ai.provider.name') !== undefined));
    const span = stored.spans.find((s) => tag(s, 'gen_ai.provider.name') !== undefined)!;
    assert.equal(tag(span, 'gen_ai.request.model'), 'gpt-4o-mini');
    assert.equal(tag(span, 'error.type'), '502');
    assert.equal(tag(span, 'gen_ai.usage.output_tokens'), undefined);
  });
});
