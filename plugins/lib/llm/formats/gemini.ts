// Gemini's native API: `generateContent` / `streamGenerateContent?alt=sse` (the `generateContent` route type and the
// `geminiNative` wire format are one format) and `countTokens`. Translation from the canonical form
// (plugins/lib/llm/gemini/), usage, stream assembly (each event a `GenerateContentResponse` whose candidates carry
// text deltas; put together, a candidate has one text part and one thought part, as a non-streamed answer would) and
// guarded text (ADR 0032).
import { geminiAnswerEvents } from './answer-events.ts';
import { geminiResponseToCompletions } from '../gemini/answer.ts';
import { completionsRequestToGemini } from '../gemini/request.ts';
import { messagesRequestToCompletions } from '../completions-messages/requests.ts';
import { GeminiToCompletionsStream } from '../gemini/stream.ts';
import { isObj } from '../json.ts';
import type { Obj } from '../json.ts';
import { usageFromGemini } from '../usage.ts';
import type { Builder, StreamText, TextRef } from './assembly.ts';
import { finishReasonsOf } from './format.ts';
import type { BodyFields, LlmFormat, OutcomeSink, PromptMessage } from './format.ts';
import { argumentsSlot, CHAT_PARTS, jsonSlot, partSlots, slot, stringSlot } from './slots.ts';
import type { TextSlot } from './slots.ts';
import { outputBytes } from '../output-bytes.ts';

/**
 * Parts of an answer that carry text the model wrote and come whole, one event each (ADR 0165): the part's key (both
 * spellings Google reads), the field with the text, and whether it is a JSON object (function call arguments).
 */
const WHOLE_PART_TEXTS = [
  ['functionCall', 'args', true],
  ['function_call', 'args', true],
  ['executableCode', 'code', false],
  ['executable_code', 'code', false],
] as const;

interface TextAcc {
  text: string;
  readonly refs: TextRef[];
}

interface CandidateAcc {
  readonly index: number;
  finish: unknown;
  /** Answer text, then thought text (`thought: true` parts), each put together from its deltas. */
  readonly answer: TextAcc;
  readonly thought: TextAcc;
  /** Parts without text (function calls, inline data), in order. */
  readonly other: Obj[];
  /** The function calls and code among them, as guarded texts. */
  readonly calls: StreamText[];
  readonly extra: Obj;
}

/** A text delta: masking gives the first one the whole text and empties the others (the event stays). */
function partRef(at: number, part: Obj): TextRef {
  return {
    at,
    set(text) {
      part.text = text;
    },
    clear() {
      part.text = '';
      return false;
    },
  };
}

const assembleGemini: Builder = (events) => {
  const candidates = new Map<number, CandidateAcc>();
  const top: Obj = {};
  events.forEach((e, at) => {
    const d = e.data;
    if (!d) return;
    for (const key of ['usageMetadata', 'modelVersion', 'responseId', 'promptFeedback']) if (d[key] !== undefined) top[key] = d[key];
    if (!Array.isArray(d.candidates)) return;
    for (const c of d.candidates) {
      if (!isObj(c)) continue;
      const index = typeof c.index === 'number' ? c.index : 0;
      let acc = candidates.get(index);
      if (!acc) candidates.set(index, (acc = { index, finish: undefined, answer: { text: '', refs: [] }, thought: { text: '', refs: [] }, other: [], calls: [], extra: {} }));
      if (c.finishReason !== undefined) acc.finish = c.finishReason;
      for (const key of ['safetyRatings', 'citationMetadata', 'groundingMetadata']) if (c[key] !== undefined) acc.extra[key] = c[key];
      if (!isObj(c.content) || !Array.isArray(c.content.parts)) continue;
      for (const part of c.content.parts) {
        if (!isObj(part)) continue;
        if (typeof part.text !== 'string') {
          const whole = WHOLE_PART_TEXTS.find(([key]) => isObj(part[key]));
          if (!whole) {
            acc.other.push(part);
            continue;
          }
          // A function call or code comes whole in one event: one guarded text (ADR 0165), written back there.
          const [key, field, json] = whole;
          const copy = structuredClone(part);
          acc.other.push(copy);
          const ref: TextRef = { at, set: (text) => void ((part[key] as Obj)[field] = json ? (JSON.parse(text) as unknown) : text), clear: () => false };
          const read = (): string => (json ? JSON.stringify((copy[key] as Obj)[field]) : ((copy[key] as Obj)[field] as string));
          acc.calls.push({ read, refs: [ref], snapshots: [] });
          continue;
        }
        const into = part.thought === true ? acc.thought : acc.answer;
        into.text += part.text;
        into.refs.push(partRef(at, part));
      }
    }
  });
  const accs = [...candidates.values()].sort((a, b) => a.index - b.index);
  const texts: StreamText[] = [];
  const body: Obj = {
    candidates: accs.map((a) => {
      const parts: Obj[] = [];
      for (const [acc, thought] of [[a.thought, true], [a.answer, false]] as const) {
        if (acc.refs.length === 0) continue;
        const part: Obj = thought ? { text: acc.text, thought: true } : { text: acc.text };
        parts.push(part);
        texts.push({ read: () => part.text as string, refs: acc.refs, snapshots: [] });
      }
      parts.push(...a.other);
      texts.push(...a.calls);
      const candidate: Obj = { index: a.index, content: { role: 'model', parts }, ...a.extra };
      if (a.finish !== undefined) candidate.finishReason = a.finish;
      return candidate;
    }),
    ...top,
  };
  return { body, texts, bodyEvents: [] };
};

