// Unit tests of the OpenAI Chat Completions <-> Gemini native translation (plugins/lib/llm/gemini/).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { LlmEvent } from '../../plugins/lib/llm/events.ts';
import { geminiResponseToCompletions } from '../../plugins/lib/llm/gemini/answer.ts';
import { geminiNativePath, parseGeminiPath } from '../../plugins/lib/llm/gemini/paths.ts';
import { completionsRequestToGemini } from '../../plugins/lib/llm/gemini/request.ts';
import { MAX_INLINED_SCHEMAS, toGeminiSchema } from '../../plugins/lib/llm/gemini/schema.ts';
import { GeminiToCompletionsStream } from '../../plugins/lib/llm/gemini/stream.ts';
import { translation } from '../../plugins/lib/llm/translate.ts';
import { usageFromGemini } from '../../plugins/lib/llm/usage.ts';
import { canonicalExtra } from '../../plugins/lib/llm/chat-messages.ts';

const ev = (data: Record<string, unknown>): LlmEvent => ({ type: undefined, data });

describe('Gemini paths', () => {
  it('reads the model and method of native paths', () => {
    assert.deepEqual(parseGeminiPath('/v1beta/models/gemini-2.5-flash:generateContent'), { model: 'gemini-2.5-flash', method: 'generateContent' });
    assert.deepEqual(parseGeminiPath('/x/v1/projects/p/locations/l/publishers/google/models/gemini-2.0-flash-001:streamGenerateContent'), { model: 'gemini-2.0-flash-001', method: 'streamGenerateContent' });
    assert.deepEqual(parseGeminiPath('/v1beta/models/gemini-2.5-flash:countTokens'), { model: 'gemini-2.5-flash', method: 'countTokens' });
    assert.deepEqual(parseGeminiPath('/v1/chat/completions'), { model: undefined, method: undefined });
  });

  it('writes native paths without the models/ or google/ prefix', () => {
    assert.equal(geminiNativePath('/v1beta', 'geminiNative', 'models/gemini-2.5-flash', false), '/v1beta/models/gemini-2.5-flash:generateContent');
    assert.equal(geminiNativePath('/v1beta', 'geminiNative', 'google/gemini-2.5-flash', true), '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
    assert.equal(geminiNativePath('/p', 'geminiCountTokens', 'gemini-2.5-flash', true), '/p/models/gemini-2.5-flash:countTokens');
  });
});

describe('tool schemas as Gemini Schema', () => {
  it('inlines local $refs, maps const, oneOf and nullable type lists, drops unknown keywords', () => {
    const schema = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      additionalProperties: false,
      $defs: { unit: { type: 'string', enum: ['c', 'f'] } },
      properties: {
        unit: { $ref: '#/$defs/unit', description: 'Unit' },
        mode: { const: 'fast' },
        note: { type: ['string', 'null'], examples: ['x'] },
        either: { oneOf: [{ type: 'string' }, { type: 'integer' }] },
        list: { type: 'array', items: { type: 'object', properties: { a: { type: 'number' } }, additionalProperties: true } },
      },
      required: ['unit'],
    };
    assert.deepEqual(toGeminiSchema(schema), {
      type: 'object',
      properties: {
        unit: { type: 'string', enum: ['c', 'f'], description: 'Unit' },
        mode: { enum: ['fast'] },
        note: { type: 'string', nullable: true },
        either: { anyOf: [{ type: 'string' }, { type: 'integer' }] },
        list: { type: 'array', items: { type: 'object', properties: { a: { type: 'number' } } } },
      },
      required: ['unit'],
    });
  });

  it(`refuses schemas that inline into more than ${MAX_INLINED_SCHEMAS} schemas, counted over the whole request`, () => {
    // A recursive definition naming itself twice: 2^33 schemas if unrolled to the depth limit.
    const tree = { $defs: { node: { type: 'object', properties: { left: { $ref: '#/$defs/node' }, right: { $ref: '#/$defs/node' } } } }, $ref: '#/$defs/node' };
    assert.throws(() => toGeminiSchema(tree), /more than 20000 schemas once their `\$ref`s are inlined/);
    // A recursive definition naming itself once unrolls to the depth limit, well within the budget.
    const list = { $defs: { item: { type: 'object', properties: { next: { $ref: '#/$defs/item' } } } }, $ref: '#/$defs/item' };
    assert.doesNotThrow(() => toGeminiSchema(list));
    // Many tools, each small: their sum is what counts.
    const params = { type: 'object', properties: Object.fromEntries(Array.from({ length: 99 }, (_, i) => [`p${i}`, { type: 'string' }])) };
    const tools = (n: number) => Array.from({ length: n }, (_, i) => ({ type: 'function', function: { name: `t${i}`, parameters: params } }));
    assert.doesNotThrow(() => completionsRequestToGemini({ messages: [{ role: 'user', content: 'hi' }], tools: tools(150) }));
    assert.throws(() => completionsRequestToGemini({ messages: [{ role: 'user', content: 'hi' }], tools: tools(250) }), /more than 20000 schemas/);
  });
});

