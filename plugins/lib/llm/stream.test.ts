// A passed-through LLM stream parses only the events its usage reader needs (LlmFormat.observes), also when the
// provider's whole stream arrives in one chunk: the first event (the model) is observed before the next one is
// judged, so the content chunks after it go by unparsed.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatOf } from './formats/index.ts';
import type { UsageSink } from './formats/format.ts';
import type { LlmEvent } from './events.ts';
import { PassThrough, Writable } from 'node:stream';
import { setImmediate as tick } from 'node:timers/promises';
import { LlmResponseStream, observeBeside } from './stream.ts';
import type { LlmUsage } from './usage.ts';

const chunk = (data: object): string => `data: ${JSON.stringify(data)}\n\n`;
const STREAM =
  chunk({ id: 'c', object: 'chat.completion.chunk', model: 'gpt-4o-mini', choices: [{ index: 0, delta: { role: 'assistant', content: '' } }] }) +
  ['The ', 'answer ', 'is ', 'short.'].map((t) => chunk({ id: 'c', object: 'chat.completion.chunk', model: 'gpt-4o-mini', choices: [{ index: 0, delta: { content: t } }] })).join('') +
  chunk({ id: 'c', object: 'chat.completion.chunk', model: 'gpt-4o-mini', choices: [], usage: { prompt_tokens: 12, completion_tokens: 4, total_tokens: 16 } }) +
  'data: [DONE]\n\n';

async function pass(pieces: string[]): Promise<{ out: string; events: LlmEvent[]; skipped: number; usage: LlmUsage; model: string | undefined }> {
  const format = formatOf('completions')!;
  const usage: LlmUsage = {};
  const call: UsageSink & { responseModel: string | undefined } = {
    responseModel: undefined,
    setResponseModel(m: unknown) {
      if (typeof m === 'string') this.responseModel = m;
    },
    addUsage(u: LlmUsage | undefined) {
      Object.assign(usage, u);
    },
  } as UsageSink & { responseModel: string | undefined };
  const events: LlmEvent[] = [];
  let skipped = 0;
  const stream = new LlmResponseStream({
    source: 'sse',
    client: 'completions',
    translator: undefined,
    onEvent: (e) => {
      events.push(e);
      format.observeEvent!(e, call);
    },
    observes: (event, data) => format.observes!(event, data, call),
    onSkipped: () => skipped++,
  });
  let out = '';
  stream.on('data', (b: Buffer) => (out += b.toString()));
  const ended = new Promise((resolve) => stream.on('end', resolve));
  for (const p of pieces) stream.write(Buffer.from(p));
  stream.end();
  await ended;
  return { out, events, skipped, usage, model: call.responseModel };
}

describe('passed-through LLM streams', () => {
  for (const [name, pieces] of [
    ['the whole stream in one chunk', [STREAM]],
    ['one chunk per event', STREAM.split(/(?<=\n\n)/)],
  ] as const) {
    it(`${name}: bytes unchanged, only the model's and the usage's events parsed`, async () => {
      const r = await pass([...pieces]);
      assert.equal(r.out, STREAM);
      assert.equal(r.model, 'gpt-4o-mini');
      assert.equal(r.usage.inputTokens, 12);
      assert.equal(r.usage.outputTokens, 4);
      assert.equal(r.events.length, 2, 'the first chunk and the usage chunk');
      assert.equal(r.skipped, 5, 'four content chunks and [DONE]');
    });
  }
});

describe('observeBeside: a passed-through stream watched beside the pipe to the client', () => {
  for (const [name, pieces] of [
    ['the whole stream in one chunk', [STREAM]],
    ['one chunk per event', STREAM.split(/(?<=\n\n)/)],
  ] as const) {
    it(`${name}: nothing flows before the body is piped; then the same bytes, model and usage as through the Transform`, async () => {
      const format = formatOf('completions')!;
      const usage: LlmUsage = {};
      const call = {
        responseModel: undefined as string | undefined,
        setResponseModel(m: unknown) {
          if (typeof m === 'string') this.responseModel = m;
        },
        addUsage(u: LlmUsage | undefined) {
          Object.assign(usage, u);
        },
      } as UsageSink & { responseModel: string | undefined };
      const body = new PassThrough();
      let events = 0;
      let skipped = 0;
      let ended = 0;
      const out = observeBeside(body, {
        source: 'sse',
        onEvent: (e) => {
          events++;
          format.observeEvent!(e, call);
        },
        observes: (event, data) => format.observes!(event, data, call),
        onSkipped: () => skipped++,
        onEnd: () => ended++,
      });
      assert.equal(out, body, 'the body itself goes to the client');
      for (const p of pieces) body.write(Buffer.from(p));
      body.end();
      await tick();
      assert.equal(events + skipped, 0, 'no chunk read before the client side pipes the body');
      let received = '';
      const client = new Writable({
        write(chunk: Buffer, _e, cb) {
          received += chunk.toString();
          cb();
        },
      });
      const finished = new Promise((resolve) => client.on('finish', resolve));
      out.pipe(client);
      await finished;
      assert.equal(received, STREAM);
      assert.equal(call.responseModel, 'gpt-4o-mini');
      assert.deepEqual([usage.inputTokens, usage.outputTokens], [12, 4]);
      assert.deepEqual([events, skipped, ended], [2, 5, 1]);
    });
  }

  it('a stream that cannot be read (an event over the cap) fails the body, which cuts the client off', async () => {
    const body = new PassThrough();
    observeBeside(body, { source: 'sse', onEvent: () => undefined });
    const failed = new Promise<Error>((resolve) => body.on('error', resolve));
    body.pipe(new Writable({ write: (_c, _e, cb) => cb() }));
    body.write(Buffer.from(`data: ${'x'.repeat(8 * 1024 * 1024 + 10)}`));
    assert.match((await failed).message, /./);
  });
});
