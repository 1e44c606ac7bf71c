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

// The picked members of real answers and of every kind of usage member must be JSON.parse's: the same numbers (-0
// included), key order, own `__proto__` members, prototypes; a member JSON.parse refuses is refused (docs/perf.md
// "The ai row, session 10": a walk building the usage from the bytes measured slower than parsing its text).

/** Real providers' answers, usage first, last, nested, with arrays, absent and null. */
const PROVIDER_ANSWERS = [
  // OpenAI Chat Completions, usage with both detail objects (and the answer's text escaped).
  '{"id":"chatcmpl-B9","object":"chat.completion","created":1741569952,"model":"gpt-4.1-2025-04-14","choices":[{"index":0,"message":{"role":"assistant","content":"Hello! \\"Quoted\\" \\u00e9\\n","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"service_tier":"default","system_fingerprint":"fp_6"}',
  // Usage first, pretty-printed.
  '{\n  "usage": {\n    "prompt_tokens": 38,\n    "completion_tokens": 80,\n    "total_tokens": 118\n  },\n  "model": "gpt-4o-mini",\n  "choices": []\n}\n',
  // OpenAI Responses.
  '{"id":"resp_67","object":"response","created_at":1741476542,"status":"completed","model":"gpt-4.1","output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"In a peaceful grove…","annotations":[]}]}],"usage":{"input_tokens":36,"input_tokens_details":{"cached_tokens":0},"output_tokens":87,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":123},"user":null,"metadata":{}}',
  // Anthropic Messages: cache counts, a nested cache_creation object, a string and a null.
  '{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-20250514","content":[{"type":"text","text":"Hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":2095,"cache_creation_input_tokens":0,"cache_read_input_tokens":1024,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0},"output_tokens":503,"service_tier":"standard","server_tool_use":null}}',
  // No usage; usage null; usage not an object.
  '{"id":"c","model":"m","choices":[]}',
  '{"model":"m","usage":null}',
  '{"model":"m","usage":[1,2,{"a":[]}]}',
  '{"model":"m","usage":42}',
  '{"model":"m","usage":-0}',
];

it('reads real providers’ answers as JSON.parse does', () => {
  for (const text of PROVIDER_ANSWERS) assert.deepStrictEqual(pickTopLevel(Buffer.from(text), KEYS), parsed(text), text.slice(0, 60));
  const gemini = '{"candidates":[{"content":{"parts":[{"text":"Hi"}],"role":"model"},"finishReason":"STOP","avgLogprobs":-0.0123}],"usageMetadata":{"promptTokenCount":8,"candidatesTokenCount":12,"totalTokenCount":20,"promptTokensDetails":[{"modality":"TEXT","tokenCount":8}],"thoughtsTokenCount":0},"modelVersion":"gemini-2.5-flash","responseId":"abc"}';
  assert.deepStrictEqual(pickTopLevel(Buffer.from(gemini), ['modelVersion', 'usageMetadata']), parsed(gemini, ['modelVersion', 'usageMetadata']));
});

it('reads every shape of number, string and member as JSON.parse does', () => {
  const numbers = ['0', '-0', '7', '-7', '123456789012345', '-123456789012345', '1234567890123456', '12345678901234567890', '9007199254740993', '98258076408540254', '-21039617389530179', '1.5', '-0.0', '0.1', '1e3', '1E+3', '2e-3', '-2.5E-7', '1.7976931348623157e309', '5e-324', '0e0'];
  for (const n of numbers) {
    const text = `{"usage":{"n": ${n} ,"m":[${n}]},"model":"x"}`;
    const picked = pickTopLevel(Buffer.from(text), KEYS)!;
    assert.deepStrictEqual(picked, parsed(text), n);
    assert.ok(Object.is((picked.usage as { n: number }).n, JSON.parse(n)), n);
  }
  const members = [
    '{"s":"caf\\u00e9","t":"é","u":"a\\nb","v":"\\\\","w":"\\/","x":"tab\\there","y":"\\ud83d\\ude00","z":"😀"}',
    '{"k\\u0041":1,"B":2}',
    '{"b":1,"a":2,"b":3,"1":4,"0":5}',
    '{"__proto__":{"x":1},"a":1}',
    '{"constructor":1,"toString":"s","hasOwnProperty":null}',
    '{"deep":' + '['.repeat(30) + '1' + ']'.repeat(30) + '}',
    '{"del":"\u007f","hi":"\u00ff"}',
    ' { } ',
    '[ ]',
    '{"t":true,"f":false,"n":null,"e":{},"a":[]}',
  ];
  for (const usage of members) {
    const text = `{"model":"m","usage":${usage}}`;
    const picked = pickTopLevel(Buffer.from(text), KEYS)!;
    assert.deepStrictEqual(picked, parsed(text), usage);
    const want = (JSON.parse(text) as { usage: unknown }).usage;
    if (want !== null && typeof want === 'object') assert.deepStrictEqual(Object.keys(picked.usage as object), Object.keys(want), usage);
  }
  const proto = (pickTopLevel(Buffer.from('{"usage":{"__proto__":{"x":1}}}'), KEYS)!.usage as object);
  assert.equal(Object.getPrototypeOf(proto), Object.prototype);
  assert.ok(Object.hasOwn(proto, '__proto__'));
});

