// OpenAI Chat Completions request -> Gemini native `generateContent` request (BEHAVIOUR.md §2.8, §4.6).
import { appendTurn, canonicalExtra, checkChatMessages, imageUrlOf, narrowToAllowedTools, toolCallsOf, walkChatMessages } from '../chat-messages.ts';
import { isObj, parseArguments, parseDataUrl, textOf } from '../json.ts';
import type { Obj } from '../json.ts';
import { MAX_INLINED_SCHEMAS, toGeminiSchema } from './schema.ts';
import { signatureOfThinking, thinkingBudgetOf, thoughtSignatureOf } from '../thinking.ts';
import type { SchemaBudget } from './schema.ts';

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

/**
 * A tool message's content as a `functionResponse.response` (an object: JSON objects as they are, else `{output}`);
 * a failed tool's (an Anthropic `is_error` result) under `error`, the member Gemini reads error details from.
 */
function toolResponse(m: Obj): Obj {
  const text = textOf(m.content);
  let v: unknown = text;
  try {
    v = JSON.parse(text) as unknown;
  } catch {
    // Not JSON: the text as it is.
  }
  if (canonicalExtra(m, 'toolError') === true) return { error: v };
  return isObj(v) ? v : { output: v };
}

/**
 * A canonical request to Gemini's OpenAI-compatible API (ADR 0180): an Anthropic client's thinking-block signature
 * goes back on its turn's first call as `extra_content.google.thought_signature`, where that API keeps it, unless the
 * call carries its own. Only the first: Gemini signs the first of parallel calls.
 */
export function signaturesToCompatibleCalls(body: Obj): void {
  walkChatMessages(body, {
    system: () => undefined,
    user: () => undefined,
    tool: () => undefined,
    assistant: (m) => {
      const sig = signatureOfThinking(m);
      const first: unknown = Array.isArray(m.tool_calls) ? m.tool_calls[0] : undefined;
      if (sig === undefined || !isObj(first) || thoughtSignatureOf(first) !== undefined) return;
      const extra = isObj(first.extra_content) ? first.extra_content : {};
      first.extra_content = { ...extra, google: { ...(isObj(extra.google) ? extra.google : {}), thought_signature: sig } };
    },
  });
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
  checkChatMessages(body);
  const system: Obj[] = [];
  const contents: Obj[] = [];
  const callNames = new Map<string, string>();
  const toolResult = (m: Obj): void => {
    const name = (typeof m.tool_call_id === 'string' ? callNames.get(m.tool_call_id) : undefined) ?? (typeof m.name === 'string' ? m.name : 'function');
    appendTurn(contents, 'user', 'parts', [{ functionResponse: { name, response: toolResponse(m) } }]);
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
      // An Anthropic client keeps Gemini's signature in a thinking block (ADR 0167): it goes back on the turn's first
      // call, where Gemini requires it, when no call carries its own.
      let turnSignature = signatureOfThinking(m);
      for (const tc of toolCallsOf(m)) {
        if (typeof tc.function.name !== 'string') continue;
        if (typeof tc.id === 'string') callNames.set(tc.id, tc.function.name);
        const part: Obj = { functionCall: { name: tc.function.name, args: parseArguments(tc.function.arguments) } };
        const sig = thoughtSignatureOf(tc) ?? turnSignature;
        turnSignature = undefined;
        if (sig) part.thoughtSignature = sig;
        parts.push(part);
      }
      // A turn without calls: the signature on its last part, as Gemini answered it.
      if (turnSignature && parts.length > 0) parts[parts.length - 1]!.thoughtSignature = turnSignature;
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
  const topK = typeof body.top_k === 'number' ? body.top_k : canonicalExtra(body, 'topK');
  if (topK !== undefined) gen.topK = topK;
  if (typeof body.seed === 'number') gen.seed = body.seed;
  if (typeof body.presence_penalty === 'number') gen.presencePenalty = body.presence_penalty;
  if (typeof body.frequency_penalty === 'number') gen.frequencyPenalty = body.frequency_penalty;
  if (typeof body.stop === 'string') gen.stopSequences = [body.stop];
  else if (Array.isArray(body.stop) && body.stop.length > 0) gen.stopSequences = body.stop;
  // One budget for all of the request's schemas: many small ones may not add up to what one may not be.
  const budget: SchemaBudget = { left: MAX_INLINED_SCHEMAS };
  const format = body.response_format;
  if (isObj(format) && (format.type === 'json_object' || format.type === 'json_schema')) {
    gen.responseMimeType = 'application/json';
    if (format.type === 'json_schema' && isObj(format.json_schema) && isObj(format.json_schema.schema)) gen.responseSchema = toGeminiSchema(format.json_schema.schema, budget);
  }
  // Thinking: an Anthropic client's budget (its thoughts asked back, as thinking blocks; adaptive is Gemini's dynamic
  // budget, -1) or an effort's bucket.
  const thinking = thinkingBudgetOf(body, max);
  if (thinking !== undefined) {
    const thinkingBudget = thinking === 'adaptive' ? -1 : thinking;
    gen.thinkingConfig = canonicalExtra(body, 'thinkingBudget') !== undefined ? { thinkingBudget, includeThoughts: true } : { thinkingBudget };
  }
  if (Object.keys(gen).length > 0) out.generationConfig = gen;

  const { tools: declared, choice } = narrowToAllowedTools(body);
  if (Array.isArray(declared)) {
    const declarations = declared
      .filter((t: unknown) => isObj(t) && t.type === 'function' && isObj(t.function) && typeof t.function.name === 'string')
      .map((t: Obj) => {
        const d: Obj = { name: t.function.name };
        if (typeof t.function.description === 'string') d.description = t.function.description;
        if (isObj(t.function.parameters)) {
          const params = toGeminiSchema(t.function.parameters, budget) as Obj;
          // A function without parameters leaves `parameters` unset (an empty object schema is refused).
          if (!(params.type === 'object' && (!isObj(params.properties) || Object.keys(params.properties).length === 0))) d.parameters = params;
        }
        return d;
      });
    if (declarations.length > 0) {
      out.tools = [{ functionDeclarations: declarations }];
      const config = toolConfig(choice);
      if (config) out.toolConfig = config;
    }
  }
  return out;
}
