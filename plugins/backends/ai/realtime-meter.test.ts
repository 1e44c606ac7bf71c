// The realtime meter's frame reading (RFC 6455 section 5): bytes relayed unchanged however they are split, fragmented
// text messages put together across interleaved control frames, 16- and 64-bit lengths, unreadable frames refused.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Exchange, LlmTokenLimiter, LlmTokenUsage, Logger, Reply } from 'switchyard/sdk';
import type { LlmCall } from '../../lib/llm/telemetry.ts';
import type { LlmUsage } from '../../lib/llm/usage.ts';
import { RealtimeMeter } from './realtime-meter.ts';
import { GEMINI_LIVE, LIVE_SETUP, OPENAI_REALTIME } from './realtime-dialects.ts';
import { wsFrame as frame, wsMaskedFrame as masked } from '../../../test/helpers/ws-frames.ts';

const done = (input: number, output: number): Buffer => Buffer.from(JSON.stringify({ type: 'response.done', response: { usage: { input_tokens: input, output_tokens: output, input_token_details: { cached_tokens: 1 } } } }));

/** Runs `bytes` through a meter in pieces of `step`; what came out, the usages charged, how it closed. */
async function meter(bytes: Buffer, step: number, refuseAfter = Infinity, own?: LlmTokenLimiter['charge']): Promise<{ out: Buffer; charged: LlmTokenUsage[]; totals: LlmUsage[]; closedWith: string | undefined }> {
  const charged: LlmTokenUsage[] = [];
  const totals: LlmUsage[] = [];
  let closedWith: string | undefined;
  const call = { cost: undefined, addUsage: (u: LlmUsage) => totals.push(u), setResponseModel: () => {} } as unknown as LlmCall;
  const limiter: LlmTokenLimiter = {
    reserve: () => undefined,
    charge: own ?? ((_ex, usage): Reply | undefined => {
      charged.push(usage);
      return charged.length >= refuseAfter ? ({ status: 429, headers: {}, body: null, error: { type: 'rate_limited', message: 'rate limit exceeded' } } as Reply) : undefined;
    }),
  };
  const log = { warn: () => {}, error: () => {} } as unknown as Logger;
  const m = new RealtimeMeter({ ex: {} as Exchange, call, limiters: [limiter], dialect: OPENAI_REALTIME, close: (cause) => (closedWith = cause), log });
  const parts: Buffer[] = [];
  m.on('data', (c: Buffer) => parts.push(c));
  const ended = new Promise((resolve) => m.once('end', resolve));
  for (let i = 0; i < bytes.length; i += step) m.write(bytes.subarray(i, i + step));
  m.end();
  await ended;
  return { out: Buffer.concat(parts), charged, totals, closedWith };
}

test('fragmented messages with a ping between the fragments, split byte by byte: relayed unchanged, each response charged', async () => {
  const d = done(100, 50);
  const big = Buffer.from(JSON.stringify({ type: 'response.output_audio.delta', delta: 'A'.repeat(70_000) }));
  const bytes = Buffer.concat([
    frame(true, 1, Buffer.from('{"type":"session.created","session":{"model":"gpt-realtime"}}')),
    frame(true, 1, big),
    frame(false, 1, d.subarray(0, 10)),
    frame(true, 0x9, Buffer.from('ping')),
    frame(false, 0, d.subarray(10, 40)),
    frame(true, 0, d.subarray(40)),
    frame(true, 2, Buffer.from([1, 2, 3])),
    frame(true, 1, done(7, 3)),
  ]);
  for (const step of [1, 7, 4096, bytes.length]) {
    const r = await meter(bytes, step);
    assert.deepEqual(r.out, bytes, `step ${step}`);
    assert.deepEqual(r.charged, [{ inputTokens: 100, outputTokens: 50 }, { inputTokens: 7, outputTokens: 3 }], `step ${step}`);
    // The telemetry takes the session's running totals.
    assert.deepEqual(r.totals.at(-1), { inputTokens: 107, outputTokens: 53, cachedInputTokens: 2, reasoningTokens: 0, audioInputTokens: 0, cachedAudioInputTokens: 0, audioOutputTokens: 0 });
    assert.equal(r.closedWith, undefined);
  }
});

