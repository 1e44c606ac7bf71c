import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { guardMessages, requestSlots, responseSlots, writeBack } from './messages.ts';

describe('llm-guard message extraction', () => {
  it('completions: string and text-part contents, in order; tool calls and images are not text', () => {
    const body = {
      model: 'gpt-4o',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: [{ type: 'text', text: 'look at' }, { type: 'image_url', image_url: { url: 'data:…' } }, { type: 'text', text: 'this' }] },
        { role: 'assistant', content: null, tool_calls: [{ id: 't1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 't1', content: 'result' },
      ],
    };
    const slots = requestSlots('completions', body);
    assert.deepEqual(guardMessages(slots), [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'look at' },
      { role: 'user', content: 'this' },
      { role: 'tool', content: 'result' },
    ]);
    writeBack(slots, [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'LOOK' },
      { role: 'user', content: 'this' },
      { role: 'tool', content: 'RESULT' },
    ]);
    assert.deepEqual(body.messages[1]!.content, [{ type: 'text', text: 'LOOK' }, { type: 'image_url', image_url: { url: 'data:…' } }, { type: 'text', text: 'this' }]);
    assert.equal(body.messages[3]!.content, 'RESULT');
    assert.equal(body.messages[2]!.content, null);
  });

  it('generateContent (Gemini): systemInstruction, then the text parts of contents; the model is assistant', () => {
    const body = {
      systemInstruction: { parts: [{ text: 'sys' }] },
      contents: [
        { role: 'user', parts: [{ text: 'mail a@b.example' }, { inlineData: { mimeType: 'image/png', data: 'AA==' } }] },
        { role: 'model', parts: [{ functionCall: { name: 'f', args: {} } }, { text: 'ok' }] },
      ],
    };
    const slots = requestSlots('generateContent', body);
    assert.deepEqual(guardMessages(slots), [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'mail a@b.example' },
      { role: 'assistant', content: 'ok' },
    ]);
    writeBack(slots, [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'mail <EMAIL_ADDRESS>' },
      { role: 'assistant', content: 'ok' },
    ]);
    assert.deepEqual(body.contents[0]!.parts[0], { text: 'mail <EMAIL_ADDRESS>' });
    assert.deepEqual(guardMessages(requestSlots('generateContent', { system_instruction: { parts: [{ text: 'snake' }] } })), [{ role: 'system', content: 'snake' }]);
    const answer = { candidates: [{ content: { role: 'model', parts: [{ text: 'the answer' }] } }] };
    assert.deepEqual(guardMessages(responseSlots('generateContent', answer)), [{ role: 'assistant', content: 'the answer' }]);
  });

  it('messages (Anthropic): system string or blocks, then text blocks of the messages', () => {
    const body = {
      system: [{ type: 'text', text: 'sys', cache_control: { type: 'ephemeral' } }],
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: [{ type: 'text', text: 'hello' }, { type: 'tool_use', id: 'x', name: 'f', input: {} }] },
      ],
    };
    const slots = requestSlots('messages', body);
    assert.deepEqual(guardMessages(slots), [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'hello' },
    ]);
    writeBack(slots, [
      { role: 'system', content: 'SYS' },
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'hello' },
    ]);
    assert.deepEqual(body.system, [{ type: 'text', text: 'SYS', cache_control: { type: 'ephemeral' } }]);
    assert.deepEqual(guardMessages(requestSlots('messages', { system: 'plain', messages: [] })), [{ role: 'system', content: 'plain' }]);
  });

  it('responses: instructions, string input, or message items with input_text parts', () => {
    assert.deepEqual(guardMessages(requestSlots('responses', { instructions: 'be kind', input: 'hello' })), [
      { role: 'system', content: 'be kind' },
      { role: 'user', content: 'hello' },
    ]);
    const body = {
      input: [
        { role: 'user', content: [{ type: 'input_text', text: 'a' }, { type: 'input_image', image_url: 'x' }] },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'b' }] },
        { type: 'function_call_output', call_id: 'c', output: 'not a prompt' },
        { role: 'user', content: 'c' },
      ],
    };
    assert.deepEqual(guardMessages(requestSlots('responses', body)), [
      { role: 'user', content: 'a' },
      { role: 'assistant', content: 'b' },
      { role: 'user', content: 'c' },
    ]);
  });

  it('embeddings: string or list of strings; passthrough and realtime have no text', () => {
    const body = { input: ['one', 'two'] };
    const slots = requestSlots('embeddings', body);
    assert.deepEqual(guardMessages(slots), [
      { role: 'user', content: 'one' },
      { role: 'user', content: 'two' },
    ]);
    writeBack(slots, [
      { role: 'user', content: 'ONE' },
      { role: 'user', content: 'two' },
    ]);
    assert.deepEqual(body.input, ['ONE', 'two']);
    assert.deepEqual(requestSlots('passthrough', { messages: [{ role: 'user', content: 'x' }] }), []);
    assert.deepEqual(requestSlots('realtime', { messages: [{ role: 'user', content: 'x' }] }), []);
  });

  it('responses of each format: completions choices, Anthropic content blocks, Responses output messages', () => {
    const completions = { choices: [{ index: 0, message: { role: 'assistant', content: 'one' } }, { index: 1, message: { role: 'assistant', content: 'two' } }] };
    const slots = responseSlots('completions', completions);
    assert.deepEqual(guardMessages(slots), [
      { role: 'assistant', content: 'one' },
      { role: 'assistant', content: 'two' },
    ]);
    writeBack(slots, [
      { role: 'assistant', content: 'ONE' },
      { role: 'assistant', content: 'two' },
    ]);
    assert.equal(completions.choices[0]!.message.content, 'ONE');
    assert.deepEqual(guardMessages(responseSlots('messages', { role: 'assistant', content: [{ type: 'thinking', thinking: '…' }, { type: 'text', text: 'answer' }] })), [
      { role: 'assistant', content: 'answer' },
    ]);
    const responses = { output: [{ type: 'reasoning', summary: [] }, { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'out' }] }] };
    assert.deepEqual(guardMessages(responseSlots('responses', responses)), [{ role: 'assistant', content: 'out' }]);
    assert.deepEqual(guardMessages(responseSlots('detect', completions)), guardMessages(responseSlots('completions', completions)));
  });

  it('writeBack refuses another number of messages or a non-text content, leaving the body alone', () => {
    const body = { messages: [{ role: 'user', content: 'a' }] };
    const slots = requestSlots('completions', body);
    assert.throws(() => writeBack(slots, []), /returned 0 messages for 1/);
    assert.throws(() => writeBack(slots, [{ role: 'user', content: 5 as unknown as string }]), /no text content/);
    assert.equal(body.messages[0]!.content, 'a');
  });
});
