// Response guards on streamed answers (`promptGuard.streaming: Enabled`, plugins/backends/ai/stream-guard.ts): the
// real `ai` policy with regex guards, aimock as the provider (text split into 3-character deltas, so a number to mask
// spans several events), and the real OpenAI and Anthropic SDKs streaming. A loopback stand-in provider controls
// timing and size where aimock cannot (held until the end, too large, the client leaving).
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { Readable } from 'node:stream';
import { request } from 'undici';
import type { Exchange, Reply } from 'switchyard/sdk';
import { guardStreamedReply } from '../../plugins/backends/ai/stream-guard.ts';
import { guardMessages, responseSlots, writeBack } from '../../plugins/lib/llm-guard/messages.ts';
import type { AiPolicyRuntime, LlmRouteType } from '../../plugins/lib/llm/contract.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { accessRecords, aiRoute, startAiGateway, startMock } from './harness.ts';
import type { AiGateway, Mock } from './harness.ts';

const SECRET = 'your ssn is 123-45-6789, mail bob@example.com';
const MASKED = 'your ssn is <SSN>, mail <EMAIL_ADDRESS>';

const FIXTURES = [
  { match: { userMessage: 'hello' }, response: { content: 'Hello from the mock!', usage: { prompt_tokens: 11, completion_tokens: 5, input_tokens: 11, output_tokens: 5 } }, chunkSize: 3 },
  { match: { userMessage: 'secret' }, response: { content: SECRET, usage: { prompt_tokens: 8, completion_tokens: 12, input_tokens: 8, output_tokens: 12 } }, chunkSize: 3 },
  { match: { userMessage: 'forbidden' }, response: { content: 'this is FORBIDDEN text' }, chunkSize: 3 },
  { match: { userMessage: 'weather' }, response: { toolCalls: [{ name: 'get_weather', arguments: '{"city":"Paris"}' }] } },
  { match: {}, response: { content: 'default reply' } },
];

const ROUTES = { '/v1/chat/completions': 'completions', '/v1/messages': 'messages', '/v1/responses': 'responses', ':generateContent': 'generateContent', ':streamGenerateContent': 'generateContent' };

/** Mask SSNs and emails, reject FORBIDDEN with 451; streams guarded unless `streaming` says otherwise. */
function guarded(streaming: 'Enabled' | 'Disabled' | undefined): Record<string, unknown> {
  return {
    ai: {
      routes: ROUTES,
      promptGuard: {
        response: [
          { regex: { rules: [{ builtin: 'ssn' }, { builtin: 'email' }] } },
          { regex: { action: 'reject', rules: [{ pattern: 'FORBIDDEN' }] }, rejection: { status: 451, body: 'not in this stream', headers: { set: { 'x-guard': 'stream' } } } },
        ],
        ...(streaming ? { streaming } : {}),
      },
    },
  };
}

