import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PRESENT, requestFields } from './request-fields.ts';

/** What JSON.parse makes of the bytes (decoded as the `ai` backend decodes them), or undefined when it throws. */
function parsed(b: Buffer): unknown {
  try {
    return JSON.parse(b.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

/** The walk accepts only what JSON.parse accepts as an object, and reads its fields as JSON.parse does. */
function agrees(text: string | Buffer): void {
  const b = Buffer.isBuffer(text) ? text : Buffer.from(text);
  const fields = requestFields(b);
  if (fields === undefined) return;
  const whole = parsed(b) as Record<string, unknown> | undefined;
  assert.ok(whole !== undefined && typeof whole === 'object' && whole !== null && !Array.isArray(whole), `accepted what JSON.parse refuses: ${JSON.stringify(b.toString('latin1'))}`);
  const model = typeof whole.model === 'string' ? whole.model : 'model' in whole ? null : undefined;
  assert.equal(fields.model, model, b.toString('latin1'));
  assert.equal(fields.stream === true, whole.stream === true, b.toString('latin1'));
  assert.equal(fields.stream_options === PRESENT, 'stream_options' in whole, b.toString('latin1'));
}

describe('requestFields (ADR 0070)', () => {
  it('reads model, stream and stream_options from a chat request', () => {
    const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi "there" \\ é 😀' }], stream: true, stream_options: { include_usage: false }, max_tokens: 64 });
    assert.deepEqual(requestFields(Buffer.from(body)), { model: 'gpt-4o-mini', stream: true, stream_options: PRESENT });
    assert.deepEqual(requestFields(Buffer.from(' {"model" : "m" , "stream":false}\n')), { model: 'm', stream: false });
    assert.deepEqual(requestFields(Buffer.from('{}')), {});
  });

  it('takes the last of a duplicated key, as JSON.parse does', () => {
    assert.deepEqual(requestFields(Buffer.from('{"model":"a","stream":true,"model":"b","stream":false}')), { model: 'b', stream: false });
    assert.deepEqual(requestFields(Buffer.from('{"model":"a","model":7}')), { model: null });
  });

  it('gives up (the caller parses whole) on what it does not follow: escapes in a key or the model, deep nesting', () => {
    assert.equal(requestFields(Buffer.from('{"mo\\u0064el":"a"}')), undefined);
    assert.equal(requestFields(Buffer.from('{"model":"gpt\\u002d4"}')), undefined);
    assert.equal(requestFields(Buffer.from(`{"x":${'['.repeat(100)}${']'.repeat(100)}}`)), undefined);
    assert.deepEqual(requestFields(Buffer.from(`{"x":${'['.repeat(60)}${']'.repeat(60)}}`)), {});
  });

  it('refuses every malformed text of a list JSON.parse refuses', () => {
    const bad = [
      '', ' ', '[]', '"x"', '1', 'null', '{', '}', '{"model":', '{"model":"a",}', '{"a":1,,"b":2}', '{"a" 1}', '{a:1}', "{'a':1}",
      '{"a":01}', '{"a":1.}', '{"a":.5}', '{"a":-}', '{"a":1e}', '{"a":1e+}', '{"a":+1}', '{"a":0x1}', '{"a":NaN}', '{"a":Infinity}',
      '{"a":tru}', '{"a":nul}', '{"a":True}', '{"a":"\\x"}', '{"a":"\\u12"}', '{"a":"\\u12g4"}', '{"a":"tab\there"}', '{"a":"nl\nx"}',
      '{"a":[1,]}', '{"a":[,1]}', '{"a":[1 2]}', '{"a":{"b"}}', '{"a":1}x', '{"a":1}{}', '{"a":"unterminated}', '\ufeff{"a":1}',
      '{"a":1}\u00a0', '{"a":[}', '{"a":{]}', '/*c*/{"a":1}', '{"a":1}//',
    ];
    for (const text of bad) {
      assert.equal(requestFields(Buffer.from(text)), undefined, JSON.stringify(text));
      agrees(text);
    }
  });

  it('agrees with JSON.parse on random texts and their mutations', () => {
    let seed = 0x2545f491;
    const rnd = (n: number): number => {
      seed ^= seed << 13;
      seed ^= seed >>> 17;
      seed ^= seed << 5;
      return (seed >>> 0) % n;
    };
    const ws = (): string => [' ', '', '', '\n', '\t', '\r\n '][rnd(6)]!;
    const str = (): string => ['"model"', '"stream"', '"stream_options"', '"a"', '"é\\n"', '"\\u00e9"', '""', '"\\"q\\""', '"x\\\\"'][rnd(9)]!;
    const value = (d: number): string => {
      const k = rnd(d > 3 ? 6 : 9);
      if (k === 0) return str();
      if (k === 1) return ['0', '-1', '1.5', '2e10', '-0.0E-3', '123'][rnd(6)]!;
      if (k === 2) return ['true', 'false', 'null'][rnd(3)]!;
      if (k === 3) return '"gpt-4o"';
      if (k === 4) return 'true';
      if (k === 5) return '"m"';
      if (k === 6) return `[${ws()}${Array.from({ length: rnd(3) }, () => value(d + 1)).join(`${ws()},${ws()}`)}${ws()}]`;
      return obj(d + 1);
    };
    const obj = (d: number): string => `{${ws()}${Array.from({ length: rnd(4) }, () => `${str()}${ws()}:${ws()}${value(d)}`).join(`${ws()},${ws()}`)}${ws()}}`;
    const alphabet = '{}[]":,\\ 0123456789.-+eEtrufalsn\nu\u0001é';
    let accepted = 0;
    for (let n = 0; n < 20_000; n++) {
      let text = ws() + obj(0) + ws();
      agrees(text);
      if (requestFields(Buffer.from(text)) !== undefined) accepted++;
      for (let m = rnd(4); m >= 0; m--) {
        const at = rnd(text.length + 1);
        const op = rnd(3);
        const ch = alphabet[rnd(alphabet.length)]!;
        text = op === 0 ? text.slice(0, at) + ch + text.slice(at) : op === 1 ? text.slice(0, at) + text.slice(at + 1) : text.slice(0, at) + ch + text.slice(at + 1);
        agrees(text);
      }
    }
    // The generator's objects are valid JSON: those without an escaped top-level key or model (about half) are read.
    assert.ok(accepted > 8_000, `only ${accepted} of 20000 valid texts read`);
  });

  it('accepts bytes that are not UTF-8 where JSON.parse of the decoded text does', () => {
    agrees(Buffer.concat([Buffer.from('{"model":"a","x":"'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}')]));
    assert.deepEqual(requestFields(Buffer.concat([Buffer.from('{"model":"a","x":"'), Buffer.from([0xff]), Buffer.from('"}')])), { model: 'a' });
  });
});
