// The `ai` policy on Gemini-native clients (`generateContent` / `streamGenerateContent`): prompts, defaults,
// overrides, transformations and model aliases, mapped to Gemini's shape (docs/ai-policy.md "Gemini clients").
// aimock plays Gemini; a recorder in front keeps what the upstream received.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { aiRoute, FIXTURES, startAiGateway, startMock, startRecorder } from './harness.ts';
import type { AiGateway, Mock, Recorder } from './harness.ts';

const ROUTES = { ':generateContent': 'generateContent', ':streamGenerateContent': 'generateContent', '*': 'completions' };

const POLICY = {
  ai: {
    routes: ROUTES,
    prompts: {
      prepend: [
        { role: 'system', content: 'You are the support assistant.' },
        { role: 'user', content: 'Context: order 42.' },
        { role: 'assistant', content: 'Noted.' },
      ],
      append: [{ role: 'system', content: 'Answer in English.' }],
    },
    // OpenAI-style and Gemini names both land in generationConfig; other fields stay top-level.
    defaults: { temperature: 0.2, max_tokens: 100, topK: 5, safetySettings: [{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_NONE' }] },
    overrides: { topP: 0.9, stop: 'END' },
    transformations: { seed: 'size(llmRequest.contents)' },
    modelAliases: { fast: 'gemini-2.5-flash' },
  },
};

const post = (gw: AiGateway, path: string, body: unknown): Promise<Response> =>
  fetch(`${gw.base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-goog-api-key': 'AIzaKey' }, body: JSON.stringify(body) });

describe('ai policy on Gemini-native clients', () => {
  let mock: Mock;
  let rec: Recorder;
  let gw: AiGateway;

  before(async () => {
    mock = await startMock(FIXTURES);
    rec = await startRecorder(mock.url);
    gw = await startAiGateway([aiRoute('/gp', { name: 'gp', provider: { gemini: {} }, hostOverride: rec.hostPort }, POLICY)]);
  });
  after(async () => {
    await gw?.stop();
    await rec?.close();
    await mock?.stop();
  });

  const expected = {
    systemInstruction: { parts: [{ text: 'You are the support assistant.' }, { text: 'Be brief.' }, { text: 'Answer in English.' }] },
    contents: [
      { role: 'user', parts: [{ text: 'Context: order 42.' }] },
      { role: 'model', parts: [{ text: 'Noted.' }] },
      { role: 'user', parts: [{ text: 'hello' }] },
    ],
    // The client's temperature and maxOutputTokens stay (defaults); topP, stopSequences (overrides) replace.
    generationConfig: { temperature: 0.7, maxOutputTokens: 20, topP: 0.9, stopSequences: ['END'], seed: 1, topK: 5 },
    safetySettings: [{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_NONE' }],
  };
  const clientBody = {
    systemInstruction: { parts: [{ text: 'Be brief.' }] },
    contents: [{ role: 'user', parts: [{ text: 'hello' }] }],
    generationConfig: { temperature: 0.7, maxOutputTokens: 20, topP: 0.1 },
  };

  it('generateContent: prompts in systemInstruction/contents, defaults and overrides in generationConfig, the alias in the path', async () => {
    const res = await post(gw, '/gp/v1beta/models/fast:generateContent', clientBody);
    assert.equal(res.status, 200);
    const answer = (await res.json()) as { candidates: { content: { parts: { text: string }[] } }[] };
    assert.equal(answer.candidates[0]!.content.parts[0]!.text, 'Hello from the mock!');
    const wire = rec.last();
    assert.equal(wire.url, '/v1beta/models/gemini-2.5-flash:generateContent');
    assert.deepEqual(wire.json(), expected);
  });

  it('streamGenerateContent: the same changes on a streamed request', async () => {
    const res = await post(gw, '/gp/v1beta/models/fast:streamGenerateContent?alt=sse', clientBody);
    assert.equal(res.status, 200);
    const text = await res.text();
    assert.match(text, /Hello from the mock!|Hello/);
    const wire = rec.last();
    assert.equal(wire.url, '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
    assert.deepEqual(wire.json(), expected);
  });

  it('snake_case system_instruction and a body without generationConfig', async () => {
    const res = await post(gw, '/gp/v1beta/models/gemini-2.0-flash:generateContent', {
      system_instruction: { parts: [{ text: 'Be brief.' }] },
      contents: [{ role: 'user', parts: [{ text: 'hello' }] }],
    });
    assert.equal(res.status, 200);
    const wire = rec.last();
    assert.equal(wire.url, '/v1beta/models/gemini-2.0-flash:generateContent');
    const body = wire.json();
    assert.equal(body.systemInstruction, undefined);
    assert.deepEqual(body.system_instruction, expected.systemInstruction);
    assert.deepEqual(body.generationConfig, { temperature: 0.2, maxOutputTokens: 100, topP: 0.9, stopSequences: ['END'], seed: 1, topK: 5 });
  });
});