const sse = (event: string, data: unknown): string => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
const HEAD = [
  sse('message_start', { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', content: [], model: 'claude-x', stop_reason: null, usage: { input_tokens: 9, output_tokens: 1 } } }),
  sse('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
  sse('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'call 555-' } }),
].join('');
const TAIL = [
  sse('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: '12-3456 now' } }),
  sse('content_block_stop', { type: 'content_block_stop', index: 0 }),
  sse('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 2 } }),
  sse('message_stop', { type: 'message_stop' }),
].join('');

describe('response guards on streams (promptGuard.streaming: Enabled)', () => {
  let mock: Mock;
  let upstream: TestUpstream;
  let gw: AiGateway;
  let mode: 'gated' | 'huge' | 'endless' | 'broken' = 'gated';
  let release: () => void = () => undefined;
  let gate: Promise<void> = Promise.resolve();
  let upstreamClosed: Promise<void> = Promise.resolve();

  before(async () => {
    mock = await startMock(FIXTURES);
    upstream = await startUpstream((_req, res: ServerResponse) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (mode === 'gated') {
        res.write(HEAD);
        void gate.then(() => res.end(TAIL));
      } else if (mode === 'huge') {
        res.write(HEAD);
        const delta = sse('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'x'.repeat(64 * 1024) } });
        let sent = 0;
        const more = (): void => {
          while (sent < 9 * 1024 * 1024) {
            sent += delta.length;
            if (!res.write(delta)) return void res.once('drain', more);
          }
          res.end(TAIL);
        };
        res.on('close', () => (sent = Infinity));
        more();
      } else if (mode === 'broken') {
        res.write(HEAD);
        setTimeout(() => res.destroy(), 50);
      } else {
        res.write(HEAD);
        upstreamClosed = new Promise((resolve) => res.on('close', () => resolve()));
        const timer = setInterval(() => res.write(sse('ping', { type: 'ping' })), 20);
        res.on('close', () => clearInterval(timer));
      }
    });
    const ssnGuard = { ai: { routes: ROUTES, promptGuard: { response: [{ regex: { rules: [{ builtin: 'ssn' }] } }], streaming: 'Enabled' } } };
    gw = await startAiGateway([
      aiRoute('/oa', { name: 'oa', provider: { openAI: {} }, hostOverride: mock.hostPort }, guarded('Enabled')),
      aiRoute('/an', { name: 'an', provider: { anthropic: {} }, hostOverride: mock.hostPort }, guarded('Enabled')),
      aiRoute('/br', { name: 'br', provider: { bedrock: { region: 'us-east-1' } }, hostOverride: mock.hostPort }, {
        backendAuth: { aws: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret', region: 'us-east-1', serviceName: 'bedrock' } },
        ...guarded('Enabled'),
      }),
      aiRoute('/gm', { name: 'gm', provider: { gemini: {} }, hostOverride: mock.hostPort }, guarded('Enabled')),
      aiRoute('/off', { name: 'off', provider: { openAI: {} }, hostOverride: mock.hostPort }, guarded(undefined)),
      aiRoute('/stand', { name: 'stand', provider: { anthropic: {} }, hostOverride: `127.0.0.1:${upstream.port}` }, ssnGuard),
      aiRoute('/slow', { name: 'slow', provider: { anthropic: {} }, hostOverride: `127.0.0.1:${upstream.port}` }, { ...ssnGuard, timeout: { requestTimeout: '300ms' } }),
      aiRoute('/failing', { name: 'failing', provider: { openAI: {} }, hostOverride: mock.hostPort }, {
        ai: { promptGuard: { response: [{ webhook: { target: { host: '127.0.0.1:1' } } }], streaming: 'Enabled' } },
      }),
    ]);
  });
  after(async () => {
    release();
    await gw?.stop();
    await upstream?.close();
    await mock?.stop();
  });

  const openai = (prefix: string) => new OpenAI({ baseURL: `${gw.base}${prefix}/v1`, apiKey: 'k', maxRetries: 0 });
  const anthropic = (prefix: string) => new Anthropic({ baseURL: `${gw.base}${prefix}`, apiKey: 'k', maxRetries: 0 });

  async function chat(prefix: string, content: string) {
    const stream = await openai(prefix).chat.completions.create({ model: 'gpt-4o', stream: true, messages: [{ role: 'user', content }] });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const c of stream) chunks.push(c);
    return { chunks, text: chunks.map((c) => c.choices[0]?.delta.content ?? '').join('') };
  }

  describe('OpenAI client, OpenAI provider', () => {
    it('pass: the stream arrives unchanged, event by event, usage chunk included', async () => {
      const { chunks, text } = await chat('/oa', 'hello');
      assert.equal(text, 'Hello from the mock!');
      assert.ok(chunks.filter((c) => c.choices[0]?.delta.content).length >= 5, 'still many text deltas');
      assert.equal(chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0]?.finish_reason, 'stop');
      assert.deepEqual(chunks[chunks.length - 1]!.usage, { prompt_tokens: 11, completion_tokens: 5, total_tokens: 16 });
    });

    it('mask: one delta carries the masked text; role, finish and usage chunks are kept', async () => {
      const { chunks, text } = await chat('/oa', 'secret');
      assert.equal(text, MASKED);
      assert.equal(chunks.filter((c) => c.choices[0]?.delta.content).length, 1);
      assert.equal(chunks[0]!.choices[0]!.delta.role, 'assistant');
      assert.equal(chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0]?.finish_reason, 'stop');
      assert.equal(chunks[chunks.length - 1]!.usage?.completion_tokens, 12);
      const [log] = await accessRecords(gw, '/oa/v1/chat/completions', 2);
      assert.ok(log);
    });

    it('mask, raw: well-formed SSE ending with data: [DONE]', async () => {
      const res = await request(`${gw.base}/oa/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'secret' }] }),
      });
      assert.equal(res.statusCode, 200);
      assert.match(String(res.headers['content-type']), /text\/event-stream/);
      const text = await res.body.text();
      assert.ok(text.endsWith('data: [DONE]\n\n'));
      assert.ok(!text.includes('6789') && !text.includes('bob@'), 'nothing of the masked text leaks');
      assert.ok(text.includes(JSON.stringify(MASKED)));
    });

    it('reject: the SDK gets the rejection status; nothing of the stream is sent', async () => {
      await assert.rejects(chat('/oa', 'forbidden'), (err: unknown) => {
        assert.ok(err instanceof OpenAI.APIError);
        assert.equal(err.status, 451);
        assert.equal(err.headers?.get('x-guard'), 'stream');
        return true;
      });
      const res = await request(`${gw.base}/oa/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'forbidden' }] }),
      });
      assert.equal(res.statusCode, 451);
      assert.equal(await res.body.text(), 'not in this stream');
      const logs = await accessRecords(gw, '/oa/v1/chat/completions', 1);
      assert.ok(logs.some((l) => l['llm.guard'] === 'response:pass:regex,response:reject:regex'), JSON.stringify(logs));
    });

    it('tool-call streams (no text) pass', async () => {
      const stream = await openai('/oa').chat.completions.create({ model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'weather' }] });
      let args = '';
      for await (const c of stream) args += c.choices[0]?.delta.tool_calls?.[0]?.function?.arguments ?? '';
      assert.equal(args, '{"city":"Paris"}');
    });

    it('a guard that cannot decide answers 503 instead of the stream', async () => {
      await assert.rejects(chat('/failing', 'hello'), (err: unknown) => {
        assert.ok(err instanceof OpenAI.APIError);
        assert.equal(err.status, 503);
        return true;
      });
    });
  });

  describe('Anthropic client, Anthropic provider', () => {
    it('pass', async () => {
      const msg = await anthropic('/an').messages.stream({ model: 'claude-x', max_tokens: 50, messages: [{ role: 'user', content: 'hello' }] }).finalMessage();
      assert.equal(msg.content.length, 1);
      assert.equal((msg.content[0] as { text: string }).text, 'Hello from the mock!');
      assert.equal(msg.stop_reason, 'end_turn');
    });

    it('mask: the text deltas become one; the final message and its usage are right', async () => {
      const deltas: string[] = [];
      const stream = anthropic('/an').messages.stream({ model: 'claude-x', max_tokens: 50, messages: [{ role: 'user', content: 'secret' }] });
      stream.on('text', (t) => deltas.push(t));
      const msg = await stream.finalMessage();
      assert.deepEqual(deltas, [MASKED]);
      assert.equal((msg.content[0] as { text: string }).text, MASKED);
      assert.equal(msg.stop_reason, 'end_turn');
      assert.equal(msg.usage.output_tokens, 12);
    });

    it('reject: the SDK gets the rejection status', async () => {
      await assert.rejects(anthropic('/an').messages.stream({ model: 'claude-x', max_tokens: 50, messages: [{ role: 'user', content: 'forbidden' }] }).finalMessage(), (err: unknown) => {
        assert.ok(err instanceof Anthropic.APIError);
        assert.equal(err.status, 451);
        return true;
      });
    });
  });

  describe('translated streams: guards see the client format', () => {
    it('OpenAI client on an Anthropic provider: mask', async () => {
      const { chunks, text } = await chat('/an', 'secret');
      assert.equal(text, MASKED);
      assert.equal(chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0]?.finish_reason, 'stop');
      assert.equal(chunks[chunks.length - 1]!.usage?.completion_tokens, 12);
    });

    it('OpenAI client on an Anthropic provider: pass and reject', async () => {
      assert.equal((await chat('/an', 'hello')).text, 'Hello from the mock!');
      await assert.rejects(chat('/an', 'forbidden'), (err: unknown) => err instanceof OpenAI.APIError && err.status === 451);
    });

    it('OpenAI client on Bedrock (AWS event stream → SSE): mask and reject', async () => {
      const { chunks, text } = await chat('/br', 'secret');
      assert.equal(text, MASKED);
      assert.equal(chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0]?.finish_reason, 'stop');
      await assert.rejects(chat('/br', 'forbidden'), (err: unknown) => err instanceof OpenAI.APIError && err.status === 451);
    });

    it('Anthropic client on an OpenAI provider: mask', async () => {
      const deltas: string[] = [];
      const stream = anthropic('/oa').messages.stream({ model: 'gpt-4o', max_tokens: 50, messages: [{ role: 'user', content: 'secret' }] });
      stream.on('text', (t) => deltas.push(t));
      const msg = await stream.finalMessage();
      assert.equal(deltas.join(''), MASKED);
      assert.equal((msg.content[0] as { text: string }).text, MASKED);
    });
  });

  describe('OpenAI Responses streams', () => {
    it('mask: deltas, done events and the completed response carry the masked text', async () => {
      const events: { type: string }[] = [];
      const stream = openai('/oa').responses.stream({ model: 'gpt-4o', input: 'secret' });
      let deltas = '';
      for await (const e of stream) {
        events.push(e);
        if (e.type === 'response.output_text.delta') deltas += e.delta;
      }
      const final = await stream.finalResponse();
      assert.equal(deltas, MASKED);
      assert.equal(final.output_text, MASKED);
      const done = events.find((e) => e.type === 'response.output_text.done') as { text: string } | undefined;
      if (done) assert.equal(done.text, MASKED);
    });

    it('pass and reject', async () => {
      const final = await openai('/oa').responses.stream({ model: 'gpt-4o', input: 'hello' }).finalResponse();
      assert.equal(final.output_text, 'Hello from the mock!');
      await assert.rejects(openai('/oa').responses.stream({ model: 'gpt-4o', input: 'forbidden' }).finalResponse(), (err: unknown) => err instanceof OpenAI.APIError && err.status === 451);
    });
  });

  describe('Gemini client, Gemini provider (streamGenerateContent?alt=sse)', () => {
    type Chunk = { candidates?: { content?: { parts?: { text?: string }[] }; finishReason?: string }[]; usageMetadata?: unknown };
    /** `query` `''`: a client without alt=sse, which reads a JSON array (`raw`). */
    async function generate(content: string, query = '?alt=sse') {
      const res = await request(`${gw.base}/gm/v1beta/models/gemini-2.5-flash:streamGenerateContent${query}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: content }] }] }),
      });
      const raw = await res.body.text();
      const chunks = raw.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)) as Chunk);
      const text = chunks.map((c) => (c.candidates?.[0]?.content?.parts ?? []).map((p) => p.text ?? '').join('')).join('');
      return { status: res.statusCode, headers: res.headers, raw, chunks, text };
    }

    it('pass: the stream as the provider sent it', async () => {
      const r = await generate('hello');
      assert.equal(r.status, 200);
      assert.equal(r.text, 'Hello from the mock!');
      assert.ok(r.chunks.length > 3, 'several deltas');
    });

    it('mask: the SSN and e-mail spread over several deltas are masked; the events stay', async () => {
      const r = await generate('secret');
      assert.equal(r.status, 200);
      assert.equal(r.text, MASKED);
      assert.ok(!r.raw.includes('6789'));
      assert.ok(r.chunks.some((c) => c.candidates?.[0]?.finishReason !== undefined), 'the finish reason is kept');
    });

    it("mask, for a client without alt=sse: Google's JSON array of the masked events (ADR 0153)", async () => {
      const r = await generate('secret', '');
      assert.equal(r.status, 200);
      assert.match(String(r.headers['content-type']), /^application\/json/);
      const chunks = JSON.parse(r.raw) as Chunk[];
      assert.equal(chunks.map((c) => (c.candidates?.[0]?.content?.parts ?? []).map((p) => p.text ?? '').join('')).join(''), MASKED);
    });

    it('a complete (non-streamed) answer is masked too', async () => {
      const res = await request(`${gw.base}/gm/v1beta/models/gemini-2.5-flash:generateContent`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'secret' }] }] }),
      });
      assert.equal(res.statusCode, 200);
      const body = (await res.body.json()) as Chunk;
      assert.equal(body.candidates?.[0]?.content?.parts?.[0]?.text, MASKED);
    });

    it('reject: the rejection instead of the stream', async () => {
      const r = await generate('forbidden');
      assert.equal(r.status, 451);
      assert.equal(r.raw, 'not in this stream');
      assert.equal(r.headers['x-guard'], 'stream');
    });
  });

  describe('streaming: Disabled (the default)', () => {
    it('streams pass unguarded; complete answers are still guarded', async () => {
      assert.equal((await chat('/off', 'secret')).text, SECRET);
      const res = await openai('/off').chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'secret' }] });
      assert.equal(res.choices[0]!.message.content, MASKED);
    });
  });

  describe('holding the stream', () => {
    it('the client gets nothing until the provider has finished; then the guarded stream', async () => {
      mode = 'gated';
      gate = new Promise((resolve) => (release = resolve));
      let answered = false;
      const pending = request(`${gw.base}/stand/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'claude-x', max_tokens: 20, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
      }).then((res) => {
        answered = true;
        return res;
      });
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(answered, false, 'the response is held while the provider streams');
      release();
      const res = await pending;
      assert.equal(res.statusCode, 200);
      const text = await res.body.text();
      assert.ok(text.includes('"text":"call <SSN> now"'), text);
      assert.ok(!text.includes('3456'));
      assert.ok(text.includes('event: message_delta') && text.endsWith('event: message_stop\ndata: {"type":"message_stop"}\n\n'));
      const [log] = await accessRecords(gw, '/stand/v1/messages');
      assert.equal(log!['llm.inputTokens'], 9);
      assert.equal(log!['llm.outputTokens'], 2);
    });

    it('a stream too large to hold fails with 502', async () => {
      mode = 'huge';
      const res = await request(`${gw.base}/stand/big/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'claude-x', max_tokens: 20, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
      });
      assert.equal(res.statusCode, 502);
      const body = (await res.body.json()) as { type: string; error: { type: string; message: string } };
      assert.equal(body.type, 'error', 'an Anthropic client gets Anthropic\'s error envelope');
      assert.equal(body.error.type, 'api_error');
      assert.match(body.error.message, /^failed to process LLM response: streamed response too large to guard/);
    });

    it('a stream the provider breaks off fails with 502 (nothing was sent)', async () => {
      mode = 'broken';
      const res = await request(`${gw.base}/stand/broken/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'claude-x', max_tokens: 20, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
      });
      assert.equal(res.statusCode, 502);
      const body = (await res.body.json()) as { type: string; error: { message: string } };
      assert.equal(body.type, 'error');
      assert.match(body.error.message, /^failed to process LLM response: /);
    });

    it('a route timeout that ends before the stream answers 504 and releases the provider', async () => {
      mode = 'endless';
      const res = await request(`${gw.base}/slow/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'claude-x', max_tokens: 20, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
      });
      assert.equal(res.statusCode, 504);
      await res.body.text();
      await Promise.race([upstreamClosed, new Promise((_, reject) => setTimeout(() => reject(new Error('the upstream stream was not released')), 3000))]);
    });

    it('a client that leaves while the stream is held releases the provider', async () => {
      mode = 'endless';
      const controller = new AbortController();
      const pending = request(`${gw.base}/stand/leave/v1/messages`, {
        method: 'POST',
        signal: controller.signal,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'claude-x', max_tokens: 20, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
      }).catch(() => undefined);
      await new Promise((r) => setTimeout(r, 200));
      controller.abort();
      await pending;
      await Promise.race([upstreamClosed, new Promise((_, reject) => setTimeout(() => reject(new Error('the upstream stream was not released')), 3000))]);
    });
  });
});

describe('stream-guard: putting streams together and masking them', () => {
  const ex = { signal: new AbortController().signal } as unknown as Exchange;
  /**
   * A policy whose one response guard masks digits with `#` (through the same text slots as the real guards); JSON
   * texts (tool-call arguments) it leaves alone unless `inJson` (the tests' JSON has its digits inside strings).
   */
  const digits = (seen: Record<string, unknown>[] = [], inJson = false): AiPolicyRuntime =>
    ({
      hasResponseGuards: true,
      guardStreams: true,
      async guardResponse(_ex: Exchange, format: LlmRouteType, body: Record<string, unknown>) {
        seen.push(structuredClone(body));
        const slots = responseSlots(format, body);
        writeBack(slots, guardMessages(slots).map((m) => ({ ...m, content: m.json && !inJson ? m.content : m.content.replace(/\d/g, '#') })));
        return undefined;
      },
    }) as unknown as AiPolicyRuntime;
  const run = async (client: LlmRouteType, text: string, policy = digits()) => {
    const reply: Reply = { status: 200, headers: { 'content-type': 'text/event-stream' }, body: Readable.from([Buffer.from(text)]), local: false };
    const out = await guardStreamedReply(ex, reply, client, policy);
    return typeof out.body === 'string' ? out.body : Buffer.isBuffer(out.body) ? out.body.toString('utf8') : out.body;
  };
  const data = (out: unknown): Record<string, unknown>[] =>
    String(out)
      .split('\n\n')
      .filter((f) => f.includes('data: {'))
      .map((f) => JSON.parse(f.slice(f.indexOf('data: ') + 6)) as Record<string, unknown>);
  /** An SSE event named as its data's `type` (Anthropic and Responses streams). */
  const ev = (d: Record<string, unknown>) => `event: ${d.type as string}\ndata: ${JSON.stringify(d)}\n\n`;
  const MESSAGE_START = ev({ type: 'message_start', message: { id: 'm1', type: 'message', role: 'assistant', content: [], model: 'c', usage: { input_tokens: 3 } } });
  const chunk = (index: number, delta: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index, delta, logprobs: { content: [{ token: 'x' }] }, finish_reason: null, ...extra }] })}\n\n`;

  it('pass: the bytes come back as they were, comments and ids included', async () => {
    const text = `: keep-alive\nid: 7\n${chunk(0, { role: 'assistant', content: 'no digits' })}data: [DONE]\n\n`;
    assert.equal(await run('completions', text), text);
  });

  it('completions with two choices: only the masked choice changes; logprobs go; emptied chunks are left out', async () => {
    const seen: Record<string, unknown>[] = [];
    const text = [
      chunk(0, { role: 'assistant', content: '' }),
      chunk(1, { role: 'assistant', content: '' }),
      chunk(0, { content: 'plain ' }),
      chunk(1, { content: 'room 1' }),
      chunk(0, { content: 'text' }),
      chunk(1, { content: '23' }),
      chunk(1, {}, { finish_reason: 'stop' }),
      chunk(0, {}, { finish_reason: 'stop' }),
      'data: [DONE]\n\n',
    ].join('');
    const out = await run('completions', text, digits(seen));
    assert.deepEqual((seen[0] as { choices: unknown[] }).choices, [
      { index: 0, message: { role: 'assistant', content: 'plain text' }, finish_reason: 'stop' },
      { index: 1, message: { role: 'assistant', content: 'room 123' }, finish_reason: 'stop' },
    ]);
    const chunks = data(out) as { choices: { index: number; delta: { content?: string }; logprobs: unknown; finish_reason: unknown }[] }[];
    const of = (i: number) => chunks.map((c) => c.choices[0]!).filter((c) => c.index === i);
    assert.deepEqual(of(0).map((c) => c.delta.content), ['', 'plain ', 'text', undefined]);
    assert.ok(of(0).every((c) => c.logprobs !== null), 'the unmasked choice keeps its logprobs');
    assert.deepEqual(of(1).map((c) => c.delta.content), ['room ###', undefined]);
    assert.equal(of(1)[1]!.finish_reason, 'stop');
    assert.ok(of(1).every((c) => c.logprobs === null));
    assert.ok(String(out).endsWith('data: [DONE]\n\n'));
  });

  it('messages: text given at block start and in deltas; tool_use input put together for the guards', async () => {
    const seen: Record<string, unknown>[] = [];
    const text = [
      MESSAGE_START,
      ev({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: 'code 4' } }),
      ev({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: '2 and ' } }),
      ev({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'more' } }),
      ev({ type: 'content_block_stop', index: 0 }),
      ev({ type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 't1', name: 'f', input: {} } }),
      ev({ type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"a":' } }),
      ev({ type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '1}' } }),
      ev({ type: 'content_block_stop', index: 1 }),
      ev({ type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 9 } }),
      ev({ type: 'message_stop' }),
    ].join('');
    const out = await run('messages', text, digits(seen));
    assert.deepEqual(seen[0], {
      id: 'm1',
      type: 'message',
      role: 'assistant',
      model: 'c',
      usage: { input_tokens: 3, output_tokens: 9 },
      stop_reason: 'tool_use',
      stop_sequence: null,
      content: [
        { type: 'text', text: 'code 42 and more' },
        { type: 'tool_use', id: 't1', name: 'f', input: { a: 1 } },
      ],
    });
    const events = data(out);
    assert.deepEqual(events.map((e) => e.type), ['message_start', 'content_block_start', 'content_block_delta', 'content_block_stop', 'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
    assert.deepEqual(events[1]!.content_block, { type: 'text', text: '' });
    assert.deepEqual(events[2]!.delta, { type: 'text_delta', text: 'code ## and more' });
  });

  it('responses without a completed event: the response as far as it went', async () => {
    const seen: Record<string, unknown>[] = [];
    const text = [
      ev({ type: 'response.created', response: { id: 'r1', object: 'response', status: 'in_progress', output: [] } }),
      ev({ type: 'response.output_item.added', output_index: 0, item: { type: 'message', id: 'i1', role: 'assistant', content: [] } }),
      ev({ type: 'response.output_text.delta', item_id: 'i1', output_index: 0, content_index: 0, delta: 'pin 1' }),
      ev({ type: 'response.output_text.delta', item_id: 'i1', output_index: 0, content_index: 0, delta: '234' }),
    ].join('');
    const out = await run('responses', text, digits(seen));
    assert.deepEqual(seen[0], { id: 'r1', object: 'response', status: 'in_progress', output: [{ type: 'message', id: 'i1', role: 'assistant', content: [{ type: 'output_text', text: 'pin 1234', annotations: [] }] }] });
    assert.deepEqual(data(out).map((e) => e.delta).filter(Boolean), ['pin ####']);
  });

  it('completions: refusal, reasoning and tool-call argument deltas are guarded; a masked one is carried whole (ADR 0165)', async () => {
    const seen: Record<string, unknown>[] = [];
    const text = [
      chunk(0, { role: 'assistant', reasoning_content: 'pin 1' }),
      chunk(0, { reasoning_content: '234' }),
      chunk(0, { refusal: 'no 5' }),
      chunk(0, { tool_calls: [{ index: 0, id: 'c1', type: 'function', function: { name: 'f', arguments: '' } }] }),
      chunk(0, { tool_calls: [{ index: 0, function: { arguments: '{"n":"9' } }] }),
      chunk(0, { tool_calls: [{ index: 0, function: { arguments: '9"}' } }] }),
      chunk(0, { tool_calls: [{ index: 1, id: 'c2', type: 'custom', custom: { name: 'g', input: 'run 7' } }] }),
      chunk(0, { tool_calls: [{ index: 1, custom: { input: '77' } }] }),
      chunk(0, {}, { finish_reason: 'tool_calls' }),
      'data: [DONE]\n\n',
    ].join('');
    // Digits masked in JSON texts too: inside their strings, so the JSON stays valid here.
    const out = await run('completions', text, digits(seen, true));
    assert.deepEqual((seen[0] as { choices: { message: unknown }[] }).choices[0]!.message, {
      role: 'assistant',
      content: null,
      reasoning_content: 'pin 1234',
      refusal: 'no 5',
      tool_calls: [
        { id: 'c1', type: 'function', function: { name: 'f', arguments: '{"n":"99"}' } },
        { id: 'c2', type: 'custom', custom: { name: 'g', input: 'run 777' } },
      ],
    });
    for (const original of ['pin 1', '234', 'no 5', '"9', '9"', 'run 7', '77']) assert.ok(!String(out).includes(original), String(out));
    const deltas = data(out).map((c) => (c as { choices: { delta: Record<string, unknown> }[] }).choices[0]!.delta);
    assert.equal(deltas[0]!.reasoning_content, 'pin ####');
    const calls = deltas.flatMap((d) => (d.tool_calls as { function?: { arguments: string }; custom?: { input: string } }[] | undefined) ?? []);
    assert.deepEqual(calls.map((c) => c.function?.arguments ?? c.custom?.input), ['{"n":"##"}', '', '', 'run ###', '']);
  });

  it('messages: thinking deltas and a tool input given whole at its start are guarded', async () => {
    const text = [
      MESSAGE_START,
      ev({ type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } }),
      ev({ type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'code 4' } }),
      ev({ type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: '2' } }),
      ev({ type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'sig' } }),
      ev({ type: 'content_block_stop', index: 0 }),
      ev({ type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 't1', name: 'f', input: { n: 'x7' } } }),
      ev({ type: 'content_block_stop', index: 1 }),
      ev({ type: 'message_stop' }),
    ].join('');
    const policy = digits([], true);
    const events = data(await run('messages', text, policy));
    assert.deepEqual(events.filter((e) => e.type === 'content_block_delta').map((e) => e.delta), [
      { type: 'thinking_delta', thinking: 'code ##' },
      { type: 'signature_delta', signature: 'sig' },
    ]);
    assert.deepEqual(events.find((e) => e.index === 1 && e.type === 'content_block_start')!.content_block, { type: 'tool_use', id: 't1', name: 'f', input: { n: 'x#' } });
  });

  it('messages: a tool input cut off before its JSON ends, and a server tool\'s input, are guarded as streamed', async () => {
    const text = [
      MESSAGE_START,
      ev({ type: 'content_block_start', index: 0, content_block: { type: 'server_tool_use', id: 's1', name: 'code_execution', input: {} } }),
      ev({ type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"code":"print(1' } }),
      ev({ type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: ')"}' } }),
      ev({ type: 'content_block_stop', index: 0 }),
      ev({ type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 't1', name: 'f', input: {} } }),
      ev({ type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"n":"12' } }),
      ev({ type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '34' } }),
      ev({ type: 'message_delta', delta: { stop_reason: 'max_tokens', stop_sequence: null }, usage: { output_tokens: 9 } }),
      ev({ type: 'message_stop' }),
    ].join('');
    const deltas = data(await run('messages', text, digits([], true)))
      .filter((e) => e.type === 'content_block_delta')
      .map((e) => (e.delta as { partial_json: string }).partial_json);
    assert.deepEqual(deltas, ['{"code":"print(#)"}', '{"n":"####']);
  });

  it('responses: reasoning summary and function-call argument events all carry the masked text', async () => {
    const reasoning = { type: 'reasoning', id: 'rs1', summary: [{ type: 'summary_text', text: 'pin 12' }] };
    const call = { type: 'function_call', id: 'fc1', call_id: 'c1', name: 'f', arguments: '{"n":"34"}' };
    const text = [
      ev({ type: 'response.created', response: { id: 'r1', object: 'response', status: 'in_progress', output: [] } }),
      ev({ type: 'response.output_item.added', output_index: 0, item: { ...reasoning, summary: [] } }),
      ev({ type: 'response.reasoning_summary_text.delta', item_id: 'rs1', output_index: 0, summary_index: 0, delta: 'pin 1' }),
      ev({ type: 'response.reasoning_summary_text.delta', item_id: 'rs1', output_index: 0, summary_index: 0, delta: '2' }),
      ev({ type: 'response.reasoning_summary_text.done', item_id: 'rs1', output_index: 0, summary_index: 0, text: 'pin 12' }),
      ev({ type: 'response.reasoning_summary_part.done', item_id: 'rs1', output_index: 0, summary_index: 0, part: { type: 'summary_text', text: 'pin 12' } }),
      ev({ type: 'response.output_item.done', output_index: 0, item: reasoning }),
      ev({ type: 'response.output_item.added', output_index: 1, item: { ...call, arguments: '' } }),
      ev({ type: 'response.function_call_arguments.delta', item_id: 'fc1', output_index: 1, delta: '{"n":"3' }),
      ev({ type: 'response.function_call_arguments.delta', item_id: 'fc1', output_index: 1, delta: '4"}' }),
      ev({ type: 'response.function_call_arguments.done', item_id: 'fc1', output_index: 1, arguments: '{"n":"34"}' }),
      ev({ type: 'response.output_item.done', output_index: 1, item: call }),
      ev({ type: 'response.completed', response: { id: 'r1', object: 'response', status: 'completed', output: [reasoning, call] } }),
    ].join('');
    const policy = digits([], true);
    const out = String(await run('responses', text, policy));
    for (const original of ['pin 1', 'pin 12', '"34', '"3', '4"}']) assert.ok(!out.includes(original), out);
    assert.ok(out.includes('"arguments":"{\\"n\\":\\"##\\"}"'), out);
    assert.deepEqual(data(out).map((e) => e.delta).filter((d) => d !== undefined), ['pin ##', '{"n":"##"}']);
  });

  it('gemini: a function call and code, each whole in one event, are written back masked there', async () => {
    const event = (parts: unknown[]) => `data: ${JSON.stringify({ candidates: [{ index: 0, content: { role: 'model', parts } }] })}\n\n`;
    const text = [event([{ text: 'pin 1' }]), event([{ functionCall: { name: 'f', args: { n: 'x7' } } }]), event([{ executableCode: { language: 'PYTHON', code: 'print(8)' } }])].join('');
    const out = data(await run('generateContent', text, digits([], true)));
    assert.deepEqual(out.map((e) => (e as { candidates: { content: { parts: unknown[] } }[] }).candidates[0]!.content.parts[0]), [
      { text: 'pin #' },
      { functionCall: { name: 'f', args: { n: 'x#' } } },
      { executableCode: { language: 'PYTHON', code: 'print(#)' } },
    ]);
  });

  it('a masked text the events cannot carry fails closed (503), never leaks', async () => {
    const text = `${chunk(0, { role: 'assistant', content: 'fine' })}data: [DONE]\n\n`;
    // A guard that changed the answer where no event carries it (here: it added a text).
    const policy = {
      hasResponseGuards: true,
      guardStreams: true,
      async guardResponse(_ex: Exchange, _format: LlmRouteType, body: Record<string, unknown>) {
        (body.choices as { message: Record<string, unknown> }[])[0]!.message.refusal = 'added';
        return undefined;
      },
    } as unknown as AiPolicyRuntime;
    const reply: Reply = { status: 200, headers: { 'content-type': 'text/event-stream' }, body: Readable.from([Buffer.from(text)]), local: false };
    const out = await guardStreamedReply(ex, reply, 'completions', policy);
    assert.equal(out.status, 503);
  });

  it('formats it does not put together pass as they are', async () => {
    const text = 'data: {"anything":1}\n\n';
    const out = await run('embeddings', text);
    assert.ok(out instanceof Readable, 'the stream itself, not held');
    assert.equal(Buffer.concat(await out.toArray()).toString(), text);
  });
});