// ---------------------------------------------------------------------------------------------------------------

/** A Gemini `Content` (`{role, parts: [{text}, ...]}`): its text parts; the model's role is `assistant` to guards. */
function geminiContentSlots(content: unknown, fallbackRole: string, out: TextSlot[]): void {
  if (!isObj(content) || !Array.isArray(content.parts)) return;
  const role = content.role === 'model' ? 'assistant' : typeof content.role === 'string' ? content.role : fallbackRole;
  for (const part of content.parts) {
    if (!isObj(part)) continue;
    partSlots(role, [part], CHAT_PARTS, out);
    for (const [key, field, json] of WHOLE_PART_TEXTS) {
      if (isObj(part[key])) (json ? argumentsSlot : stringSlot)(role, part[key], field, out);
    }
  }
}

/** A request `Content`: its text parts, function calls' arguments and function responses as JSON text (role `tool`; ADR 0159). */
function geminiPromptSlots(content: unknown, fallbackRole: string, out: TextSlot[]): void {
  if (!isObj(content) || !Array.isArray(content.parts)) return;
  const role = content.role === 'model' ? 'assistant' : typeof content.role === 'string' ? content.role : fallbackRole;
  for (const part of content.parts) {
    if (!isObj(part)) continue;
    if (typeof part.text === 'string') out.push(slot(role, part, 'text'));
    // Google's JSON reads a field by either name (`function_response`).
    for (const key of ['functionResponse', 'function_response']) if (isObj(part[key]) && isObj(part[key].response)) out.push(jsonSlot('tool', part[key], 'response'));
    for (const key of ['functionCall', 'function_call']) if (isObj(part[key])) argumentsSlot(role, part[key], 'args', out);
  }
}

/** Gemini `generateContent`: `systemInstruction` (or `system_instruction`), then `contents[]`. */
function geminiRequestSlots(body: Obj, out: TextSlot[]): void {
  // Both names when both are there: which one Google reads is not the gateway's to guess.
  geminiPromptSlots(body.systemInstruction, 'system', out);
  geminiPromptSlots(body.system_instruction, 'system', out);
  if (Array.isArray(body.contents)) for (const c of body.contents) geminiPromptSlots(c, 'user', out);
}

// --- the `ai` policy on Gemini bodies (docs/ai-policy.md "Gemini clients", ADR 0066) -----------------------------

/**
 * Configured fields that are generation settings, by the name written in the config (Gemini's own and the OpenAI
 * names a mixed route already uses) -> their name in `generationConfig`. Any other field is a top-level one.
 */
const GENERATION_FIELDS: ReadonlyMap<string, string> = new Map(
  Object.entries({
    temperature: 'temperature',
    topP: 'topP',
    top_p: 'topP',
    topK: 'topK',
    top_k: 'topK',
    maxOutputTokens: 'maxOutputTokens',
    max_tokens: 'maxOutputTokens',
    max_completion_tokens: 'maxOutputTokens',
    stopSequences: 'stopSequences',
    stop: 'stopSequences',
    candidateCount: 'candidateCount',
    n: 'candidateCount',
    seed: 'seed',
    presencePenalty: 'presencePenalty',
    presence_penalty: 'presencePenalty',
    frequencyPenalty: 'frequencyPenalty',
    frequency_penalty: 'frequencyPenalty',
    responseMimeType: 'responseMimeType',
    responseSchema: 'responseSchema',
    responseJsonSchema: 'responseJsonSchema',
    responseModalities: 'responseModalities',
    responseLogprobs: 'responseLogprobs',
    logprobs: 'logprobs',
    thinkingConfig: 'thinkingConfig',
    speechConfig: 'speechConfig',
    mediaResolution: 'mediaResolution',
  }),
);

/** The request's generation settings (`generationConfig`, or the snake_case `generation_config` a client sent). */
function generationConfig(body: Obj, create: boolean): Obj | undefined {
  const key = body.generationConfig === undefined && body.generation_config !== undefined ? 'generation_config' : 'generationConfig';
  const held = body[key];
  if (isObj(held)) return held;
  if (!create) return undefined;
  const fresh: Obj = {};
  body[key] = fresh;
  return fresh;
}

const geminiBodyFields: BodyFields = {
  has(body, field) {
    const name = GENERATION_FIELDS.get(field);
    if (name === undefined) return body[field] !== undefined;
    return generationConfig(body, false)?.[name] !== undefined;
  },
  set(body, field, value) {
    const name = GENERATION_FIELDS.get(field);
    if (name === undefined) body[field] = value;
    // `stop: "END"` as OpenAI clients write it; Gemini wants a list.
    else generationConfig(body, true)![name] = name === 'stopSequences' && typeof value === 'string' ? [value] : value;
  },
  delete(body, field) {
    const name = GENERATION_FIELDS.get(field);
    if (name === undefined) delete body[field];
    else {
      const config = generationConfig(body, false);
      if (config) delete config[name];
    }
  },
};

