// Request fields a translated route cannot honour (ADR 0135): a client asking for several choices, log
// probabilities, audio or a JSON answer of a provider whose API has none of them is refused 400 in its own error
// shape, naming the field, instead of getting an answer that silently lacks them; `dropUnsupportedParams: true` on the
// `ai` backend drops them instead (logged as `llm.droppedParams`). Real `openai` and `@anthropic-ai/sdk` clients,
// aimock behind a recording hop.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { accessRecords, aiRoute, recordedAi, rejection, sdkClients } from './harness.ts';

const ROUTES = { testAi: { routes: { '/v1/messages': 'messages', '/v1/responses': 'responses', '*': 'completions' } } };
const hello = [{ role: 'user' as const, content: 'hello' }];
const AWS_KEYS = { aws: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret', region: 'us-east-1', serviceName: 'bedrock' } };
const PNG = 'data:image/png;base64,iVBORw0KGgo=';

describe('request fields a translation cannot honour', () => {
  const t = recordedAi((hostPort) => [
    aiRoute('/strict', { name: 'strict', provider: { anthropic: {} }, hostOverride: hostPort }, ROUTES),
    aiRoute('/lax', { name: 'lax', provider: { anthropic: {} }, hostOverride: hostPort, dropUnsupportedParams: true }, ROUTES),
    aiRoute('/gem', { name: 'gem', provider: { gemini: {} }, hostOverride: hostPort }, ROUTES),
    aiRoute('/oa', { name: 'oa', provider: { openAI: {} }, hostOverride: hostPort }, ROUTES),
    aiRoute('/br', { name: 'br', provider: { bedrock: { region: 'us-east-1' } }, hostOverride: hostPort }, { ...ROUTES, backendAuth: AWS_KEYS }),
  ]);
  const { openai, anthropic } = sdkClients(() => t.gw.base, 'sk-test');

  /** The 400 a call got, the provider not called. */
  const refused = async (call: Promise<unknown>, field: RegExp): Promise<InstanceType<typeof OpenAI.BadRequestError>> => {
    const before = t.rec.received.length;
    const err = await rejection(call, OpenAI.BadRequestError);
    assert.equal(err.status, 400);
    assert.equal((err.error as { type?: string }).type, 'invalid_request_error');
    assert.match(err.message, field);
    assert.equal(t.rec.received.length, before, 'the provider was not called');
    return err;
  };

  it('Chat Completions on Anthropic: n > 1 is refused, naming the field, streamed or not', async () => {
    const err = await refused(openai('/strict').chat.completions.create({ model: 'claude-x', n: 3, messages: hello }), /`n`/);
    assert.match(err.message, /anthropic/);
    await refused(openai('/strict').chat.completions.create({ model: 'claude-x', n: 2, stream: true, messages: hello }), /`n`/);
  });

  it('logprobs and top_logprobs are refused; response_format json_schema too (Anthropic has none of them)', async () => {
    await refused(openai('/strict').chat.completions.create({ model: 'claude-x', logprobs: true, messages: hello }), /`logprobs`/);
    await refused(openai('/strict').chat.completions.create({ model: 'claude-x', top_logprobs: 3, messages: hello }), /`top_logprobs`/);
    const schema = { type: 'json_schema' as const, json_schema: { name: 'a', schema: { type: 'object', properties: {} } } };
    await refused(openai('/strict').chat.completions.create({ model: 'claude-x', response_format: schema, messages: hello }), /`response_format`/);
    await refused(openai('/strict').chat.completions.create({ model: 'claude-x', modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'mp3' }, messages: hello }), /`audio`|`modalities`/);
  });

  it('values that ask for nothing more pass: n 1, logprobs false, top_logprobs 0, response_format text', async () => {
    const res = await openai('/strict').chat.completions.create({ model: 'claude-x', n: 1, logprobs: false, top_logprobs: 0, response_format: { type: 'text' }, messages: hello });
    assert.equal(res.choices[0]!.message.content, 'Hello from the mock!');
  });

  it('Gemini: n > 1 refused; response_format json_schema is translated, so it passes', async () => {
    await refused(openai('/gem').chat.completions.create({ model: 'gemini-x', n: 2, messages: hello }), /`n`/);
    const res = await openai('/gem').chat.completions.create({ model: 'gemini-x', response_format: { type: 'json_object' }, messages: hello });
    assert.ok(res.choices[0]);
    assert.equal((t.rec.last().json().generationConfig as Record<string, unknown>).responseMimeType, 'application/json');
  });

  it('Responses clients through Chat Completions: top_logprobs refused', async () => {
    await refused(openai('/strict').responses.create({ model: 'claude-x', input: 'hello', top_logprobs: 2 }), /`top_logprobs`/);
  });

  it('the provider\'s own API: every field goes as it came', async () => {
    const res = await openai('/oa').chat.completions.create({ model: 'gpt-x', n: 3, logprobs: true, top_logprobs: 2, messages: hello });
    assert.ok(res.choices.length >= 1);
    const sent = t.rec.last().json();
    assert.equal(sent.n, 3);
    assert.equal(sent.logprobs, true);
  });

  it('content the model would never see: an image by URL to Converse, audio to Anthropic, a file by id', async () => {
    const look = (part: OpenAI.Chat.Completions.ChatCompletionContentPart) => [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'look' }, part] }];
    const err = await refused(openai('/br').chat.completions.create({ model: 'anthropic.claude-x', messages: look({ type: 'image_url', image_url: { url: 'https://example.com/a.png' } }) }), /`messages\[0\]\.content\[1\]` \(an image by URL\)/);
    assert.match(err.message, /aws\.bedrock|bedrock/);
    await refused(openai('/strict').chat.completions.create({ model: 'claude-x', messages: look({ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } }) }), /audio input/);
    await refused(openai('/strict').chat.completions.create({ model: 'claude-x', messages: look({ type: 'file', file: { file_id: 'file-abc' } }) }), /OpenAI's storage/);
    await refused(openai('/br').chat.completions.create({ model: 'anthropic.claude-x', messages: look({ type: 'file', file: { file_data: 'data:application/pdf;base64,JVBERi0=', filename: 'a.pdf' } }) }), /a document/);
    // Converse takes png, jpeg, gif and webp bytes: another type was left out without a word.
    await refused(openai('/br').chat.completions.create({ model: 'anthropic.claude-x', messages: look({ type: 'image_url', image_url: { url: 'data:image/heic;base64,AAAA' } }) }), /image\/heic/);
    await refused(openai('/br').chat.completions.create({ model: 'anthropic.claude-x', messages: look({ type: 'image_url', image_url: { url: 'data:constructor;base64,AAAA' } }) }), /constructor/);
    // Anthropic takes images by URL, Converse takes inline bytes: both pass.
    const before = t.rec.received.length;
    await openai('/strict').chat.completions.create({ model: 'claude-x', messages: look({ type: 'image_url', image_url: { url: 'https://example.com/a.png' } }) });
    await openai('/br').chat.completions.create({ model: 'anthropic.claude-x', messages: look({ type: 'image_url', image_url: { url: PNG } }) }).catch(() => undefined);
    assert.equal(t.rec.received.length, before + 2);
    assert.deepEqual((t.rec.last().json().messages as { content: unknown[] }[])[0]!.content[1], { image: { format: 'png', source: { bytes: 'iVBORw0KGgo=' } } });
  });

  it('an Anthropic client: a document by URL to an OpenAI provider is refused in Anthropic\'s error shape', async () => {
    const before = t.rec.received.length;
    const err = await rejection(
      anthropic('/oa').messages.create({ model: 'gpt-x', max_tokens: 10, messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'url', url: 'https://example.com/a.pdf' } }, { type: 'text', text: 'sum up' }] }] }),
      Anthropic.BadRequestError,
    );
    assert.equal((err.error as { error?: { type?: string } }).error?.type, 'invalid_request_error');
    assert.match(err.message, /`messages\[0\]\.content\[0\]` \(a document by URL\)/);
    assert.equal(t.rec.received.length, before);
  });

  it('a Responses client: an image by file id is refused', async () => {
    const input = [{ role: 'user' as const, content: [{ type: 'input_text' as const, text: 'look' }, { type: 'input_image' as const, file_id: 'file-abc', detail: 'auto' as const }] }];
    await refused(openai('/strict').responses.create({ model: 'claude-x', input }), /`input\[0\]\.content\[1\]`/);
  });

  it('dropUnsupportedParams: dropped, the answer given, the fields logged', async () => {
    const res = await openai('/lax').chat.completions.create({ model: 'claude-x', n: 3, logprobs: true, messages: hello });
    assert.equal(res.choices.length, 1);
    const sent = t.rec.last().json();
    assert.equal(sent.n, undefined);
    assert.equal(sent.logprobs, undefined);
    const [log] = await accessRecords(t.gw, '/lax/v1/chat/completions');
    assert.equal(log!['llm.droppedParams'], 'n,logprobs');
  });

  it('many unhonoured parts: the log field and the refusal name the first ten and a count, not one name each (ADR 0171)', async () => {
    // 5,000 file parts by id: the log line (and the span) carried every path, 130 kB here, MBs for a larger body.
    const content = [{ type: 'text', text: 'hello' }, ...Array.from({ length: 5000 }, () => ({ type: 'file', file: { file_id: 'file-x' } }))];
    const res = await fetch(`${t.gw.base}/lax/many/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'claude-x', messages: [{ role: 'user', content }] }) });
    assert.equal(res.status, 200);
    await res.arrayBuffer();
    const [log] = await accessRecords(t.gw, '/lax/many/v1/chat/completions');
    const dropped = String(log!['llm.droppedParams']);
    assert.ok(dropped.length < 400, `${dropped.length} characters`);
    assert.ok(dropped.startsWith('messages[0].content[1],messages[0].content[2],'), dropped);
    assert.ok(dropped.endsWith(',+4990 more'), dropped);
    // Refused instead: the answer names the first ten too (it listed every part, larger than the request).
    const refusedRes = await fetch(`${t.gw.base}/strict/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'claude-x', messages: [{ role: 'user', content }] }) });
    assert.equal(refusedRes.status, 400);
    const message = ((await refusedRes.json()) as { error: { message: string } }).error.message;
    assert.ok(message.length < 1200, `${message.length} characters`);
    assert.match(message, /`messages\[0\]\.content\[10\]` \(a file in OpenAI's storage\), \+4990 more; send the request without them/);
  });

  it('a Chat Completions message the translation would drop (an unknown role, not an object, a user content that is neither text nor parts) is refused, naming it (ADR 0186)', async () => {
    const bad: [unknown[], RegExp][] = [
      [[{ role: 'wizard', content: 'hello' }], /`messages\[0\]\.role` `wizard` is not a Chat Completions role/],
      [[{ role: 'user', content: 'hi' }, 'hello'], /`messages\[1\]` is not a message object/],
      [[{ role: 'user', content: null }], /`messages\[0\]\.content` of a user message must be a string or a list of parts/],
      [[{ role: 'user', content: 42 }], /`messages\[0\]\.content` of a user message must be a string or a list of parts/],
    ];
    for (const prefix of ['/strict', '/gem', '/br']) {
      for (const [messages, message] of bad) {
        const before = t.rec.received.length;
        const res = await fetch(`${t.gw.base}${prefix}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', messages }) });
        const body = (await res.json()) as { error: { type: string; message: string } };
        assert.equal(res.status, 400, `${prefix} ${JSON.stringify(messages)}: ${JSON.stringify(body)}`);
        assert.equal(body.error.type, 'invalid_request_error');
        assert.match(body.error.message, message);
        assert.equal(t.rec.received.length, before, 'the provider was not called');
      }
    }
  });

  it('a Messages message the translation would drop or make a user turn (a role not user or assistant, not an object, content neither text nor blocks) is refused, naming it (ADR 0186)', async () => {
    const bad: [unknown[], RegExp][] = [
      [[{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hello' }], /`messages\[0\]\.role` `system` is not a Messages role/],
      [[{ role: 'wizard', content: 'hello' }], /`messages\[0\]\.role` `wizard` is not a Messages role/],
      [['hello'], /`messages\[0\]` is not a message object/],
      [[{ role: 'user', content: null }], /`messages\[0\]\.content` must be a string or a list of content blocks/],
    ];
    for (const prefix of ['/oa', '/gem']) {
      for (const [messages, message] of bad) {
        const before = t.rec.received.length;
        const res = await fetch(`${t.gw.base}${prefix}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', max_tokens: 10, messages }) });
        const body = (await res.json()) as { type: string; error: { type: string; message: string } };
        assert.equal(res.status, 400, `${prefix} ${JSON.stringify(messages)}: ${JSON.stringify(body)}`);
        assert.equal(body.type, 'error');
        assert.equal(body.error.type, 'invalid_request_error');
        assert.match(body.error.message, message);
        assert.equal(t.rec.received.length, before, 'the provider was not called');
      }
    }
  });

  it('a Messages request without max_tokens on a translated route is refused as Anthropic refuses it, not sent uncapped (ADR 0186)', async () => {
    for (const prefix of ['/oa', '/gem']) {
      for (const max of [undefined, '64', 0, -1, 1.5]) {
        const before = t.rec.received.length;
        const res = await fetch(`${t.gw.base}${prefix}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', max_tokens: max, messages: hello }) });
        const body = (await res.json()) as { type: string; error: { type: string; message: string } };
        assert.equal(res.status, 400, `${prefix} ${String(max)}: ${JSON.stringify(body)}`);
        assert.equal(body.error.type, 'invalid_request_error');
        assert.match(body.error.message, /`max_tokens` is required: a positive integer/);
        assert.equal(t.rec.received.length, before, 'the provider was not called');
      }
      const ok = await anthropic(prefix).messages.create({ model: 'm', max_tokens: 1, messages: hello });
      assert.equal(ok.type, 'message');
    }
  });

  it('a translated request whose `stream` is not a boolean is refused, not answered unstreamed (ADR 0186)', async () => {
    const cases: [string, Record<string, unknown>][] = [
      ['/strict/v1/chat/completions', { model: 'm', stream: 'yes', messages: hello }],
      ['/oa/v1/messages', { model: 'm', max_tokens: 5, stream: 1, messages: hello }],
      ['/strict/v1/responses', { model: 'm', stream: 'true', input: 'hello' }],
    ];
    for (const [path, body] of cases) {
      const before = t.rec.received.length;
      const res = await fetch(`${t.gw.base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const text = await res.text();
      assert.equal(res.status, 400, `${path}: ${text}`);
      assert.match(text, /`stream` must be a boolean/);
      assert.equal(t.rec.received.length, before, 'the provider was not called');
    }
  });

  it('Responses input the translation would drop or give another speaker (input neither text nor list, an item not an object, an unknown role, content neither text nor parts) is refused (ADR 0186)', async () => {
    const bad: [unknown, RegExp][] = [
      [5, /`input` must be a string or a list of items/],
      [['hello'], /`input\[0\]` is not an item object/],
      [[{ role: 'wizard', content: 'hello' }], /`input\[0\]\.role` `wizard` is not a Responses role/],
      [[{ type: 'message', role: 'user', content: null }], /`input\[0\]\.content` must be a string or a list of content parts/],
    ];
    for (const [input, message] of bad) {
      const before = t.rec.received.length;
      const res = await fetch(`${t.gw.base}/strict/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', input }) });
      const body = (await res.json()) as { error: { type: string; message: string } };
      assert.equal(res.status, 400, `${JSON.stringify(input)}: ${JSON.stringify(body)}`);
      assert.equal(body.error.type, 'invalid_request_error');
      assert.match(body.error.message, message);
      assert.equal(t.rec.received.length, before, 'the provider was not called');
    }
    // Items without a Chat Completions form (reasoning) are still passed over, as before.
    const ok = await openai('/strict').responses.create({ model: 'm', input: [{ type: 'reasoning', id: 'rs_1', summary: [] }, { role: 'user', content: 'hello' }] });
    assert.equal(ok.output_text, 'Hello from the mock!');
  });
});
