// The output bytes a stream event carried, read from its raw text (ADR 0150, 0157: what a cut stream is charged).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cutUsage, outputBytes } from './output-bytes.ts';
import { responses } from './formats/responses.ts';
import { geminiNative } from './formats/gemini.ts';

describe('outputBytes', () => {
  it('counts the UTF-8 bytes of the string values of the named members, an escape as the character it stands for', () => {
    const chunk = JSON.stringify({ id: 'c1', model: 'gpt-4o', choices: [{ index: 0, delta: { content: 'a "quoted"\nline \u00e9' } }] });
    assert.equal(outputBytes(chunk, ['content']), Buffer.byteLength('a "quoted"\nline \u00e9'));
    const call = JSON.stringify({ choices: [{ delta: { tool_calls: [{ index: 0, function: { name: 'get', arguments: '{"city":"Paris"}' } }] } }] });
    assert.equal(outputBytes(call, ['content', 'arguments']), '{"city":"Paris"}'.length);
  });
  it('takes spaces around the colon, skips values that are no strings, and never a name inside a value', () => {
    assert.equal(outputBytes('{"text" : "abc", "n": {"text": 5}}', ['text']), 3);
    assert.equal(outputBytes(JSON.stringify({ text: 'say "text": "nothing"' }), ['text']), 'say "text": "nothing"'.length);
    assert.equal(outputBytes('{"content":[]}', ['content']), 0);
    assert.equal(outputBytes('{"content":"\\u00e9\\u00e9"}', ['content']), 4);
  });
  it('counts other scripts and emoji by their UTF-8 bytes, raw or escaped (characters / 4 undercounts them)', () => {
    for (const text of ['\u8bed\u8a00\u6a21\u578b', '\u043f\u0440\u0438\u0432\u0435\u0442', 'ok \u{1F600}']) {
      assert.equal(outputBytes(JSON.stringify({ text }), ['text']), Buffer.byteLength(text), text);
      let escaped = '';
      for (let i = 0; i < text.length; i++) {
        const u = text.charCodeAt(i);
        escaped += u < 0x80 ? text[i] : `\\u${u.toString(16).padStart(4, '0')}`;
      }
      assert.equal(outputBytes(`{"text":"${escaped}"}`, ['text']), Buffer.byteLength(text), `${text} escaped`);
    }
  });
  it("counts an object value's JSON text (Gemini's function-call args), its strings as they decode", () => {
    const args = { path: 'a.txt', content: 'line "one"\n\u00e9', list: [1, { deep: '}' }] };
    const event = JSON.stringify({ candidates: [{ content: { parts: [{ functionCall: { name: 'write', args } }, { text: 'ok' }] } }] });
    // Its three escapes (two quotes, a newline) count as the characters they stand for; the text part, 'ok', too.
    assert.equal(geminiNative.outputBytes!(event), Buffer.byteLength(JSON.stringify(args)) - 3 + 2);
    assert.equal(outputBytes('{"args": {"a": "b"}, "n": 1}', [], ['args']), Buffer.byteLength('{"a": "b"}'), 'the space inside counts too');
    assert.equal(outputBytes('{"args": {"a": "b"}}', ['args']), 0, 'only when asked for: a member named for strings skips an object');
  });
  it("a Responses stream's text deltas count, its audio's base64 does not", () => {
    assert.equal(responses.outputBytes!(JSON.stringify({ type: 'response.output_text.delta', delta: 'Hello' })), 5);
    assert.equal(responses.outputBytes!(JSON.stringify({ type: 'response.audio.transcript.delta', delta: 'Hi' })), 2);
    assert.equal(responses.outputBytes!(JSON.stringify({ type: 'response.audio.delta', delta: 'UklGRiQAAABXQVZF' })), 0);
  });
  it('a cut stream: the relayed output when more than reported, capped by the request; the prompt estimate when no input was reported', () => {
    const figures = { promptTokens: 7, maxOutputTokens: 100 };
    assert.deepEqual(cutUsage({}, 41, figures), { outputTokens: 11, inputTokens: 7 });
    assert.deepEqual(cutUsage({ inputTokens: 9, outputTokens: 1 }, 41, figures), { outputTokens: 11 });
    assert.deepEqual(cutUsage({ inputTokens: 9, outputTokens: 20 }, 41, figures), {}, 'never below what was reported');
    assert.deepEqual(cutUsage({ inputTokens: 9 }, 4000, figures), { outputTokens: 100 }, 'at most what the request allows');
    assert.deepEqual(cutUsage({}, 0, undefined), { outputTokens: 0 });
  });
});
