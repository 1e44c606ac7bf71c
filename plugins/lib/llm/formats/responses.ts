// OpenAI Responses (`responses`): usage, stream events, stream assembly, guarded text and prompt insertion
// (ADR 0032). Providers without a Responses API serve Responses clients through Chat Completions.
import { responsesAnswerEvents } from './answer-events.ts';
import { isObj } from '../json.ts';
import { completionsResponseToResponses, responsesRequestToCompletions } from '../responses-chat/requests.ts';
import { CompletionsToResponsesStream } from '../responses-chat/streams.ts';
import type { Obj } from '../json.ts';
import { usageFromResponses } from '../usage.ts';
import { typeOf } from './assembly.ts';
import type { Builder, Snapshot, StreamText, TextRef } from './assembly.ts';
import { MODEL_AND_USAGE, observeModelAndUsage } from './format.ts';
import type { LlmFormat, PromptMessage } from './format.ts';
import { argumentsSlot, contentSlots, promptContentSlots, RESPONSES_PARTS, slot } from './slots.ts';
import type { TextSlot } from './slots.ts';
import { outputBytes } from '../output-bytes.ts';

// ---------------------------------------------------------------------------------------------------------------
// OpenAI Responses: `response.*` events → the `response` of `response.completed` (or one put together)

interface PartAcc {
  text: string;
  readonly refs: TextRef[];
  readonly snapshots: Snapshot[];
}

const TERMINAL = new Set(['response.completed', 'response.incomplete', 'response.failed']);

const assembleResponses: Builder = (events) => {
  let latest: Obj | undefined;
  let terminal: { at: number; response: Obj } | undefined;
  const items = new Map<number, Obj>();
  const parts = new Map<string, PartAcc>();
  const part = (oi: unknown, ci: unknown): PartAcc | undefined => {
    if (typeof oi !== 'number' || typeof ci !== 'number') return undefined;
    const key = `${oi}:${ci}`;
    let acc = parts.get(key);
    if (!acc) parts.set(key, (acc = { text: '', refs: [], snapshots: [] }));
    return acc;
  };
  events.forEach((e, at) => {
    const d = e.data;
    if (!d) return;
    const type = typeOf(e);
    if (typeof type !== 'string') return;
    if (TERMINAL.has(type) && isObj(d.response)) terminal = { at, response: d.response };
    else if ((type === 'response.created' || type === 'response.in_progress') && isObj(d.response)) latest = d.response;
    else if (type === 'response.output_item.added' && typeof d.output_index === 'number' && isObj(d.item)) {
      if (!items.has(d.output_index)) items.set(d.output_index, structuredClone(d.item));
    } else if (type === 'response.output_item.done' && typeof d.output_index === 'number' && isObj(d.item)) {
      const item = d.item;
      items.set(d.output_index, structuredClone(item));
      if (Array.isArray(item.content)) {
        item.content.forEach((p: unknown, ci: number) => {
          if (isObj(p) && typeof p.text === 'string') {
            part(d.output_index, ci)!.snapshots.push({
              at,
              set(text) {
                p.text = text;
              },
            });
          }
        });
      }
    } else if (type === 'response.output_text.delta' && typeof d.delta === 'string') {
      const acc = part(d.output_index, d.content_index);
      if (!acc) return;
      acc.text += d.delta;
      acc.refs.push({
        at,
        set(text) {
          d.delta = text;
        },
        clear: () => true,
      });
    } else if (type === 'response.output_text.done' && typeof d.text === 'string') {
      part(d.output_index, d.content_index)?.snapshots.push({
        at,
        set(text) {
          d.text = text;
        },
      });
    } else if (type === 'response.content_part.done' && isObj(d.part) && typeof d.part.text === 'string') {
      const p = d.part;
      part(d.output_index, d.content_index)?.snapshots.push({
        at,
        set(text) {
          p.text = text;
        },
      });
    }
  });

  let body: Obj;
  const bodyEvents: number[] = [];
  if (terminal) {
    // The complete response is in the stream: guarded as it is, and the event carries the guards' result.
    body = terminal.response;
    bodyEvents.push(terminal.at);
  } else {
    // A stream that ended without one: the response as far as it went.
    const output: Obj[] = [];
    for (const [oi, item] of [...items.entries()].sort(([a], [b]) => a - b)) output[oi] = item;
    for (const [key, acc] of parts) {
      const [oi, ci] = key.split(':').map(Number) as [number, number];
      const item = (output[oi] ??= { type: 'message', role: 'assistant', content: [] });
      if (item.type !== 'message') continue;
      if (!Array.isArray(item.content)) item.content = [];
      if (!isObj(item.content[ci]) || typeof item.content[ci].text !== 'string') item.content[ci] = { type: 'output_text', text: acc.text, annotations: [] };
    }
    body = { ...(latest ?? { object: 'response' }), output: Array.from(output, (item) => item ?? {}) };
  }
  const texts: StreamText[] = [];
  const output: unknown[] = Array.isArray(body.output) ? body.output : [];
  output.forEach((item, oi) => {
    if (!isObj(item) || item.type !== 'message' || !Array.isArray(item.content)) return;
    item.content.forEach((p: unknown, ci: number) => {
      if (!isObj(p) || typeof p.text !== 'string') return;
      const acc = parts.get(`${oi}:${ci}`);
      texts.push({ read: () => p.text as string, refs: acc?.refs ?? [], snapshots: acc?.snapshots ?? [] });
    });
  });
  return { body, texts, bodyEvents };
};