test('a refusal: the bytes up to the response that used the limit up, an error event, Close 1008, nothing after', async () => {
  const first = frame(true, 1, done(1, 1));
  const bytes = Buffer.concat([first, frame(true, 1, Buffer.from('{"type":"later"}'))]);
  const r = await meter(bytes, 5, 1);
  assert.deepEqual(r.out.subarray(0, first.length), first);
  const rest = r.out.subarray(first.length);
  assert.equal(rest[0], 0x81);
  // Longer than 125 bytes: a 16-bit length.
  const [at, eventLength] = rest[1] === 126 ? [4, rest.readUInt16BE(2)] : [2, rest[1]!];
  const event = JSON.parse(rest.subarray(at, at + eventLength).toString()) as { type: string; error: { type: string; message: string } };
  assert.equal(event.type, 'error');
  assert.equal(event.error.type, 'rate_limited');
  const close = rest.subarray(at + eventLength);
  assert.equal(close[0], 0x88);
  assert.equal(close.readUInt16BE(2), 1008);
  assert.equal(close.subarray(4).toString(), 'rate limit exceeded');
  assert.equal(close.length, 2 + close[1]!, 'nothing after the Close frame');
  assert.equal(r.closedWith, 'llm_limit');
});

test('frames the gateway cannot read (compressed: RSV1 set) close the session with 1002', async () => {
  const r = await meter(frame(true, 1, Buffer.from('xx'), true), 100);
  assert.equal(r.closedWith, 'unreadable_frames');
  const close = r.out.subarray(r.out.lastIndexOf(0x88));
  assert.equal(close.readUInt16BE(2), 1002);
});

test('a charge answered later holds the bytes after its message until it settles; a failing one closes with 1011', async () => {
  const bytes = Buffer.concat([frame(true, 1, done(1, 1)), frame(true, 1, Buffer.from('{"type":"next"}'))]);
  const later = await meter(bytes, 3, Infinity, () => new Promise((resolve) => setTimeout(() => resolve(undefined), 5)));
  assert.deepEqual(later.out, bytes);
  assert.equal(later.closedWith, undefined);
  for (const failing of [() => Promise.reject(new Error('store down')), () => {
    throw new Error('store down');
  }]) {
    const r = await meter(bytes, 3, Infinity, failing);
    assert.equal(r.closedWith, 'llm_charge_failed');
    const close = r.out.subarray(r.out.lastIndexOf(0x88));
    assert.equal(close.readUInt16BE(2), 1011);
  }
});

/** Runs a Live client's bytes through the setup reader; the model it set and whether it stopped reading. */
function readSetup(bytes: Buffer, step: number): { models: unknown[]; stopped: boolean } {
  const models: unknown[] = [];
  let stopped = false;
  const call = { setResponseModel: (m: unknown) => models.push(m) } as unknown as LlmCall;
  // The model is taken when the provider's first usage comes (GEMINI_LIVE reads it then).
  const usage = () => GEMINI_LIVE.read({ usageMetadata: { promptTokenCount: 1 } }, call);
  const log = { warn: () => {}, error: () => {} } as unknown as Logger;
  const reader = new RealtimeMeter({ ex: {} as Exchange, call, limiters: [], dialect: LIVE_SETUP, masked: true, close: () => (stopped = true), log });
  reader.resume();
  for (let i = 0; i < bytes.length; i += step) reader.write(bytes.subarray(i, i + step));
  usage();
  return { models, stopped };
}

test("a Live client's masked setup, fragmented around a ping and split anyhow, names the model; later messages are not read", () => {
  const setup = Buffer.from(JSON.stringify({ setup: { model: 'projects/p/locations/l/publishers/google/models/gemini-live-x', generationConfig: { responseModalities: ['AUDIO'] } } }));
  const later = Buffer.from(JSON.stringify({ setup: { model: 'models/other' } }));
  const bytes = Buffer.concat([masked(false, 1, setup.subarray(0, 30)), masked(true, 0x9, Buffer.from('hi')), masked(true, 0, setup.subarray(30)), masked(true, 2, later)]);
  for (const step of [1, 3, 7, bytes.length]) {
    const r = readSetup(bytes, step);
    assert.deepEqual(r.models, ['gemini-live-x'], `step ${step}`);
    assert.equal(r.stopped, true);
  }
  // A first message that is not a setup ends the reading too: a setup after it is not taken.
  const r = readSetup(Buffer.concat([masked(true, 1, Buffer.from('{"clientContent":{}}')), masked(true, 1, later)]), 5);
  assert.deepEqual(r.models, []);
  assert.equal(r.stopped, true);
});