/**
 * `ai.prompts` on a Gemini body: `system`/`developer` messages become parts of `systemInstruction` (prepended
 * before the client's parts, appended after them), the others turns of `contents` (`assistant` -> role `model`).
 */
function geminiPrompts(body: Obj, prepend: readonly PromptMessage[], append: readonly PromptMessage[]): void {
  const sysBefore: Obj[] = [];
  const sysAfter: Obj[] = [];
  const turnsBefore: Obj[] = [];
  const turnsAfter: Obj[] = [];
  const sort = (list: readonly PromptMessage[], sys: Obj[], turns: Obj[]): void => {
    for (const m of list) {
      if (m.role === 'system' || m.role === 'developer') sys.push({ text: m.content });
      else turns.push({ role: m.role === 'assistant' || m.role === 'model' ? 'model' : 'user', parts: [{ text: m.content }] });
    }
  };
  sort(prepend, sysBefore, turnsBefore);
  sort(append, sysAfter, turnsAfter);
  if (sysBefore.length || sysAfter.length) {
    const key = body.systemInstruction === undefined && body.system_instruction !== undefined ? 'system_instruction' : 'systemInstruction';
    const held = isObj(body[key]) ? (body[key] as Obj) : {};
    const parts = Array.isArray(held.parts) ? held.parts : [];
    body[key] = { ...held, parts: [...sysBefore, ...parts, ...sysAfter] };
  }
  if (turnsBefore.length || turnsAfter.length) {
    body.contents = [...turnsBefore, ...(Array.isArray(body.contents) ? body.contents : []), ...turnsAfter];
  }
}

/** A `GenerateContentResponse`'s id and its candidates' finish reasons (on a stream's last chunks). */
function outcome(body: Obj, sink: OutcomeSink): void {
  sink.setResponseId(body.responseId);
  finishReasonsOf(body.candidates, 'finishReason', sink);
}

export const geminiNative: LlmFormat = {
  name: 'geminiNative',
  family: 'google',
  operation: 'generate_content',
  requestFromCanonical: completionsRequestToGemini,
  responseToCanonical: (b, model) => geminiResponseToCompletions(b, model),
  streamToCanonical: (model) => new GeminiToCompletionsStream(model),
  observeResponse(body, call) {
    call.setResponseModel(body.modelVersion);
    call.addUsage(usageFromGemini(body.usageMetadata));
  },
  observedMembers: ['modelVersion', 'usageMetadata'],
  observeEvent(e, call) {
    if (e.done) return;
    // Every chunk may restate the counts so far; later ones win.
    if (call.responseModel === undefined) call.setResponseModel(e.data.modelVersion);
    if (isObj(e.data.usageMetadata)) call.addUsage(usageFromGemini(e.data.usageMetadata));
    if (isObj(e.data.error)) call.streamError?.(e.data.error);
  },
  observes: (_event, data, call) => call.responseModel === undefined || data.includes('usageMetadata') || data.includes('"error"'),
  outcomeOfResponse: outcome,
  outcomeMembers: ['responseId', 'candidates'],
  outcomeOfEvent: (e, sink) => e.done || outcome(e.data, sink),
  // Function-call arguments arrive whole as objects: their JSON text counts, as a Chat Completions `arguments` string.
  outputBytes: (data) => outputBytes(data, ['text'], ['args']),
  assembleStream: assembleGemini,
  requestSlots: geminiRequestSlots,
  bodyFields: geminiBodyFields,
  insertPrompts: geminiPrompts,
  responseSlots(body, out) {
    // Text parts (thoughts included) and function calls' arguments (ADR 0165).
    if (Array.isArray(body.candidates)) for (const c of body.candidates) if (isObj(c)) geminiContentSlots(c.content, 'assistant', out);
  },
  answerEvents: geminiAnswerEvents,
};

/**
 * An Anthropic `count_tokens` body as a Gemini API `countTokens` request: its `generateContentRequest` form, which
 * counts the system instruction and tools too (`contents` alone would leave them out), the model named as
 * `models/<id>` (ADR 0157).
 */
function anthropicCountToGemini(body: Obj): Obj {
  const model = typeof body.model === 'string' ? body.model : '';
  return { generateContentRequest: { model: model.startsWith('models/') ? model : `models/${model}`, ...completionsRequestToGemini(messagesRequestToCompletions(body)) } };
}

/** `countTokens`: answered with a count (nothing to stream, observe or guard); an Anthropic client's count translated. */
export const geminiCountTokens: LlmFormat = {
  name: 'geminiCountTokens',
  family: 'google',
  operation: 'count_tokens',
  from: { anthropicTokenCount: { request: anthropicCountToGemini, response: (b) => ({ input_tokens: typeof b.totalTokens === 'number' ? b.totalTokens : 0 }) } },
};
