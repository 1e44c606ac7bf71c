import assert from 'node:assert/strict';
import { it } from 'node:test';
import { genAiRequestAttributes, requestAttributeMembers } from './request-attributes.ts';

const defined = (o: object): object => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

it("reads a Gemini client's generationConfig, a string stop, an embedding's encoding format", () => {
  const gemini = { generationConfig: { maxOutputTokens: 10, temperature: 0, topP: 0.5, topK: 4, candidateCount: 1, seed: 3, stopSequences: ['x'], presencePenalty: 0.2, frequencyPenalty: 0.3 } };
  assert.deepEqual(defined(genAiRequestAttributes(gemini)), {
    'gen_ai.request.max_tokens': 10,
    'gen_ai.request.temperature': 0,
    'gen_ai.request.top_p': 0.5,
    'gen_ai.request.top_k': 4,
    'gen_ai.request.frequency_penalty': 0.3,
    'gen_ai.request.presence_penalty': 0.2,
    'gen_ai.request.stop_sequences': ['x'],
    'gen_ai.request.seed': 3,
  });
  assert.deepEqual(defined(genAiRequestAttributes({ stop: 'END', max_output_tokens: 5 })), { 'gen_ai.request.stop_sequences': ['END'], 'gen_ai.request.max_tokens': 5 });
  assert.deepEqual(defined(genAiRequestAttributes({ input: 'a', encoding_format: 'base64' })), { 'gen_ai.request.encoding_formats': ['base64'] });
});

it("ignores values of the wrong type and bounds a client's stop sequences", () => {
  assert.deepEqual(defined(genAiRequestAttributes({ temperature: '0.5', max_tokens: null, n: 'two', stop: [1, 'a'] })), { 'gen_ai.request.stop_sequences': ['a'] });
  const stops = genAiRequestAttributes({ stop: Array.from({ length: 100 }, () => 'y'.repeat(10_000)) })['gen_ai.request.stop_sequences'] as string[];
  assert.equal(stops.length, 10);
  assert.equal(stops[0]!.length, 256);
});

it('picks only the members the attributes come from out of bytes not parsed whole', () => {
  const raw = Buffer.from(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x'.repeat(1000) }], temperature: 0.1 }));
  assert.deepEqual(requestAttributeMembers(raw), { temperature: 0.1 });
});