describe('Chat Completions request → generateContent', () => {
  it('translates media parts, response_format, tool results and thought signatures', () => {
    const out = completionsRequestToGemini({
      model: 'gemini-2.5-flash',
      top_k: 5,
      seed: 7,
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', properties: { a: { type: 'string' } }, additionalProperties: false } } },
      tool_choice: 'none',
      tools: [{ type: 'function', function: { name: 'now', parameters: { type: 'object', properties: {} } } }],
      messages: [
        { role: 'developer', content: [{ type: 'text', text: 'Rule one.' }] },
        { role: 'system', content: 'Rule two.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'look' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
            { type: 'image_url', image_url: { url: 'https://example.com/cat.webp' } },
          ],
        },
        {
          role: 'assistant',
          content: 'Checking.',
          tool_calls: [
            { id: 'a', type: 'function', function: { name: 'now', arguments: '{}' }, extra_content: { google: { thought_signature: 'sig-1' } } },
            { id: 'b', type: 'function', function: { name: 'now', arguments: '' } },
          ],
        },
        { role: 'tool', tool_call_id: 'a', content: '12:00' },
        { role: 'tool', tool_call_id: 'b', content: '[1,2]' },
      ],
    });
    assert.deepEqual(out, {
      contents: [
        { role: 'user', parts: [{ text: 'look' }, { inlineData: { mimeType: 'image/png', data: 'AAAA' } }, { fileData: { mimeType: 'image/webp', fileUri: 'https://example.com/cat.webp' } }] },
        { role: 'model', parts: [{ text: 'Checking.' }, { functionCall: { name: 'now', args: {} }, thoughtSignature: 'sig-1' }, { functionCall: { name: 'now', args: {} } }] },
        { role: 'user', parts: [{ functionResponse: { name: 'now', response: { output: '12:00' } } }, { functionResponse: { name: 'now', response: { output: [1, 2] } } }] },
      ],
      systemInstruction: { parts: [{ text: 'Rule one.' }, { text: 'Rule two.' }] },
      generationConfig: { topK: 5, seed: 7, responseMimeType: 'application/json', responseSchema: { type: 'object', properties: { a: { type: 'string' } } } },
      tools: [{ functionDeclarations: [{ name: 'now' }] }],
      toolConfig: { functionCallingConfig: { mode: 'NONE' } },
    });
  });

  it('reaches generateContent from Anthropic Messages through Chat Completions', () => {
    const tr = translation('messages', 'geminiNative')!;
    assert.equal(tr.identity, false);
    const out = tr.request({
      model: 'gemini-2.5-flash',
      max_tokens: 10,
      system: 'S',
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'f', input: { x: 1 } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'done' }] },
      ],
    });
    assert.deepEqual(out, {
      contents: [
        { role: 'user', parts: [{ text: 'hi' }] },
        { role: 'model', parts: [{ functionCall: { name: 'f', args: { x: 1 } } }] },
        { role: 'user', parts: [{ functionResponse: { name: 'f', response: { output: 'done' } } }] },
      ],
      systemInstruction: { parts: [{ text: 'S' }] },
      generationConfig: { maxOutputTokens: 10 },
    });
    assert.equal(translation('generateContent', 'geminiNative')!.identity, true);
    assert.equal(translation('geminiCountTokens', 'geminiCountTokens')!.identity, true);
  });
});