// ---------------------------------------------------------------------------------------------------------------

/**
 * OpenAI Responses: `instructions`, then `input` (a string, or a list of items): message items (a bare
 * `{content}` is a user message, as the translation reads it), tool outputs (`function_call_output` and the other
 * `*_output` items with an `output` string or parts, role `tool`) and the history's tool-call arguments.
 */
export function responsesRequestSlots(body: Obj, out: TextSlot[]): void {
  if (typeof body.instructions === 'string') out.push(slot('system', body, 'instructions'));
  const input = body.input;
  if (typeof input === 'string') out.push(slot('user', body, 'input'));
  else if (Array.isArray(input)) {
    for (const item of input) {
      if (!isObj(item)) continue;
      if (item.type === undefined || item.type === 'message') promptContentSlots(typeof item.role === 'string' ? item.role : 'user', item, 'content', out);
      else if (typeof item.type === 'string' && item.type.endsWith('_output')) promptContentSlots('tool', item, 'output', out);
      else if (item.type === 'function_call') argumentsSlot('assistant', item, 'arguments', out);
      else if (item.type === 'custom_tool_call') argumentsSlot('assistant', item, 'input', out);
    }
  }
}

export function responsesResponseSlots(body: Obj, out: TextSlot[]): void {
  if (!Array.isArray(body.output)) return;
  for (const item of body.output) {
    if (!isObj(item) || item.type !== 'message') continue;
    contentSlots(typeof item.role === 'string' ? item.role : 'assistant', item, RESPONSES_PARTS, out);
  }
}

/** OpenAI Responses: items of `input` (a string input becomes one `user` item first). */
export function responsesPrompts(body: Obj, prepend: readonly PromptMessage[], append: readonly PromptMessage[]): void {
  const input = body.input;
  const items: unknown[] = typeof input === 'string' ? [{ role: 'user', content: input }] : Array.isArray(input) ? input : [];
  const item = (m: PromptMessage) => ({ role: m.role, content: m.content });
  body.input = [...prepend.map(item), ...items, ...append.map(item)];
}

/** The events that carry the model or the usage. */
const OBSERVED: ReadonlySet<string> = new Set(['response.created', 'response.completed', 'response.incomplete', 'response.failed', 'error']);

export const responses: LlmFormat = {
  name: 'responses',
  family: 'openai',
  operation: 'chat',
  // Served by providers without a Responses API through Chat Completions (plugins/lib/llm/responses-chat/).
  requestToCanonical: responsesRequestToCompletions,
  responseFromCanonical: completionsResponseToResponses,
  streamFromCanonical: (model) => new CompletionsToResponsesStream(model),
  observeResponse: observeModelAndUsage(usageFromResponses),
  observedMembers: MODEL_AND_USAGE,
  observeEvent(e, call) {
    if (e.done) return;
    const d = e.data;
    const type = e.type ?? d.type;
    if ((type === 'response.completed' || type === 'response.incomplete' || type === 'response.failed') && isObj(d.response)) {
      call.setResponseModel(d.response.model);
      call.addUsage(usageFromResponses(d.response.usage));
      if (type === 'response.failed') call.streamError?.(d.response.error);
    } else if (type === 'response.created' && isObj(d.response)) call.setResponseModel(d.response.model);
    else if (type === 'error') call.streamError?.(d);
  },
  observes: (event) => event === undefined || OBSERVED.has(event),
  // Text, refusal, arguments and reasoning stream as `delta` strings (the final events restate them whole); audio's
  // `delta` is base64 bytes, not text.
  outputBytes: (data) => (data.includes('"response.audio.delta"') ? 0 : outputBytes(data, ['delta'])),
  assembleStream: assembleResponses,
  requestSlots: responsesRequestSlots,
  responseSlots: responsesResponseSlots,
  insertPrompts: responsesPrompts,
  answerEvents: responsesAnswerEvents,
};
