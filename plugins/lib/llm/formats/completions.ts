// OpenAI Chat Completions (`completions`), the canonical form every translation goes through, and OpenAI Embeddings
// (`embeddings`): usage, stream events, stream assembly, guarded text and prompt insertion (ADR 0032).
import { completionsAnswerEvents } from './answer-events.ts';
import { isObj } from '../json.ts';
import type { Obj } from '../json.ts';
import type { LlmEvent } from '../events.ts';
import { formatSseEvent } from 'switchyard/sdk';
import { usageFromCompletions } from '../usage.ts';
import type { Builder, Snapshot, StreamText, TextRef } from './assembly.ts';
import { finishReasonsOf, MODEL_AND_USAGE, observeModelAndUsage } from './format.ts';
import type { LlmFormat, OutcomeSink, PromptMessage } from './format.ts';
import { CHAT_PARTS, contentSlots, messageListSlots, slot, stringSlot, toolCallSlots } from './slots.ts';
import type { TextSlot } from './slots.ts';
import { outputBytes } from '../output-bytes.ts';

/** Reasoning text of a Chat Completions answer: `reasoning_content` (DeepSeek), `reasoning` (OpenRouter, vLLM). */
export const REASONING_KEYS = ['reasoning_content', 'reasoning'] as const;

// ---------------------------------------------------------------------------------------------------------------
// OpenAI Chat Completions: `chat.completion.chunk`s -> `chat.completion`

/** A text of a choice put together from its deltas, and the deltas that carried it. */
interface TextAcc {
  text: string;
  readonly refs: TextRef[];
}

interface ChoiceAcc {
  index: number;
  role: string;
  finish: unknown;
  /** `content`, `refusal` and the reasoning keys, each put together from its deltas. */
  readonly texts: Map<string, TextAcc>;
  readonly toolCalls: Map<number, { call: Obj; args: TextAcc }>;
  readonly snapshots: Snapshot[];
}

/** A chunk that says nothing once its text is gone: no usage, every choice without delta fields or finish reason. */
function emptyChunk(d: Obj): boolean {
  if (isObj(d.usage) || !Array.isArray(d.choices)) return false;
  return d.choices.every((c: unknown) => isObj(c) && c.finish_reason == null && (!isObj(c.delta) || Object.keys(c.delta).length === 0));
}

/** A delta's text `holder[key]`; cleared, it is removed, and the chunk left out when nothing else is in it. */
function completionsRef(at: number, chunk: Obj, holder: Obj, key: string): TextRef {
  return {
    at,
    set(text) {
      holder[key] = text;
    },
    clear() {
      delete holder[key];
      return emptyChunk(chunk);
    },
  };
}

/** The delta keys whose text is guarded (ADR 0165): the answer, a refusal, reasoning. */
const TEXT_KEYS = ['content', 'refusal', ...REASONING_KEYS] as const;

const assembleCompletions: Builder = (events) => {
  let head: Obj | undefined;
  let usage: Obj | undefined;
  const choices = new Map<number, ChoiceAcc>();
  events.forEach((e, at) => {
    const d = e.data;
    if (!d) return;
    if (!head && (d.id !== undefined || d.model !== undefined)) head = d;
    if (isObj(d.usage)) usage = d.usage;
    if (!Array.isArray(d.choices)) return;
    for (const c of d.choices) {
      if (!isObj(c)) continue;
      const index = typeof c.index === 'number' ? c.index : 0;
      let acc = choices.get(index);
      if (!acc) choices.set(index, (acc = { index, role: 'assistant', finish: null, texts: new Map(), toolCalls: new Map(), snapshots: [] }));
      if (c.finish_reason != null) acc.finish = c.finish_reason;
      // Log probabilities spell out the tokens of the original text: a masked choice loses them.
      if (c.logprobs != null) {
        acc.snapshots.push({
          at,
          set() {
            c.logprobs = null;
          },
        });
      }
      const delta = c.delta;
      if (!isObj(delta)) continue;
      if (typeof delta.role === 'string') acc.role = delta.role;
      for (const key of TEXT_KEYS) {
        if (typeof delta[key] !== 'string') continue;
        let t = acc.texts.get(key);
        if (!t) acc.texts.set(key, (t = { text: '', refs: [] }));
        t.text += delta[key];
        t.refs.push(completionsRef(at, d, delta, key));
      }
      if (Array.isArray(delta.tool_calls)) {
        for (const t of delta.tool_calls) {
          if (!isObj(t)) continue;
          const i = typeof t.index === 'number' ? t.index : acc.toolCalls.size;
          let entry = acc.toolCalls.get(i);
          if (!entry) acc.toolCalls.set(i, (entry = { call: { id: undefined, type: 'function', function: { name: '', arguments: '' } }, args: { text: '', refs: [] } }));
          const call = entry.call;
          if (typeof t.id === 'string') call.id = t.id;
          if (typeof t.type === 'string') call.type = t.type;
          // A function call's `arguments`, or a custom tool call's `input` (ADR 0165).
          const [part, key] = isObj(t.custom) ? [t.custom, 'input'] : [t.function, 'arguments'];
          if (isObj(part)) {
            if (part === t.custom && !isObj(call.custom)) {
              call.custom = { name: '', input: '' };
              delete call.function;
            }
            const into = part === t.custom ? call.custom : call.function;
            if (!isObj(into)) continue;
            if (typeof part.name === 'string') into.name += part.name;
            if (typeof part[key] === 'string') {
              into[key] += part[key];
              // The call's id and name stay in their delta: a cleared one keeps an empty text.
              entry.args.refs.push({ at, set: (text) => void (part[key] = text), clear: () => ((part[key] = ''), false) });
            }
          }
        }
      }
    }
  });
  const accs = [...choices.values()].sort((a, b) => a.index - b.index);
  const body: Obj = {
    id: head?.id,
    object: 'chat.completion',
    created: head?.created,
    model: head?.model,
    choices: accs.map((a) => {
      const message: Obj = { role: a.role, content: a.texts.get('content')?.text ?? null };
      for (const [key, t] of a.texts) if (key !== 'content') message[key] = t.text;
      if (a.toolCalls.size) message.tool_calls = [...a.toolCalls.entries()].sort(([x], [y]) => x - y).map(([, c]) => c.call);
      return { index: a.index, message, finish_reason: a.finish };
    }),
  };
  if (usage) body.usage = usage;
  const texts: StreamText[] = [];
  accs.forEach((a, k) => {
    const message = body.choices[k].message;
    for (const [key, t] of a.texts) texts.push({ read: () => message[key], refs: t.refs, snapshots: a.snapshots });
    const calls = [...a.toolCalls.entries()].sort(([x], [y]) => x - y).map(([, c]) => c);
    for (const c of calls) texts.push({ read: () => (isObj(c.call.custom) ? c.call.custom.input : c.call.function.arguments), refs: c.args.refs, snapshots: a.snapshots });
  });
  return { body, texts, bodyEvents: [] };
};