it('throws on a usage member JSON.parse refuses, as before', () => {
  const bad = ['01', '1.', '.5', '-', '+1', '1e', '1e+', '--1', '0x1', 'NaN', 'Infinity', '-Infinity', 'tru', 'nul', 'truex', "'a'", '"a\u0001"', '{"a":1,}', '[1,]', '{"a" 1}', '{a:1}', '[1 2]', '{"a":01}', '{"a":1.e3}', '1e.5', '1.e5', '1e5.', '1.5.2', '-.5'];
  for (const value of bad) {
    const text = `{"model":"m","usage":${value}}`;
    assert.throws(() => JSON.parse(text), SyntaxError, value);
    let result: unknown;
    try {
      result = pickTopLevel(Buffer.from(text), KEYS);
    } catch (err) {
      assert.ok(err instanceof SyntaxError, value);
      continue;
    }
    // Not a structure the walk follows: the caller parses the answer whole (and JSON.parse throws there).
    assert.equal(result, undefined, value);
  }
});

it('agrees with JSON.parse on random usage members, valid or not', () => {
  let seed = 11;
  const rnd = (n: number): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) % n);
  const blank = (): string => [' ', '', '', '\n', '\t', '\r\n '][rnd(6)]!;
  const digits = (): string => Array.from({ length: 1 + rnd(18) }, () => String(rnd(10))).join('');
  const number = (): string => {
    const parts = [rnd(4) ? '' : '-', rnd(5) ? digits() : '0', rnd(3) ? '' : `.${rnd(8) ? digits() : ''}`, rnd(4) ? '' : `${rnd(2) ? 'e' : 'E'}${['', '+', '-'][rnd(3)]}${rnd(8) ? digits() : ''}`];
    // Now and then a character out of place.
    if (!rnd(12)) parts.splice(rnd(parts.length + 1), 0, ['+', '.', 'x', '0', '-', ' '][rnd(6)]!);
    return parts.join('');
  };
  const chars = ['a', 'Z', '0', ' ', 'é', '😀', '\\n', '\\"', '\\\\', '\\u0041', '\\u00e9', '\u0001', '\u007f', '"', '\\', '\\x'];
  const string = (): string => `"${Array.from({ length: rnd(6) }, () => chars[rnd(rnd(3) ? 4 : chars.length)]).join('')}"`;
  const value = (depth: number): string => {
    const k = rnd(depth > 3 ? 3 : 5);
    if (k === 0) return number();
    if (k === 1) return string();
    if (k === 2) return ['true', 'false', 'null', 'tru', 'nulll'][rnd(rnd(10) ? 3 : 5)]!;
    const items = Array.from({ length: rnd(4) }, () => (k === 3 ? `${blank()}${rnd(10) ? string() : ['__proto__', '"__proto__"', 'a'][rnd(3)]}${blank()}:${blank()}${value(depth + 1)}` : `${blank()}${value(depth + 1)}${blank()}`));
    const trailing = rnd(15) ? '' : ',';
    return k === 3 ? `{${items.join(',')}${trailing}}` : `[${items.join(',')}${trailing}]`;
  };
  let valid = 0;
  for (let n = 0; n < 5000; n++) {
    const usage = value(0);
    const text = rnd(2) ? `{"model":"m","usage":${blank()}${usage}${blank()}}` : `{"usage":${usage},"id":"x","model":"m"}`;
    let want: Record<string, unknown> | undefined;
    try {
      want = parsed(text);
    } catch {
      want = undefined;
    }
    let got: unknown;
    let threw = false;
    try {
      got = pickTopLevel(Buffer.from(text), KEYS);
    } catch {
      threw = true;
    }
    if (want !== undefined) {
      valid++;
      assert.deepStrictEqual(got, want, text);
    } else assert.ok(threw || got === undefined, `accepted what JSON.parse refuses: ${text}`);
  }
  assert.ok(valid > 1500, `only ${valid} valid texts`);
});
