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
import type { LlmFormat, OutcomeSink, PromptMessage } from './format.ts';
import { argumentsSlot, contentSlots, promptContentSlots, RESPONSES_PARTS, slot, stringSlot } from './slots.ts';
import type { TextSlot } from './slots.ts';
import { outputBytes } from '../output-bytes.ts';

// ---------------------------------------------------------------------------------------------------------------
// OpenAI Responses: `response.*` events -> the `response` of `response.completed` (or one put together)

interface PartAcc {
  text: string;
  readonly refs: TextRef[];
  readonly snapshots: Snapshot[];
}

const TERMINAL = new Set(['response.completed', 'response.incomplete', 'response.failed']);

/** A guarded text of an output item (ADR 0165): where it is, and its key among the stream's texts. */
interface ItemText {
  readonly key: string;
  readonly holder: Obj;
  readonly field: string;
}

/** The texts of output item `oi`: message text and refusals, call arguments, custom tool input, code, reasoning text. */
function itemTexts(item: Obj, oi: number): ItemText[] {
  const out: ItemText[] = [];
  const each = (list: unknown, prefix: string, fields: readonly string[]): void => {
    if (!Array.isArray(list)) return;
    list.forEach((p: unknown, i) => {
      if (isObj(p)) for (const field of fields) if (typeof p[field] === 'string') out.push({ key: `${oi}:${prefix}${i}`, holder: p, field });
    });
  };
  if (item.type === 'message') each(item.content, '', ['text', 'refusal']);
  else if (item.type === 'reasoning') {
    each(item.summary, 's', ['text']);
    each(item.content, 'r', ['text']);
  } else {
    const field = item.type === 'function_call' ? 'arguments' : item.type === 'custom_tool_call' ? 'input' : item.type === 'code_interpreter_call' ? 'code' : undefined;
    if (field && typeof item[field] === 'string') out.push({ key: `${oi}:args`, holder: item, field });
  }
  return out;
}

/** The key of the text a delta or `*.done` event carries (as itemTexts names it), and its field there. */
function eventText(type: string, d: Obj): { key: string; delta: boolean; field: string } | undefined {
  const oi = d.output_index;
  if (typeof oi !== 'number') return undefined;
  const at = (prefix: string, i: unknown): string | undefined => (typeof i === 'number' ? `${oi}:${prefix}${i}` : undefined);
  const [kind, tail] = [type.slice(0, type.lastIndexOf('.')), type.slice(type.lastIndexOf('.') + 1)];
  if (tail !== 'delta' && tail !== 'done') return undefined;
  const delta = tail === 'delta';
  let key: string | undefined;
  let field = 'delta';
  if (kind === 'response.output_text') [key, field] = [at('', d.content_index), 'text'];
  else if (kind === 'response.refusal') [key, field] = [at('', d.content_index), 'refusal'];
  else if (kind === 'response.function_call_arguments') [key, field] = [`${oi}:args`, 'arguments'];
  else if (kind === 'response.custom_tool_call_input') [key, field] = [`${oi}:args`, 'input'];
  else if (kind === 'response.code_interpreter_call_code') [key, field] = [`${oi}:args`, 'code'];
  else if (kind === 'response.reasoning_summary_text') [key, field] = [at('s', d.summary_index), 'text'];
  else if (kind === 'response.reasoning_text') [key, field] = [at('r', d.content_index), 'text'];
  if (key === undefined) return undefined;
  return { key, delta, field: delta ? 'delta' : field };
}

