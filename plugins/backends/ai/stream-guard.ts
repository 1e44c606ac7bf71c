// Response guards on streamed LLM answers (`promptGuard.streaming: Enabled`, BEHAVIOUR.md §2.9, §4.6; docs/llm.md).
//
// The stream, already in the client's format (translated back when the provider speaks another), is held until it
// ends. The client format's module puts its events together into the complete response the client would have got
// without `stream: true` (`assembleStream`: a `chat.completion`, an Anthropic `message`, an OpenAI Responses
// `response`, a Gemini `GenerateContentResponse`; plugins/lib/llm/formats), the response guards run on that, and
// only then does the client get anything:
//   - pass: the stream's bytes, unchanged;
//   - reject (or a guard that failed): the guard's reply instead of the stream (status, body, headers);
//   - mask: the same events, with each masked text carried whole by its first text delta and its other text deltas
//     left out; events that repeat the whole text (Responses `*.done`, `response.completed`) carry the masked text.
import type { Readable } from 'node:stream';
import { formatSseEvent, parseSseEvents, readCapped } from 'switchyard/sdk';
import type { Exchange, Reply } from 'switchyard/sdk';
import type { AiPolicyRuntime, LlmRouteType } from '../../lib/llm/contract.ts';
import { llmResponseError } from '../../lib/llm/errors.ts';
import { formatOf } from '../../lib/llm/formats/index.ts';
import type { HeldEvent, StreamText } from '../../lib/llm/formats/assembly.ts';
import type { TextSlot } from '../../lib/llm/formats/slots.ts';
import { isObj } from '../../lib/llm/json.ts';
import type { Obj } from '../../lib/llm/json.ts';

/** Largest stream held for response guards (its SSE bytes in the client's format); a larger one fails with 502. */
export const STREAM_GUARD_LIMIT = 8 * 1024 * 1024;

function parseEvents(bytes: Buffer): HeldEvent[] {
  const out: HeldEvent[] = [];
  for (const ev of parseSseEvents(bytes, { maxEventSize: STREAM_GUARD_LIMIT })) {
    let data: Obj | undefined;
    if (ev.data !== '[DONE]') {
      try {
        const v = JSON.parse(ev.data) as unknown;
        if (isObj(v)) data = v;
      } catch {
        // Kept as it came.
      }
    }
    out.push({ event: ev.event, raw: ev.data, data, changed: false, dropped: false });
  }
  return out;
}

function serialize(events: readonly HeldEvent[]): string {
  let out = '';
  for (const e of events) {
    if (!e.dropped) out += formatSseEvent({ event: e.event, data: e.changed && e.data ? JSON.stringify(e.data) : e.raw });
  }
  return out;
}

/** The texts response guards see in the body (to count the masked ones). */
function guardedTexts(client: LlmRouteType, body: Obj): string[] {
  const slots: TextSlot[] = [];
  formatOf(client)?.responseSlots?.(body, slots);
  return slots.map((s) => s.text);
}

/** Put a masked text back into the events that carried it. */
function rewrite(events: HeldEvent[], t: StreamText, text: string): void {
  const [first, ...rest] = t.refs;
  if (first) {
    first.set(text);
    events[first.at]!.changed = true;
  }
  for (const r of rest) {
    if (r.clear()) events[r.at]!.dropped = true;
    else events[r.at]!.changed = true;
  }
  for (const s of t.snapshots) {
    s.set(text);
    events[s.at]!.changed = true;
  }
}

/**
 * Hold a streamed answer (`reply.body`: SSE in the client's format) until it ends, run the response guards on the
 * complete response it makes, and answer with the stream (unchanged or masked) or the guards' reply.
 */
export async function guardStreamedReply(ex: Exchange, reply: Reply, client: LlmRouteType, policy: AiPolicyRuntime): Promise<Reply> {
  const build = formatOf(client)?.assembleStream;
  // A format whose streams are not put together here has no text to guard (as its complete responses have none).
  if (!build) return reply;
  const stream = reply.body as Readable;
  // A client that leaves (or a route timeout) while the stream is held releases the provider (pipeWithTeardown closes the
  // upstream); the exchange's reason (499, 504) is what the kernel then reports.
  const onAbort = (): void => void stream.destroy(ex.signal.reason instanceof Error ? ex.signal.reason : new Error('the client went away'));
  if (ex.signal.aborted) onAbort();
  else ex.signal.addEventListener('abort', onAbort, { once: true });
  let bytes: Buffer;
  try {
    const reading = readCapped(stream, STREAM_GUARD_LIMIT);
    // A stream observed beside (passed through) waits paused for its reader: this is it.
    stream.resume();
    bytes = await reading;
  } catch (err) {
    if (err instanceof RangeError) return llmResponseError(502, `streamed response too large to guard (over ${STREAM_GUARD_LIMIT} bytes)`);
    throw err;
  } finally {
    ex.signal.removeEventListener('abort', onAbort);
  }

  const events = parseEvents(bytes);
  const { body, texts, bodyEvents } = build(events);
  const before = texts.map((t) => t.read());
  const guarded = guardedTexts(client, body);
  const rejected = await policy.guardResponse(ex, client, body);
  if (rejected) return rejected;
  // Every masked text must go back into the stream; one the events cannot carry fails closed rather than leak.
  const after = guardedTexts(client, body);
  const maskedCount = after.length === guarded.length ? after.filter((t, i) => t !== guarded[i]).length : Infinity;
  if (maskedCount > texts.filter((t, i) => t.read() !== before[i]).length) {
    return llmResponseError(503, 'a masked text of the streamed answer could not be written into its events');
  }

  const h = reply.headers;
  delete h['content-length'];
  delete h['transfer-encoding'];
  let masked = false;
  texts.forEach((t, i) => {
    const text = t.read();
    if (text === before[i]) return;
    masked = true;
    rewrite(events, t, text);
  });
  if (!masked) {
    reply.body = bytes;
    return reply;
  }
  for (const at of bodyEvents) events[at]!.changed = true;
  reply.body = serialize(events);
  return reply;
}
