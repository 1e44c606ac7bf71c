// OpenAI Chat Completions <-> Gemini native `generateContent`: requests, responses, streams (BEHAVIOUR.md §2.8,
// §4.6), and the Gemini native paths (`models/<m>:generateContent`, `:streamGenerateContent`, `:countTokens`).
import { randomUUID } from 'node:crypto';
import { appendTurn, imageUrlOf, toolCallsOf, walkChatMessages } from './chat-messages.ts';
import { DONE } from './events.ts';
import type { LlmEvent, StreamTranslator } from './events.ts';
import { isObj, nowSeconds, parseArguments, parseDataUrl, textOf } from './json.ts';
import type { Obj } from './json.ts';

// ---------------------------------------------------------------------------------------------------------------
// Paths

/** What a Gemini native path says: the model (`models/<m>:…`, URL-decoded) and whether the answer streams. */
export interface GeminiPath {
  readonly model: string | undefined;
  readonly method: 'generateContent' | 'streamGenerateContent' | 'countTokens' | undefined;
}

const NATIVE_PATH = /\/models\/([^/:]+):(generateContent|streamGenerateContent|countTokens)$/;

/**
 * Read a Gemini native request path: `/v1beta/models/<m>:generateContent`, Vertex's
 * `/v1/projects/<p>/locations/<l>/publishers/google/models/<m>:streamGenerateContent`, or any route prefix before them.
 */
export function parseGeminiPath(path: string): GeminiPath {
  const m = NATIVE_PATH.exec(path);
  if (!m) return { model: undefined, method: undefined };
  let model: string;
  try {
    model = decodeURIComponent(m[1]!);
  } catch {
    model = m[1]!;
  }
  return { model, method: m[2] as GeminiPath['method'] };
}