const assembleResponses: Builder = (events) => {
  let latest: Obj | undefined;
  let terminal: { at: number; response: Obj } | undefined;
  const items = new Map<number, Obj>();
  const parts = new Map<string, PartAcc>();
  const part = (key: string): PartAcc => {
    let acc = parts.get(key);
    if (!acc) parts.set(key, (acc = { text: '', refs: [], snapshots: [] }));
    return acc;
  };
  const snapshot = (key: string, at: number, holder: Obj, field: string): void => {
    part(key).snapshots.push({
      at,
      set(text) {
        holder[field] = text;
      },
    });
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
      items.set(d.output_index, structuredClone(d.item));
      for (const t of itemTexts(d.item, d.output_index)) snapshot(t.key, at, t.holder, t.field);
    } else if ((type === 'response.content_part.done' || type === 'response.reasoning_summary_part.done') && isObj(d.part) && typeof d.output_index === 'number') {
      const prefix = type === 'response.content_part.done' ? '' : 's';
      const i = prefix ? d.summary_index : d.content_index;
      for (const field of ['text', 'refusal']) if (typeof i === 'number' && typeof d.part[field] === 'string') snapshot(`${d.output_index}:${prefix}${i}`, at, d.part, field);
    } else {
      const t = eventText(type, d);
      if (!t || typeof d[t.field] !== 'string') return;
      if (!t.delta) return snapshot(t.key, at, d, t.field);
      const acc = part(t.key);
      acc.text += d.delta;
      acc.refs.push({
        at,
        set(text) {
          d.delta = text;
        },
        clear: () => true,
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
      const [oi, ci] = key.split(':') as [string, string];
      const item = (output[Number(oi)] ??= { type: 'message', role: 'assistant', content: [] });
      if (ci === 'args' && item.type === 'function_call' && !item.arguments) item.arguments = acc.text;
      if (item.type !== 'message' || !/^\d+$/.test(ci)) continue;
      if (!Array.isArray(item.content)) item.content = [];
      const p = item.content[Number(ci)];
      if (!isObj(p) || (typeof p.text !== 'string' && typeof p.refusal !== 'string')) item.content[Number(ci)] = { type: 'output_text', text: acc.text, annotations: [] };
    }
    body = { ...(latest ?? { object: 'response' }), output: Array.from(output, (item) => item ?? {}) };
  }
  const texts: StreamText[] = [];
  const output: unknown[] = Array.isArray(body.output) ? body.output : [];
  output.forEach((item, oi) => {
    if (!isObj(item)) return;
    for (const t of itemTexts(item, oi)) {
      const acc = parts.get(t.key);
      texts.push({ read: () => t.holder[t.field] as string, refs: acc?.refs ?? [], snapshots: acc?.snapshots ?? [] });
    }
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

/** Message items' text and refusals, function-call arguments, custom tool input, code, reasoning text (ADR 0165). */
export function responsesResponseSlots(body: Obj, out: TextSlot[]): void {
  if (!Array.isArray(body.output)) return;
  for (const item of body.output) {
    if (!isObj(item)) continue;
    const role = typeof item.role === 'string' ? item.role : 'assistant';
    if (item.type === 'message') {
      contentSlots(role, item, RESPONSES_PARTS, out);
      if (Array.isArray(item.content)) for (const p of item.content) if (isObj(p) && p.type === 'refusal') stringSlot(role, p, 'refusal', out);
    } else if (item.type === 'function_call') argumentsSlot(role, item, 'arguments', out);
    else if (item.type === 'custom_tool_call') stringSlot(role, item, 'input', out);
    else if (item.type === 'code_interpreter_call') stringSlot(role, item, 'code', out);
    else if (item.type === 'reasoning') {
      for (const key of ['summary', 'content']) if (Array.isArray(item[key])) for (const p of item[key]) if (isObj(p)) stringSlot(role, p, 'text', out);
    }
  }
}

/** OpenAI Responses: items of `input` (a string input becomes one `user` item first). */
export function responsesPrompts(body: Obj, prepend: readonly PromptMessage[], append: readonly PromptMessage[]): void {
  const input = body.input;
  const items: unknown[] = typeof input === 'string' ? [{ role: 'user', content: input }] : Array.isArray(input) ? input : [];
  const item = (m: PromptMessage) => ({ role: m.role, content: m.content });
  body.input = [...prepend.map(item), ...items, ...append.map(item)];
}

/** A response's id, and why it ended: its incomplete reason (`max_output_tokens`), else its status once final. */
function outcome(response: Obj, sink: OutcomeSink): void {
  sink.setResponseId(response.id);
  const reason = isObj(response.incomplete_details) ? response.incomplete_details.reason : undefined;
  if (typeof reason === 'string') sink.addFinishReason(reason);
  else if (response.status !== 'in_progress' && response.status !== 'queued') sink.addFinishReason(response.status);
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
  outcomeOfResponse: outcome,
  outcomeMembers: ['id', 'status', 'incomplete_details'],
  outcomeOfEvent(e, sink) {
    const type = e.type ?? e.data.type;
    if (type !== 'error' && typeof type === 'string' && OBSERVED.has(type) && isObj(e.data.response)) outcome(e.data.response, sink);
  },
  // Text, refusal, arguments and reasoning stream as `delta` strings (the final events restate them whole); audio's
  // `delta` is base64 bytes, not text.
  outputBytes: (data) => (data.includes('"response.audio.delta"') ? 0 : outputBytes(data, ['delta'])),
  assembleStream: assembleResponses,
  requestSlots: responsesRequestSlots,
  responseSlots: responsesResponseSlots,
  insertPrompts: responsesPrompts,
  answerEvents: responsesAnswerEvents,
};