describe('generateContent response → Chat Completions', () => {
  it('keeps thoughts out of the text (as reasoning_content and a thinking block beside it), keeps thought signatures, counts thinking tokens as completion tokens', () => {
    const out = geminiResponseToCompletions(
      {
        responseId: 'resp-1',
        modelVersion: 'gemini-2.5-flash-001',
        candidates: [{ index: 0, finishReason: 'STOP', content: { role: 'model', parts: [{ text: 'thinking…', thought: true }, { text: 'Calling.' }, { functionCall: { id: 'fc-1', name: 'f', args: { a: 1 } }, thoughtSignature: 'sig' }] } }],
        usageMetadata: { promptTokenCount: 10, cachedContentTokenCount: 4, candidatesTokenCount: 3, thoughtsTokenCount: 6, totalTokenCount: 19 },
      },
      'gemini-2.5-flash',
    );
    assert.equal(out.id, 'resp-1');
    assert.equal(out.model, 'gemini-2.5-flash-001');
    assert.deepEqual(JSON.parse(JSON.stringify(out.choices)), [
      {
        index: 0,
        logprobs: null,
        finish_reason: 'tool_calls',
        message: { role: 'assistant', content: 'Calling.', tool_calls: [{ id: 'fc-1', type: 'function', function: { name: 'f', arguments: '{"a":1}' }, extra_content: { google: { thought_signature: 'sig' } } }], reasoning_content: 'thinking…' },
      },
    ]);
    // An Anthropic client's thinking block (ADR 0167): the thoughts with the turn's signature.
    assert.deepEqual(canonicalExtra(out.choices[0].message, 'thinking'), [{ type: 'thinking', thinking: 'thinking…', signature: 'sig' }]);
    assert.deepEqual(out.usage, { prompt_tokens: 10, completion_tokens: 9, total_tokens: 19, prompt_tokens_details: { cached_tokens: 4 }, completion_tokens_details: { reasoning_tokens: 6 } });
    assert.deepEqual(usageFromGemini({ promptTokenCount: 10, cachedContentTokenCount: 4, candidatesTokenCount: 3, thoughtsTokenCount: 6 }), { inputTokens: 10, outputTokens: 9, cachedInputTokens: 4, reasoningTokens: 6 });
  });

  it('maps finish reasons, and a blocked prompt to content_filter', () => {
    const finish = (finishReason: string): unknown => geminiResponseToCompletions({ candidates: [{ finishReason, content: { parts: [{ text: 'x' }] } }] }, 'm').choices[0].finish_reason;
    assert.equal(finish('MAX_TOKENS'), 'length');
    assert.equal(finish('SAFETY'), 'content_filter');
    assert.equal(finish('RECITATION'), 'content_filter');
    assert.equal(finish('OTHER'), 'stop');
    const blocked = geminiResponseToCompletions({ promptFeedback: { blockReason: 'SAFETY' }, usageMetadata: { promptTokenCount: 3 } }, 'm');
    assert.equal(blocked.choices[0].finish_reason, 'content_filter');
    assert.equal(blocked.choices[0].message.content, '');
    assert.equal(blocked.model, 'm');
  });
});

describe('Gemini stream → chat.completion.chunks', () => {
  it('merges usage across chunks and ends with a usage chunk and [DONE] only after a finish reason', () => {
    const t = new GeminiToCompletionsStream('m');
    const out = [
      ...t.event(ev({ candidates: [{ content: { parts: [{ text: 'hm', thought: true }] } }], usageMetadata: { promptTokenCount: 4 } })),
      ...t.event(ev({ candidates: [{ content: { parts: [{ text: 'Hi' }] } }] })),
      ...t.event(ev({ candidates: [{ content: { parts: [{ text: '!' }] }, finishReason: 'MAX_TOKENS' }], usageMetadata: { promptTokenCount: 4, candidatesTokenCount: 2, totalTokenCount: 6 } })),
      ...t.end(),
    ];
    const deltas = out.filter((e) => !e.done).map((e) => (e.data.choices as { delta: unknown; finish_reason: unknown }[])[0] ?? { usage: e.data.usage });
    assert.deepEqual(JSON.parse(JSON.stringify(deltas)), [
      { index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null },
      { index: 0, delta: { reasoning_content: 'hm' }, logprobs: null, finish_reason: null },
      { index: 0, delta: { content: 'Hi' }, logprobs: null, finish_reason: null },
      { index: 0, delta: { content: '!' }, logprobs: null, finish_reason: null },
      { index: 0, delta: {}, logprobs: null, finish_reason: 'length' },
      { usage: { prompt_tokens: 4, completion_tokens: 2, total_tokens: 6 } },
    ]);
    assert.equal(out[out.length - 1]!.done, true);
  });

  it('does not complete a stream cut before its finish reason, and turns an error event into an error chunk', () => {
    const cut = new GeminiToCompletionsStream('m');
    cut.event(ev({ candidates: [{ content: { parts: [{ text: 'Hi' }] } }] }));
    assert.deepEqual(cut.end(), []);
    const failing = new GeminiToCompletionsStream('m');
    const out = failing.event(ev({ error: { code: 503, message: 'overloaded', status: 'UNAVAILABLE' } }));
    assert.deepEqual(out.map((e) => e.data), [{ error: { message: 'overloaded', type: 'UNAVAILABLE', param: null, code: 503 } }]);
    assert.deepEqual(failing.end(), []);
  });
});
