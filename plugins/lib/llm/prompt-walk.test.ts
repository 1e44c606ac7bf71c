import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { estimatePromptTokens, maxOutputTokens } from './estimate.ts';
import type { Obj } from './json.ts';
import { promptFigures } from './prompt-walk.ts';
import { requestFields } from './request-fields.ts';

/** The walk answers exactly what the parsed body gives, or undefined (then the caller parses). */
function agrees(text: string | Buffer, mustAnswer = true): void {
  const b = Buffer.isBuffer(text) ? text : Buffer.from(text);
  if (requestFields(b) === undefined) return; // the walk is only asked about texts requestFields took
  const body = JSON.parse(b.toString('utf8')) as Obj;
  const figures = promptFigures(b);
  if (figures === undefined) {
    assert.ok(!mustAnswer, `gave up on ${b.toString('utf8')}`);
    return;
  }
  assert.deepEqual(figures, { tokens: estimatePromptTokens(body), maxOutputTokens: maxOutputTokens(body) }, b.toString('utf8'));
}

describe('promptFigures (token limits without parsing the body)', () => {
  it('matches estimatePromptTokens and maxOutputTokens on chat, messages, responses and embeddings bodies', () => {
    agrees(JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }] }));
    agrees(JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: [{ type: 'text', text: 'what is in this image?' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] }], max_tokens: 64, stream: true }));
    agrees(JSON.stringify({ model: 'claude', system: [{ type: 'text', text: 'sys', cache_control: { type: 'ephemeral' } }], messages: [{ role: 'user', content: 'hi' }], max_tokens: 1024 }));
    agrees(JSON.stringify({ model: 'gpt-4o', input: 'a prompt', instructions: 'x', max_output_tokens: 0 }));
    agrees(JSON.stringify({ model: 'e', input: ['one', 'two', 3, null, true] }));
    agrees(JSON.stringify({ model: 'm', messages: [], tools: [{ type: 'function', function: { name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }], max_completion_tokens: 5, max_tokens: 9 }));
    agrees(JSON.stringify({ model: 'm', prompt: 'p', generationConfig: { temperature: 0.5, maxOutputTokens: 77 } }));
    agrees(JSON.stringify({ model: 'm', prompt: 'p', max_tokens: -1, max_output_tokens: 1e3, generationConfig: [1] }));
    agrees('{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":"12"}');
    agrees('  {  "model" : "m" , "messages" : [ { "role" : "user" , "content" : [ "a" , { "text" : "bc" } ] } ] , "max_tokens" : 12 }  ');
    agrees('{}');
    // Each answer asked for has the cap: `n` (Chat Completions), Gemini's `candidateCount`.
    agrees(JSON.stringify({ model: 'm', messages: [], max_tokens: 100, n: 3 }));
    agrees(JSON.stringify({ model: 'm', n: 4, messages: [], max_completion_tokens: 10, n2: 9 }));
    agrees(JSON.stringify({ model: 'm', messages: [], max_tokens: 100, n: 2.5 }));
    agrees('{"model":"m","messages":[],"n":"3","max_tokens":7}');
    agrees(JSON.stringify({ model: 'm', contents: [], generationConfig: { candidateCount: 2, maxOutputTokens: 50 } }));
    agrees('{"model":"m","contents":[],"generationConfig":{"candidateCount":2,"maxOutputTokens":50},"generationConfig":{"maxOutputTokens":5}}');
    agrees('{"model":"m","contents":[],"generationConfig":{"candidateCount":2},"max_tokens":5,"generationConfig":1}');
    assert.equal(promptFigures(Buffer.from(JSON.stringify({ model: 'm', messages: [], max_tokens: 100, n: 3 })))!.maxOutputTokens, 300);
  });

  it('counts as JavaScript does: escapes, non-ASCII, astral characters, invalid UTF-8', () => {
    agrees(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'quote " backslash \\ newline \n tab \t é ü 漢字 😀 \u0001' }] }));
    agrees('{"model":"m","messages":[{"role":"user","content":"\\ud83d\\ude00 \\u00e9 \\/ \\b\\f\\r"}]}');
    agrees(Buffer.concat([Buffer.from('{"model":"m","prompt":"a'), Buffer.from([0xc3, 0x28, 0xe2, 0x82, 0xf0, 0x9f]), Buffer.from('b"}')]));
  });

  it('repeated keys keep their last value, at the top and below; depth past 12 counts nothing but strings', () => {
    agrees('{"model":"m","messages":[{"role":"user","content":"long text here"}],"messages":[{"role":"user","content":"x"}]}');
    agrees('{"model":"m","messages":[{"role":"user","content":"long text here","content":"y","role":"assistant"}]}');
    agrees('{"model":"m","messages":[{"text":"abc","role":"zz","text":{"a":"b"},"text":"q"}]}');
    agrees('{"model":"m","max_tokens":5,"max_tokens":"x","max_completion_tokens":7,"max_completion_tokens":null}');
    agrees('{"model":"m","generationConfig":{"maxOutputTokens":3,"maxOutputTokens":4},"generationConfig":{"maxOutputTokens":9}}');
    let deep: unknown = 'leaf';
    for (let i = 0; i < 20; i++) deep = i % 2 ? [deep, 'x'] : { k: deep, role: 'r' };
    agrees(JSON.stringify({ model: 'm', messages: deep }));
    agrees(JSON.stringify({ model: 'm', messages: [{ __proto__: 'p', constructor: 'c' }] }).replace('"constructor"', '"__proto__"'));
  });

  it('gives up (the caller parses) on an escaped key below the top level', () => {
    const b = Buffer.from('{"model":"m","messages":[{"r\\u006fle":"user","content":"x"}]}');
    assert.equal(promptFigures(b), undefined);
    agrees(b, false);
  });

  it('ends on any text, even one requestFields would refuse (every prefix of a body)', () => {
    const text = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: ['a "q"', { text: 'é😀' }] }], generationConfig: { maxOutputTokens: 5 }, max_tokens: 12 });
    for (let n = 0; n <= text.length; n++) promptFigures(Buffer.from(text.slice(0, n)));
    for (const junk of ['{"messages":[', '{"messages":{"a"', '{"x":tru', '{"messages":"\\', '{']) promptFigures(Buffer.from(junk));
  });

  it('agrees with the parsed body on random bodies', () => {
    let seed = 13;
    const rnd = (n: number): number => ((seed = (seed * 1103515245 + 12345) % 2147483648), seed % n);
    const words = ['role', 'type', 'id', 'text', 'content', 'data', 'image_url', 'x', 'messages', 'maxOutputTokens', 'a"b', 'é', '😀', 'tool_call_id', 'input'];
    const str = (): string => Array.from({ length: rnd(6) }, () => words[rnd(words.length)]! + (rnd(4) === 0 ? '\n\\' : '')).join(' ');
    const value = (depth: number): unknown => {
      const k = rnd(depth > 14 ? 4 : 7);
      if (k === 0) return str();
      if (k === 1) return rnd(2) === 0 ? rnd(1000) - 10 : rnd(1000) / 7;
      if (k === 2) return [true, false, null][rnd(3)];
      if (k === 3) return str();
      if (k === 4) return Array.from({ length: rnd(4) }, () => value(depth + 1));
      const o: Record<string, unknown> = {};
      for (let i = rnd(4); i > 0; i--) o[words[rnd(words.length)]!] = value(depth + 1);
      return o;
    };
    const top = ['model', 'messages', 'system', 'input', 'instructions', 'contents', 'systemInstruction', 'prompt', 'tools', 'max_tokens', 'max_completion_tokens', 'max_output_tokens', 'generationConfig', 'stream', 'temperature'];
    for (let n = 0; n < 3000; n++) {
      const body: Record<string, unknown> = {};
      for (let i = rnd(8); i > 0; i--) body[top[rnd(top.length)]!] = rnd(3) === 0 ? rnd(500) : value(0);
      let text = JSON.stringify(body, null, rnd(3) === 0 ? 1 : undefined);
      // Repeated keys now and then (JSON.stringify never writes them).
      if (rnd(5) === 0 && text.length > 2) text = `{"messages":${JSON.stringify(value(0))},"max_tokens":${rnd(50)},${text.slice(1)}`.replace(/,}$/, '}');
      agrees(text);
    }
  });
});