/** A model name as Gemini's paths take it: without the `models/` resource prefix or a `google/` publisher. */
export function geminiModelName(model: string): string {
  return model.replace(/^models\//, '').replace(/^google\//, '');
}

/** `models/<m>:generateContent`, `:streamGenerateContent?alt=sse` or `:countTokens` under `prefix`. */
export function geminiNativePath(prefix: string, format: 'geminiNative' | 'geminiCountTokens', model: string, stream: boolean): string {
  const name = encodeURIComponent(geminiModelName(model)).replace(/%40/g, '@');
  if (format === 'geminiCountTokens') return `${prefix}/models/${name}:countTokens`;
  return `${prefix}/models/${name}:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`;
}

// ---------------------------------------------------------------------------------------------------------------
// Tool schemas

/** The JSON Schema keywords Gemini's `Schema` (an OpenAPI 3.0 subset) accepts; others make it answer 400. */
const SCHEMA_KEYS = new Set([
  'type', 'format', 'title', 'description', 'nullable', 'enum', 'maxItems', 'minItems', 'properties', 'required',
  'minProperties', 'maxProperties', 'minLength', 'maxLength', 'pattern', 'example', 'anyOf', 'propertyOrdering',
  'default', 'items', 'minimum', 'maximum',
]);

/**
 * A JSON Schema (what OpenAI tools and `response_format` carry) as Gemini's `Schema`: local `$ref`s inlined,
 * `const` as a one-value `enum`, `oneOf` as `anyOf`, a `type` list with `null` as `nullable`, and keywords Gemini
 * does not know (`additionalProperties`, `$schema`, `strict`, …) dropped.
 */
export function toGeminiSchema(schema: unknown, root: unknown = schema, depth = 0): unknown {
  if (!isObj(schema) || depth > 32) return schema;
  let s: Obj = schema;
  if (typeof s.$ref === 'string') {
    const target = resolveRef(root, s.$ref);
    if (target === undefined) return { type: 'object' };
    const { $ref: _ref, ...rest } = s;
    s = { ...target, ...rest };
  }
  const out: Obj = {};
  for (const [k, v] of Object.entries(s)) {
    if (k === 'const') out.enum = [v];
    else if (k === 'oneOf') out.anyOf = v;
    else if (SCHEMA_KEYS.has(k)) out[k] = v;
  }
  if (Array.isArray(out.type)) {
    const types = (out.type as unknown[]).filter((t) => t !== 'null');
    if (types.length < (out.type as unknown[]).length) out.nullable = true;
    if (types.length <= 1) out.type = types[0] ?? 'string';
    else {
      out.anyOf = types.map((t) => ({ type: t }));
      delete out.type;
    }
  }
  if (isObj(out.properties)) {
    const props: Obj = {};
    for (const [k, v] of Object.entries(out.properties)) props[k] = toGeminiSchema(v, root, depth + 1);
    out.properties = props;
  }
  if (out.items !== undefined) out.items = toGeminiSchema(out.items, root, depth + 1);
  if (Array.isArray(out.anyOf)) out.anyOf = out.anyOf.map((x: unknown) => toGeminiSchema(x, root, depth + 1));
  return out;
}

function resolveRef(root: unknown, ref: string): Obj | undefined {
  if (!ref.startsWith('#/')) return undefined;
  let node: unknown = root;
  for (const raw of ref.slice(2).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (!isObj(node)) return undefined;
    node = node[key];
  }
  return isObj(node) ? node : undefined;
}

// ---------------------------------------------------------------------------------------------------------------
// Completions request -> Gemini request

const EXTENSION_TYPES: Record<string, string> = {
  png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', gif: 'image/gif', webp: 'image/webp', heic: 'image/heic', heif: 'image/heif',
  pdf: 'application/pdf', mp3: 'audio/mpeg', wav: 'audio/wav', mp4: 'video/mp4',
};

function mimeFromUrl(url: string): string | undefined {
  const m = /\.([a-z0-9]+)(?:[?#].*)?$/i.exec(url);
  return m ? EXTENSION_TYPES[m[1]!.toLowerCase()] : undefined;
}

/** A media URL as a Gemini part: a data URL inline, another URL as `fileData`. */
function mediaPart(url: unknown, fallbackType: string): Obj | undefined {
  if (typeof url !== 'string' || !url) return undefined;
  const data = parseDataUrl(url);
  if (data) return { inlineData: { mimeType: data.mediaType, data: data.data } };
  return { fileData: { mimeType: mimeFromUrl(url) ?? fallbackType, fileUri: url } };
}

function userParts(content: unknown): Obj[] {
  if (typeof content === 'string') return content ? [{ text: content }] : [];
  const out: Obj[] = [];
  for (const p of Array.isArray(content) ? content : []) {
    if (typeof p === 'string') {
      if (p) out.push({ text: p });
      continue;
    }
    if (!isObj(p)) continue;
    let part: Obj | undefined;
    if (p.type === 'text' && typeof p.text === 'string' && p.text) part = { text: p.text };
    else if (p.type === 'image_url') part = mediaPart(imageUrlOf(p), 'image/jpeg');
    else if (p.type === 'input_audio' && isObj(p.input_audio) && typeof p.input_audio.data === 'string') {
      part = { inlineData: { mimeType: `audio/${p.input_audio.format === 'mp3' ? 'mpeg' : (p.input_audio.format ?? 'wav')}`, data: p.input_audio.data } };
    } else if (p.type === 'file' && isObj(p.file)) part = mediaPart(p.file.file_data, 'application/pdf');
    if (part) out.push(part);
  }
  return out;
}

/** A tool message's content as a `functionResponse.response` (an object: JSON objects as they are, else `{output}`). */
function toolResponse(content: unknown): Obj {
  const text = textOf(content);
  try {
    const v = JSON.parse(text) as unknown;
    if (isObj(v)) return v;
    return { output: v };
  } catch {
    return { output: text };
  }
}

/** `tool_calls[].extra_content.google.thought_signature`: Gemini's signature kept by clients across turns. */
function thoughtSignatureOf(toolCall: Obj): string | undefined {
  const sig = isObj(toolCall.extra_content) && isObj(toolCall.extra_content.google) ? toolCall.extra_content.google.thought_signature : undefined;
  return typeof sig === 'string' ? sig : undefined;
}

function toolConfig(choice: unknown): Obj | undefined {
  if (choice === 'auto') return { functionCallingConfig: { mode: 'AUTO' } };
  if (choice === 'required') return { functionCallingConfig: { mode: 'ANY' } };
  if (choice === 'none') return { functionCallingConfig: { mode: 'NONE' } };
  if (isObj(choice) && isObj(choice.function) && typeof choice.function.name === 'string') {
    return { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: [choice.function.name] } };
  }
  return undefined;
}

/**
 * An OpenAI Chat Completions request as a Gemini `generateContent` request (the model and streaming go in the
 * path). System and developer messages become `systemInstruction`, assistant turns `model` turns, tool calls
 * `functionCall` parts and tool results `functionResponse` parts (named after the call they answer).
 */
export function completionsRequestToGemini(body: Obj): Obj {
  const system: Obj[] = [];
  const contents: Obj[] = [];
  const callNames = new Map<string, string>();
  const toolResult = (m: Obj): void => {
    const name = (typeof m.tool_call_id === 'string' ? callNames.get(m.tool_call_id) : undefined) ?? (typeof m.name === 'string' ? m.name : 'function');
    appendTurn(contents, 'user', 'parts', [{ functionResponse: { name, response: toolResponse(m.content) } }]);
  };
  walkChatMessages(body, {
    system: (text) => {
      if (text) system.push({ text });
    },
    user: (m) => appendTurn(contents, 'user', 'parts', userParts(m.content)),
    assistant: (m) => {
      const parts: Obj[] = [];
      const text = textOf(m.content);
      if (text) parts.push({ text });
      for (const tc of toolCallsOf(m)) {
        if (typeof tc.function.name !== 'string') continue;
        if (typeof tc.id === 'string') callNames.set(tc.id, tc.function.name);
        const part: Obj = { functionCall: { name: tc.function.name, args: parseArguments(tc.function.arguments) } };
        const sig = thoughtSignatureOf(tc);
        if (sig) part.thoughtSignature = sig;
        parts.push(part);
      }
      appendTurn(contents, 'model', 'parts', parts);
    },
    tool: toolResult,
    function: toolResult,
  });
  const out: Obj = { contents };
  if (system.length > 0) out.systemInstruction = { parts: system };

  const gen: Obj = {};
  const max = body.max_completion_tokens ?? body.max_tokens;
  if (typeof max === 'number') gen.maxOutputTokens = max;
  if (typeof body.temperature === 'number') gen.temperature = body.temperature;
  if (typeof body.top_p === 'number') gen.topP = body.top_p;
  if (typeof body.top_k === 'number') gen.topK = body.top_k;
  if (typeof body.seed === 'number') gen.seed = body.seed;
  if (typeof body.presence_penalty === 'number') gen.presencePenalty = body.presence_penalty;
  if (typeof body.frequency_penalty === 'number') gen.frequencyPenalty = body.frequency_penalty;
  if (typeof body.stop === 'string') gen.stopSequences = [body.stop];
  else if (Array.isArray(body.stop) && body.stop.length > 0) gen.stopSequences = body.stop;
  const format = body.response_format;
  if (isObj(format) && (format.type === 'json_object' || format.type === 'json_schema')) {
    gen.responseMimeType = 'application/json';
    if (format.type === 'json_schema' && isObj(format.json_schema) && isObj(format.json_schema.schema)) gen.responseSchema = toGeminiSchema(format.json_schema.schema);
  }
  if (Object.keys(gen).length > 0) out.generationConfig = gen;

  if (Array.isArray(body.tools)) {
    const declarations = body.tools
      .filter((t: unknown) => isObj(t) && t.type === 'function' && isObj(t.function) && typeof t.function.name === 'string')
      .map((t: Obj) => {
        const d: Obj = { name: t.function.name };
        if (typeof t.function.description === 'string') d.description = t.function.description;
        if (isObj(t.function.parameters)) {
          const params = toGeminiSchema(t.function.parameters) as Obj;
          // A function without parameters leaves `parameters` unset (an empty object schema is refused).
          if (!(params.type === 'object' && (!isObj(params.properties) || Object.keys(params.properties).length === 0))) d.parameters = params;
        }
        return d;
      });
    if (declarations.length > 0) {
      out.tools = [{ functionDeclarations: declarations }];
      const config = toolConfig(body.tool_choice);
      if (config) out.toolConfig = config;
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Finish reasons and usage

/** A Gemini `finishReason` as an OpenAI `finish_reason` (a candidate that called functions finished with `tool_calls`). */
export function geminiFinishToOpenAi(reason: unknown, calledTools: boolean): string | null {
  switch (reason) {
    case undefined:
    case null:
    case '':
    case 'FINISH_REASON_UNSPECIFIED':
      return null;
    case 'MAX_TOKENS':
      return 'length';
    case 'SAFETY':
    case 'RECITATION':
    case 'BLOCKLIST':
    case 'PROHIBITED_CONTENT':
    case 'SPII':
    case 'IMAGE_SAFETY':
    case 'IMAGE_PROHIBITED_CONTENT':
    case 'IMAGE_RECITATION':
      return 'content_filter';
    case 'FUNCTION_CALL':
      return 'tool_calls';
    default:
      return calledTools ? 'tool_calls' : 'stop'; // STOP, OTHER, LANGUAGE, MALFORMED_FUNCTION_CALL, …
  }
}

const count = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

/**
 * Gemini `usageMetadata` as OpenAI usage: prompt tokens include tool-use prompt tokens (and cached content, which
 * `promptTokenCount` already counts), completion tokens include thinking tokens (as OpenAI counts reasoning).
 */
export function geminiUsageToCompletions(u: unknown): Obj | undefined {
  if (!isObj(u)) return undefined;
  const prompt = count(u.promptTokenCount) + count(u.toolUsePromptTokenCount);
  const thoughts = count(u.thoughtsTokenCount);
  const completion = count(u.candidatesTokenCount) + thoughts;
  const out: Obj = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: typeof u.totalTokenCount === 'number' ? u.totalTokenCount : prompt + completion };
  if (count(u.cachedContentTokenCount)) out.prompt_tokens_details = { cached_tokens: count(u.cachedContentTokenCount) };
  if (thoughts) out.completion_tokens_details = { reasoning_tokens: thoughts };
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Gemini response -> Completions response

function toolCallOf(part: Obj, index: number | undefined): Obj {
  const fc: Obj = part.functionCall;
  const call: Obj = {
    ...(index === undefined ? {} : { index }),
    id: typeof fc.id === 'string' && fc.id ? fc.id : `call_${randomUUID().replace(/-/g, '').slice(0, 24)}`,
    type: 'function',
    function: { name: fc.name, arguments: JSON.stringify(isObj(fc.args) ? fc.args : {}) },
  };
  if (typeof part.thoughtSignature === 'string') call.extra_content = { google: { thought_signature: part.thoughtSignature } };
  return call;
}

function firstCandidate(resp: Obj): Obj | undefined {
  if (!Array.isArray(resp.candidates)) return undefined;
  return resp.candidates.find((c: unknown) => isObj(c) && (c.index ?? 0) === 0) ?? resp.candidates.find(isObj);
}

/** A Gemini `generateContent` response (first candidate) as an OpenAI Chat Completions response. */
export function geminiResponseToCompletions(resp: Obj, model: string): Obj {
  const candidate = firstCandidate(resp);
  const parts: Obj[] = candidate && isObj(candidate.content) && Array.isArray(candidate.content.parts) ? candidate.content.parts.filter(isObj) : [];
  let text = '';
  const toolCalls: Obj[] = [];
  for (const p of parts) {
    if (p.thought === true) continue;
    if (typeof p.text === 'string') text += p.text;
    else if (isObj(p.functionCall)) toolCalls.push(toolCallOf(p, undefined));
  }
  const message: Obj = { role: 'assistant', content: text || toolCalls.length === 0 ? text : null };
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  // No candidate at all: the prompt was blocked (`promptFeedback.blockReason`).
  const finish = candidate ? (geminiFinishToOpenAi(candidate.finishReason, toolCalls.length > 0) ?? 'stop') : 'content_filter';
  const out: Obj = {
    id: typeof resp.responseId === 'string' && resp.responseId ? resp.responseId : `chatcmpl-${randomUUID()}`,
    object: 'chat.completion',
    created: nowSeconds(),
    model: typeof resp.modelVersion === 'string' && resp.modelVersion ? resp.modelVersion : model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: finish }],
  };
  const usage = geminiUsageToCompletions(resp.usageMetadata);
  if (usage) out.usage = usage;
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Gemini stream -> Completions stream

/**
 * `streamGenerateContent?alt=sse` chunks (each a partial `GenerateContentResponse`) as `chat.completion.chunk`s:
 * a role chunk first, text and whole function calls as they come, the finish reason, then, once the provider's
 * stream has ended after a finish reason, a usage chunk and `[DONE]`. A stream cut before a finish reason is not
 * completed.
 */
export class GeminiToCompletionsStream implements StreamTranslator {
  private id = `chatcmpl-${randomUUID()}`;
  private readonly created = nowSeconds();
  private model: string;
  private started = false;
  private nextTool = 0;
  private finish: string | null = null;
  private failed = false;
  private usage: Obj | undefined = undefined;

  constructor(model: string) {
    this.model = model;
  }

  private chunk(delta: Obj, finish: string | null = null): LlmEvent {
    return { type: undefined, data: { id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] } };
  }

  event(e: LlmEvent): LlmEvent[] {
    if (this.failed || e.done) return [];
    const d = e.data;
    if (isObj(d.error)) {
      this.failed = true;
      const err: Obj = d.error;
      return [{ type: undefined, data: { error: { message: err.message ?? 'upstream error', type: err.status ?? 'api_error', param: null, code: err.code ?? null } } }];
    }
    const out: LlmEvent[] = [];
    if (!this.started) {
      this.started = true;
      if (typeof d.responseId === 'string' && d.responseId) this.id = d.responseId;
      if (typeof d.modelVersion === 'string' && d.modelVersion) this.model = d.modelVersion;
      out.push(this.chunk({ role: 'assistant', content: '' }));
    }
    if (isObj(d.usageMetadata)) this.usage = { ...(this.usage ?? {}), ...d.usageMetadata };
    const candidate = firstCandidate(d);
    if (!candidate) {
      if (isObj(d.promptFeedback) && d.promptFeedback.blockReason && this.finish === null) {
        this.finish = 'content_filter';
        out.push(this.chunk({}, this.finish));
      }
      return out;
    }
    const parts: Obj[] = isObj(candidate.content) && Array.isArray(candidate.content.parts) ? candidate.content.parts.filter(isObj) : [];
    for (const p of parts) {
      if (p.thought === true) continue;
      if (typeof p.text === 'string') {
        if (p.text) out.push(this.chunk({ content: p.text }));
      } else if (isObj(p.functionCall)) {
        out.push(this.chunk({ tool_calls: [toolCallOf(p, this.nextTool++)] }));
      }
    }
    const finish = geminiFinishToOpenAi(candidate.finishReason, this.nextTool > 0);
    if (finish && this.finish === null) {
      this.finish = finish;
      out.push(this.chunk({}, finish));
    }
    return out;
  }

  end(): LlmEvent[] {
    if (this.failed || this.finish === null) return [];
    const out: LlmEvent[] = [];
    const usage = geminiUsageToCompletions(this.usage);
    if (usage) out.push({ type: undefined, data: { id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.model, choices: [], usage } });
    out.push(DONE);
    return out;
  }
}
