// Golden snapshots of every LLM format translation (issue 10 item 5): for each (client format, wire format) pair the
// gateway translates, the request (client → wire), the complete response (wire → client) and the stream (wire events
// → client events) of the inputs in golden/inputs.json are compared with golden/<client>-to-<wire>.json, and the
// usage read from each wire format's answers with golden/usage.json. The snapshots were taken before the format
// modules were split out, so the split changed no byte. `GOLDEN_UPDATE=1` writes them again (review the diff).
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { DONE } from '../../plugins/lib/llm/events.ts';
import type { LlmEvent } from '../../plugins/lib/llm/events.ts';
import type { LlmRouteType, LlmWireFormat } from '../../plugins/lib/llm/contract.ts';
import { observeEvent, observeResponse } from '../../plugins/lib/llm/observe.ts';
import { translation } from '../../plugins/lib/llm/translate.ts';
import type { Obj } from '../../plugins/lib/llm/json.ts';
import { converseFormat } from '../../plugins/llm-providers/bedrock/converse.ts';

/** A provider's own wire format (Bedrock's Converse) comes with the provider. */
const PROVIDER_FORMATS = [converseFormat];

const dir = new URL('./golden/', import.meta.url);
const inputs = JSON.parse(readFileSync(new URL('inputs.json', dir), 'utf8')) as {
  requests: Record<string, Obj>;
  responses: Record<string, Obj>;
  streams: Record<string, { type?: string; data?: Obj; done?: boolean }[]>;
};
const UPDATE = process.env.GOLDEN_UPDATE === '1';

/** Generated ids and timestamps (fresh per call) are replaced by placeholders before comparing. */
function stable(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(stable);
  if (v === null || typeof v !== 'object') return v;
  const out: Obj = {};
  for (const [k, x] of Object.entries(v as Obj)) {
    if ((k === 'created' || k === 'created_at') && typeof x === 'number' && x > 1_767_225_600) out[k] = '<now>';
    else if ((k === 'id' || k === 'item_id' || k === 'call_id') && typeof x === 'string' && /^(chatcmpl|msg|call|toolu|resp|fc)[-_][0-9a-f-]{16,}$/i.test(x)) out[k] = '<generated id>';
    else out[k] = stable(x);
  }
  return out;
}

function compare(file: string, actual: unknown): void {
  const url = new URL(file, dir);
  const text = `${JSON.stringify(stable(actual), null, 2)}\n`;
  if (UPDATE) writeFileSync(url, text);
  assert.equal(text, readFileSync(url, 'utf8'), `${file} differs (GOLDEN_UPDATE=1 writes it again)`);
}

const events = (wire: string): LlmEvent[] => inputs.streams[wire]!.map((e) => (e.done ? DONE : { type: e.type, data: e.data! }));

/** The pairs the gateway translates (client, wire); identical formats pass through untouched. */
const PAIRS: [LlmRouteType, LlmWireFormat][] = [
  ['completions', 'messages'],
  ['messages', 'completions'],
  ['completions', 'converse'],
  ['messages', 'converse'],
  ['completions', 'geminiNative'],
  ['messages', 'geminiNative'],
  ['responses', 'completions'],
  ['responses', 'messages'],
  ['responses', 'converse'],
  ['responses', 'geminiNative'],
];

describe('format translations match their golden snapshots', () => {
  for (const [client, wire] of PAIRS) {
    it(`${client} → ${wire}: request, response and stream`, () => {
      const tr = translation(client, wire, PROVIDER_FORMATS)!;
      assert.ok(tr && !tr.identity);
      const request = tr.request(structuredClone(inputs.requests[client]!));
      const response = tr.response(structuredClone(inputs.responses[wire]!), 'the-model');
      const st = tr.stream('the-model');
      const out: LlmEvent[] = [];
      for (const e of events(wire)) out.push(...st.event(structuredClone(e)));
      out.push(...st.end());
      compare(`${client}-to-${wire}.json`, { request, response, stream: out });
    });
  }

  it('formats nobody translates are refused, and a format to itself is the identity', () => {
    assert.equal(translation('generateContent', 'completions'), undefined);
    assert.equal(translation('embeddings', 'messages'), undefined);
    for (const f of ['completions', 'messages', 'responses', 'embeddings'] as const) assert.equal(translation(f, f)?.identity, true);
    assert.equal(translation('generateContent', 'geminiNative')?.identity, true);
  });

  it('usage and model read from every wire format (complete answers and streams)', () => {
    const usage: Record<string, unknown> = {};
    for (const wire of ['completions', 'messages', 'converse', 'geminiNative'] as const) {
      const whole = fakeCall();
      const format = wire === 'converse' ? converseFormat : wire;
      observeResponse(format, structuredClone(inputs.responses[wire]!), whole as never);
      const streamed = fakeCall();
      for (const e of events(wire)) observeEvent(format, e, streamed as never);
      usage[wire] = { response: whole.seen, stream: streamed.seen };
    }
    compare('usage.json', usage);
  });
});

/** What observe* hand to an LLM call. */
function fakeCall(): { seen: unknown[]; responseModel: string | undefined; setResponseModel(m: unknown): void; addUsage(u: unknown): void } {
  const call = {
    seen: [] as unknown[],
    responseModel: undefined as string | undefined,
    setResponseModel(m: unknown) {
      if (typeof m === 'string') call.responseModel = m;
      call.seen.push({ model: m });
    },
    addUsage(u: unknown) {
      call.seen.push({ usage: u === undefined ? null : JSON.parse(JSON.stringify(u)) });
    },
  };
  return call;
}
