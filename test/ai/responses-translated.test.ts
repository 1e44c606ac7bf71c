// OpenAI Responses clients on providers without a Responses API (Anthropic, Bedrock, Gemini): the request goes
// through Chat Completions into the provider's API, the answer comes back as a `response` and the stream as
// `response.*` events the `openai` SDK's helpers put together. Loopback stand-in providers script the answers.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import OpenAI from 'openai';
import { ANTHROPIC_TOOLS, frame, MESSAGE_START, OPENAI_INTERLEAVED_TOOLS, sse } from './stream-fixtures.ts';
import { aiRoute, rejection, scriptedAi, sdkClients } from './harness.ts';

const ROUTES = { testAi: { routes: { '/v1/responses': 'responses', '*': 'completions' } } };

const ANTHROPIC_WHOLE = {
  id: 'msg_1',
  type: 'message',
  role: 'assistant',
  model: 'claude-x',
  content: [
    { type: 'text', text: 'Checking.' },
    { type: 'tool_use', id: 'toolu_a', name: 'get_weather', input: { city: 'Paris' } },
  ],
  stop_reason: 'tool_use',
  usage: { input_tokens: 9, output_tokens: 20 },
};

describe('Responses clients on providers without a Responses API', () => {
  const t = scriptedAi((host) => [
    aiRoute('/an', { name: 'an', provider: { anthropic: { model: 'claude-x' } }, hostOverride: host }, ROUTES),
    aiRoute('/br', { name: 'br', provider: { bedrock: { model: 'anthropic.claude-x', region: 'us-east-1' } }, hostOverride: host }, { ...ROUTES, backendAuth: { key: 'k' } }),
    aiRoute('/ge', { name: 'ge', provider: { gemini: { model: 'gemini-x' } }, hostOverride: host }, ROUTES),
    aiRoute('/oa', { name: 'oa', provider: { gemini: { model: 'gemini-x', openAICompatible: true } }, hostOverride: host }, ROUTES),
  ]);
  const { openai } = sdkClients(() => t.gw.base, 'sk-test');
  const tools: OpenAI.Responses.Tool[] = [
    { type: 'function', name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }, strict: false },
    { type: 'function', name: 'get_time', parameters: { type: 'object', properties: {} }, strict: false },
  ];
  const calls = (r: OpenAI.Responses.Response): unknown[] => r.output.filter((i) => i.type === 'function_call').map((i) => [i.call_id, i.name, i.arguments, i.status]);

  it('the request becomes the provider\'s: instructions, input items, function calls and their outputs, images, tools', async () => {
    t.answer('application/json', JSON.stringify(ANTHROPIC_WHOLE));
    await openai('/an').responses.create({
      model: 'any',
      instructions: 'Be brief.',
      max_output_tokens: 300,
      temperature: 0.5,
      tools,
      tool_choice: 'auto',
      input: [
        { role: 'user', content: [{ type: 'input_text', text: 'Weather here?' }, { type: 'input_image', image_url: 'data:image/png;base64,AAAA', detail: 'auto' }] },
        { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
        { type: 'function_call', call_id: 'call_2', name: 'get_time', arguments: '{}' },
        { type: 'function_call_output', call_id: 'call_1', output: 'sunny' },
        { type: 'function_call_output', call_id: 'call_2', output: '12:00' },
        { role: 'assistant', content: [{ type: 'output_text', text: 'Sunny at noon.', annotations: [] }] },
        { role: 'user', content: 'Thanks' },
      ] as OpenAI.Responses.ResponseInput,
    });
    const wire = JSON.parse(t.upstream.received.at(-1)!.body.toString('utf8')) as Record<string, unknown>;
    assert.equal(t.upstream.received.at(-1)!.url, '/v1/messages');
    assert.equal(wire.system, 'Be brief.');
    assert.equal(wire.max_tokens, 300);
    assert.equal(wire.temperature, 0.5);
    assert.deepEqual(wire.messages, [
      { role: 'user', content: [{ type: 'text', text: 'Weather here?' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }] },
      {
        role: 'assistant',
        content: [
          { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
          { type: 'tool_use', id: 'call_2', name: 'get_time', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_1', content: 'sunny' },
          { type: 'tool_result', tool_use_id: 'call_2', content: '12:00' },
        ],
      },
      { role: 'assistant', content: [{ type: 'text', text: 'Sunny at noon.' }] },
      { role: 'user', content: 'Thanks' },
    ]);
    assert.deepEqual((wire.tools as { name: string }[]).map((t) => t.name), ['get_weather', 'get_time']);
    assert.deepEqual(wire.tool_choice, { type: 'auto' });
  });

  it('a complete answer is a response: text, function calls, usage (Anthropic)', async () => {
    t.answer('application/json', JSON.stringify(ANTHROPIC_WHOLE));
    const r = await openai('/an').responses.create({ model: 'any', input: 'weather?', tools });
    assert.equal(r.object, 'response');
    assert.equal(r.status, 'completed');
    assert.equal(r.model, 'claude-x');
    assert.equal(r.output_text, 'Checking.');
    assert.deepEqual(calls(r), [['toolu_a', 'get_weather', '{"city":"Paris"}', 'completed']]);
    assert.equal(r.usage?.input_tokens, 9);
    assert.equal(r.usage?.output_tokens, 20);
    assert.equal(r.usage?.total_tokens, 29);
  });

  it('a stream is response.* events the SDK puts together (Anthropic)', async () => {
    t.answer('text/event-stream', ANTHROPIC_TOOLS);
    const stream = openai('/an').responses.stream({ model: 'any', input: 'weather and time?', tools });
    const types: string[] = [];
    let text = '';
    stream.on('event', (e) => types.push(e.type));
    stream.on('response.output_text.delta', (e) => (text += e.delta));
    const r = await stream.finalResponse();
    assert.equal(text, 'Checking.');
    assert.equal(r.status, 'completed');
    assert.equal(r.output_text, 'Checking.');
    assert.deepEqual(calls(r), [
      ['toolu_a', 'get_weather', '{"city":"Paris"}', 'completed'],
      ['toolu_b', 'get_time', '{}', 'completed'],
    ]);
    assert.deepEqual([r.usage?.input_tokens, r.usage?.output_tokens], [9, 20]);
    assert.equal(types[0], 'response.created');
    assert.equal(types.at(-1), 'response.completed');
    assert.ok(types.includes('response.function_call_arguments.delta'));
    const wire = JSON.parse(t.upstream.received.at(-1)!.body.toString('utf8')) as Record<string, unknown>;
    assert.equal(wire.stream, true);
  });

  it('Bedrock: a streamed answer cut by max tokens is response.incomplete', async () => {
    t.answer(
      'application/vnd.amazon.eventstream',
      Buffer.concat([
        frame('messageStart', { role: 'assistant' }),
        frame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Once upon' } }),
        frame('contentBlockStop', { contentBlockIndex: 0 }),
        frame('messageStop', { stopReason: 'max_tokens' }),
        frame('metadata', { usage: { inputTokens: 4, outputTokens: 2, totalTokens: 6 }, metrics: { latencyMs: 1 } }),
      ]),
    );
    const r = await openai('/br').responses.stream({ model: 'any', input: 'a story', max_output_tokens: 2 }).finalResponse();
    assert.equal(r.status, 'incomplete');
    assert.deepEqual(r.incomplete_details, { reason: 'max_output_tokens' });
    assert.equal(r.output_text, 'Once upon');
    assert.equal(t.upstream.received.at(-1)!.url, '/model/anthropic.claude-x/converse-stream');
  });

  it('Gemini: a complete answer with a function call', async () => {
    t.answer('application/json', JSON.stringify({ candidates: [{ content: { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Paris' } } }] }, finishReason: 'STOP' }], usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 4, totalTokenCount: 7 }, modelVersion: 'gemini-x-001' }));
    const r = await openai('/ge').responses.create({ model: 'any', input: 'weather?', tools });
    assert.equal(t.upstream.received.at(-1)!.url, '/v1beta/models/gemini-x:generateContent');
    assert.equal(r.model, 'gemini-x-001');
    assert.deepEqual(
      r.output.map((i) => i.type),
      ['function_call'],
    );
    assert.equal((r.output[0] as OpenAI.Responses.ResponseFunctionToolCall).arguments, '{"city":"Paris"}');
  });

  it("Gemini's thought signature rides on the function_call item and goes back to Gemini when the client replays it", async () => {
    const part = { functionCall: { name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: 'c2lnbmF0dXJl' };
    t.answer('text/event-stream', sse(undefined, { candidates: [{ content: { role: 'model', parts: [part] }, finishReason: 'STOP' }], usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 4 } }));
    const streamed = await openai('/ge').responses.stream({ model: 'any', input: 'weather?', tools }).finalResponse();
    t.answer('application/json', JSON.stringify({ candidates: [{ content: { role: 'model', parts: [part] }, finishReason: 'STOP' }] }));
    const whole = await openai('/ge').responses.create({ model: 'any', input: 'weather?', tools });
    for (const r of [streamed, whole]) {
      const call = r.output[0] as OpenAI.Responses.ResponseFunctionToolCall & { extra_content?: unknown };
      assert.deepEqual(call.extra_content, { google: { thought_signature: 'c2lnbmF0dXJl' } });
      // The client's next turn replays the output items, as the SDK's helpers do.
      await openai('/ge').responses.create({ model: 'any', tools, input: [{ role: 'user', content: 'weather?' }, ...(r.output as OpenAI.Responses.ResponseInputItem[]), { type: 'function_call_output', call_id: call.call_id, output: 'sunny' }] });
      const wire = JSON.parse(t.upstream.received.at(-1)!.body.toString('utf8')) as { contents: { role: string; parts: Record<string, unknown>[] }[] };
      assert.deepEqual(wire.contents[1], { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: 'c2lnbmF0dXJl' }] });
    }
  });

  it('a request that continues a stored response: 400 in OpenAI\'s shape, the provider not called', async () => {
    const before = t.upstream.received.length;
    const err = await rejection(openai('/an').responses.create({ model: 'any', input: 'and then?', previous_response_id: 'resp_123' }), OpenAI.BadRequestError);
    assert.match(String((err.error as { message?: string }).message), /previous_response_id/);
    assert.equal(t.upstream.received.length, before);
  });

  it("a streamed refusal (OpenAI-compatible provider) is the message's refusal part, as in a complete answer", async () => {
    const chunk = (delta: unknown, finish: string | null = null): string => sse(undefined, { id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'gemini-x', choices: [{ index: 0, delta, finish_reason: finish }] });
    t.answer('text/event-stream', [chunk({ role: 'assistant', content: null, refusal: '' }), chunk({ refusal: "I'm sorry, " }), chunk({ refusal: "I can't." }), chunk({}, 'stop'), 'data: [DONE]\n\n'].join(''));
    const r = await openai('/oa').responses.stream({ model: 'any', input: 'something bad' }).finalResponse();
    assert.equal(r.status, 'completed');
    const message = r.output.find((i) => i.type === 'message');
    const parts = message?.type === 'message' ? message.content.map((p) => [p.type, p.type === 'refusal' ? p.refusal : p.text]) : [];
    assert.deepEqual(parts, [['refusal', "I'm sorry, I can't."]]);
  });

  it('parallel calls whose deltas interleave (OpenAI-compatible provider): each function_call item gets its own arguments', async () => {
    t.answer('text/event-stream', OPENAI_INTERLEAVED_TOOLS);
    const r = await openai('/oa').responses.stream({ model: 'any', input: 'weather and time?', tools }).finalResponse();
    assert.deepEqual(calls(r), [
      ['call_a', 'get_weather', '{"city":"Paris"}', 'completed'],
      ['call_b', 'get_time', '{"zone":"CET"}', 'completed'],
    ]);
    assert.equal(r.output_text, 'Both asked.');
  });

  it('a provider error mid-stream ends the stream with an error event', async () => {
    t.answer(
      'text/event-stream',
      [
        MESSAGE_START,
        sse('error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }),
      ].join(''),
    );
    await assert.rejects(openai('/an').responses.stream({ model: 'any', input: 'hi' }).finalResponse(), /Overloaded/);
  });

  it('a streamed answer longer than the gateway holds (32 MiB) ends with an error event, the provider cut off', async () => {
    const piece = (n: number) => sse(undefined, { id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content: String(n).repeat(7 * 1024 * 1024) }, finish_reason: null }] });
    // 6 x 7 MiB, then more: the provider would go on.
    t.answer('text/event-stream', [0, 1, 2, 3, 4, 5, 6, 7].map(piece).join(''));
    await assert.rejects(openai('/oa').responses.stream({ model: 'any', input: 'talk' }).finalResponse(), /longer than 33554432 characters/);
  });
});
