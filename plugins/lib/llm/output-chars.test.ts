// The output characters a stream event carried, read from its raw text (ADR 0150: what a cut stream is charged).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cutUsage, outputChars } from './output-chars.ts';
import { responses } from './formats/responses.ts';

describe('outputChars', () => {
  it('counts the string values of the named members, an escape as one character', () => {
    const chunk = JSON.stringify({ id: 'c1', model: 'gpt-4o', choices: [{ index: 0, delta: { content: 'a "quoted"\nline \u00e9' } }] });
    assert.equal(outputChars(chunk, ['content']), 'a "quoted"\nline \u00e9'.length);
    const call = JSON.stringify({ choices: [{ delta: { tool_calls: [{ index: 0, function: { name: 'get', arguments: '{"city":"Paris"}' } }] } }] });
    assert.equal(outputChars(call, ['content', 'arguments']), '{"city":"Paris"}'.length);
  });
  it('takes spaces around the colon, skips values that are no strings, and never a name inside a value', () => {
    assert.equal(outputChars('{"text" : "abc", "n": {"text": 5}}', ['text']), 3);
    assert.equal(outputChars(JSON.stringify({ text: 'say "text": "nothing"' }), ['text']), 'say "text": "nothing"'.length);
    assert.equal(outputChars('{"content":[]}', ['content']), 0);
    assert.equal(outputChars('{"content":"\\u00e9\\u00e9"}', ['content']), 2);
  });
  it("a Responses stream's text deltas count, its audio's base64 does not", () => {
    assert.equal(responses.outputChars!(JSON.stringify({ type: 'response.output_text.delta', delta: 'Hello' })), 5);
    assert.equal(responses.outputChars!(JSON.stringify({ type: 'response.audio.transcript.delta', delta: 'Hi' })), 2);
    assert.equal(responses.outputChars!(JSON.stringify({ type: 'response.audio.delta', delta: 'UklGRiQAAABXQVZF' })), 0);
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