// ---------------------------------------------------------------------------------------------------------------

const observeResponse = observeModelAndUsage(usageFromCompletions);

/** A completion's (or chunk's) id and its choices' finish reasons (null until a streamed choice ends). */
function outcome(body: Obj, sink: OutcomeSink): void {
  sink.setResponseId(body.id);
  finishReasonsOf(body.choices, 'finish_reason', sink);
}

/** Each choice's content, refusal, reasoning text and tool-call arguments (ADR 0165). */
function responseSlots(body: Obj, out: TextSlot[]): void {
  if (!Array.isArray(body.choices)) return;
  for (const c of body.choices) {
    if (!isObj(c) || !isObj(c.message)) continue;
    const role = typeof c.message.role === 'string' ? c.message.role : 'assistant';
    contentSlots(role, c.message, CHAT_PARTS, out);
    for (const key of ['refusal', ...REASONING_KEYS]) stringSlot(role, c.message, key, out);
    toolCallSlots(role, c.message, out);
  }
}

/** Plain messages before and after `messages`. */
export function completionsPrompts(body: Obj, prepend: readonly PromptMessage[], append: readonly PromptMessage[]): void {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  body.messages = [...prepend.map((m) => ({ role: m.role, content: m.content })), ...messages, ...append.map((m) => ({ role: m.role, content: m.content }))];
}

/** A Chat Completions stream's usage chunk (`choices: []`), sent when the client asks (`stream_options.include_usage`). */
export function isUsageChunk(e: LlmEvent): boolean {
  return !e.done && Array.isArray(e.data.choices) && e.data.choices.length === 0 && isObj(e.data.usage);
}

/** What a chunk's output is carried in: `reasoning` for OpenRouter and vLLM, `reasoning_content` for DeepSeek. */
const OUTPUT_KEYS = ['content', 'arguments', 'refusal', 'reasoning_content', 'reasoning'] as const;

export const completions: LlmFormat = {
  name: 'completions',
  family: 'openai',
  operation: 'chat',
  observeResponse,
  observedMembers: MODEL_AND_USAGE,
  observeEvent(e, call) {
    if (e.done) return;
    const d = e.data;
    if (call.responseModel === undefined) call.setResponseModel(d.model);
    if (isObj(d.usage)) call.addUsage(usageFromCompletions(d.usage));
    // An error chunk (OpenRouter's, once the stream began).
    if (isObj(d.error)) call.streamError?.(d.error);
  },
  // The model comes with the first chunk, usage with the last ones (`stream_options.include_usage`), an error in its own.
  observes: (_event, data, call) => call.responseModel === undefined || data.includes('"usage"') || data.includes('"error"'),
  outcomeOfResponse: outcome,
  outcomeMembers: ['id', 'choices'],
  outcomeOfEvent: (e, sink) => e.done || outcome(e.data, sink),
  outputBytes: (data) => outputBytes(data, OUTPUT_KEYS),
  // Chunks are bare `data:` lines; the stream ends with `data: [DONE]`.
  serializeEvent: (e) => (e.done ? 'data: [DONE]\n\n' : formatSseEvent({ data: JSON.stringify(e.data) })),
  assembleStream: assembleCompletions,
  requestSlots: messageListSlots,
  responseSlots,
  insertPrompts: completionsPrompts,
  answerEvents: completionsAnswerEvents,
};

/** OpenAI Embeddings: `input`, a string or a list of strings (token arrays are not text). */
function embeddingsSlots(body: Obj, out: TextSlot[]): void {
  const input = body.input;
  if (typeof input === 'string') out.push(slot('user', body, 'input'));
  else if (Array.isArray(input)) input.forEach((v, i) => typeof v === 'string' && out.push(slot('user', input, i)));
}

export const embeddings: LlmFormat = {
  name: 'embeddings',
  family: 'openai',
  operation: 'embeddings',
  observeResponse,
  observedMembers: MODEL_AND_USAGE,
  requestSlots: embeddingsSlots,
};
