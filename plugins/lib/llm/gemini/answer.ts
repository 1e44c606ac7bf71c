// Gemini native `generateContent` response -> OpenAI Chat Completions response, with the finish reason, usage and
// function-call mapping the stream shares (BEHAVIOUR.md §2.8, §4.6).
import { randomUUID } from 'node:crypto';
import { addThinking } from '../thinking.ts';
import { isObj, nowSeconds } from '../json.ts';
import type { Obj } from '../json.ts';

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
      return calledTools ? 'tool_calls' : 'stop'; // STOP, OTHER, LANGUAGE, MALFORMED_FUNCTION_CALL, ...
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

export function toolCallOf(part: Obj, index: number | undefined): Obj {
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

/**
 * Gemini's reasoning in parts as one Anthropic thinking block (ADR 0167): the thought summaries' text, and the turn's
 * first thought signature, which Gemini wants back on the next turn (an Anthropic client keeps it with the block).
 */
export function thinkingOfParts(parts: readonly Obj[]): { type: 'thinking'; thinking: string; signature: string } {
  let thinking = '';
  let signature = '';
  for (const p of parts) {
    if (p.thought === true && typeof p.text === 'string') thinking += p.text;
    if (!signature && typeof p.thoughtSignature === 'string') signature = p.thoughtSignature;
  }
  return { type: 'thinking', thinking, signature };
}

export function firstCandidate(resp: Obj): Obj | undefined {
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
  const thinking = thinkingOfParts(parts);
  if (thinking.thinking || thinking.signature) addThinking(message, [thinking]);
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
