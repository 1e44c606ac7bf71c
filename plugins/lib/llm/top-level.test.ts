import assert from 'node:assert/strict';
import { it } from 'node:test';
import { pickTopLevel } from './top-level.ts';

const KEYS = ['model', 'usage'];

/** What `JSON.parse` makes of the same members. */
function parsed(text: string, keys = KEYS): Record<string, unknown> {
  const whole = JSON.parse(text) as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const k of keys) if (Object.hasOwn(whole, k)) out[k] = whole[k];
  return out;
}

it('picks the named top-level members as JSON.parse reads them, whatever the rest holds', () => {
  const docs = [
    '{"id":"c1","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}\n',
    // The names inside strings and nested objects are not members of the answer.
    '{"choices":[{"message":{"content":"\\"model\\":\\"fake\\", \\"usage\\": {\\"prompt_tokens\\": 9}","model":"nested"}}],"meta":{"usage":{"prompt_tokens":99}},"model":"real"}',
    ' \r\n\t{ "model" : "m\\u00e9" ,\n "usage" : { "prompt_tokens" : 1e2 , "x": [1, {"a": "]}"}] } , "tail": null } \n',
    // A duplicated member: the last one counts, as with JSON.parse.
    '{"model":"first","usage":{"a":1},"model":"second","usage":{"b":2}}',
    '{"model":"ünïcødé 模型","usage":{"prompt_tokens_details":{"cached_tokens":5}},"s":"\\\\","t":"\\\\\\""}',
    '{"content":"' + 'x'.repeat(5000) + '\\"' + 'y'.repeat(100) + '\\\\","model":"after a long string","usage":{"n":-1.5e-3}}',
    '{"usage":null,"model":false,"n":[],"o":{}}',
    '{}',
    '{"other":1}',
  ];
  for (const text of docs) assert.deepEqual(pickTopLevel(Buffer.from(text), KEYS), parsed(text), text.slice(0, 80));
  assert.deepEqual(pickTopLevel(Buffer.from('{"modelVersion":"g","usageMetadata":{"promptTokenCount":2}}'), ['modelVersion', 'usageMetadata']), { modelVersion: 'g', usageMetadata: { promptTokenCount: 2 } });
});

it('agrees with JSON.parse on random answers', () => {
  let seed = 7;
  const rnd = (n: number): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) % n);
  const pieces = ['model', 'usage', '"', '\\', '{', '}', '[', ']', ':', ',', 'é', '\n', ' ', 'x'];
  const str = (): string => Array.from({ length: rnd(12) }, () => pieces[rnd(pieces.length)]).join('');
  const value = (depth: number): unknown => {
    const k = rnd(depth > 2 ? 4 : 6);
    if (k === 0) return str();
    if (k === 1) return rnd(1000) - 500 + rnd(100) / 7;
    if (k === 2) return [true, false, null][rnd(3)];
    if (k === 3) return rnd(2) ? KEYS[rnd(2)] : str();
    if (k === 4) return Array.from({ length: rnd(4) }, () => value(depth + 1));
    return Object.fromEntries(Array.from({ length: rnd(4) }, () => [rnd(3) ? KEYS[rnd(2)]! : str(), value(depth + 1)]));
  };
  for (let n = 0; n < 3000; n++) {
    const obj = Object.fromEntries(Array.from({ length: rnd(6) }, () => [rnd(2) ? KEYS[rnd(2)]! : str(), value(0)]));
    const text = JSON.stringify(obj, null, rnd(2) ? 0 : 2);
    const picked = pickTopLevel(Buffer.from(text), KEYS);
    // A member name with an escape in it is left to JSON.parse.
    if (picked === undefined) assert.ok(Object.keys(obj).some((k) => JSON.stringify(k).includes('\\')), text);
    else assert.deepEqual(picked, parsed(text), text);
  }
});

it('gives up (the caller parses the answer whole) on what is not an object it can follow', () => {
  for (const text of ['', '[]', '"model"', '{', '{"model":"m"', '{"model":"m",}', '{"model":"m"} x', '{"model" "m"}', '{"mo\\u0064el":"m"}', '{"model":}', '{"a":"unterminated}', '{"a":{"b":1}']) {
    assert.equal(pickTopLevel(Buffer.from(text), KEYS), undefined, text);
  }
  // A picked member that is not JSON fails as JSON.parse would.
  assert.throws(() => pickTopLevel(Buffer.from('{"usage":{"a":tru}}'), KEYS), SyntaxError);
});
