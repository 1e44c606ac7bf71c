// A cheap prompt-token estimate for token rate limits (docs/llm.md "Token rate limits", ADR 0024): UTF-8 bytes / 4
// (ADR 0164).
import { isObj } from './json.ts';
import type { Obj } from './json.ts';

/** The request fields that carry the prompt, in every client format (Chat, Messages, Responses, Gemini, embeddings). */
const PROMPT_FIELDS = ['messages', 'system', 'input', 'instructions', 'contents', 'systemInstruction', 'prompt', 'tools'] as const;

/** Keys whose strings are not prompt text: identifiers, roles, media (base64 data would count as thousands). */
const SKIP: ReadonlySet<string> = new Set(['role', 'type', 'id', 'tool_call_id', 'cache_control', 'image_url', 'data', 'source', 'inline_data', 'inlineData', 'file_data', 'fileData', 'mimeType', 'media_type']);

/** How deep the walk goes: prompts are shallow; a hostile body nested deeper is not walked further. */
const MAX_DEPTH = 12;

/** UTF-8 bytes of the prompt strings under `v` (counted, not encoded). */
function bytes(v: unknown, depth: number): number {
  if (typeof v === 'string') return Buffer.byteLength(v, 'utf8');
  if (depth >= MAX_DEPTH) return 0;
  let n = 0;
  if (Array.isArray(v)) {
    for (const item of v) n += bytes(item, depth + 1);
  } else if (isObj(v)) {
    for (const key in v) if (!SKIP.has(key)) n += bytes(v[key], depth + 1);
  }
  return n;
}

/**
 * Estimated prompt tokens of a parsed client request: the UTF-8 bytes of the strings under its prompt fields, divided
 * by 4 and rounded up (about 4 bytes a token in English with the GPT and Claude tokenizers, which split bytes: other
 * scripts take more bytes a character, and more tokens). As a cut stream's output is counted (ADR 0157). Only an
 * estimate reserved before the call: the provider's real usage replaces it once the answer has ended.
 */
export function estimatePromptTokens(body: Obj): number {
  let n = 0;
  for (const field of PROMPT_FIELDS) if (body[field] !== undefined) n += bytes(body[field], 0);
  return Math.ceil(n / 4);
}

/**
 * The most output tokens a request allows, in any client format (Chat, Messages, Responses, Gemini): the client's own
 * cap times the answers it asks for (each choice has the cap: `n: 3` is three answers); undefined without a cap.
 */
export function maxOutputTokens(body: Obj): number | undefined {
  const config = isObj(body.generationConfig) ? body.generationConfig : undefined;
  for (const v of [body.max_completion_tokens, body.max_tokens, body.max_output_tokens, config?.maxOutputTokens]) if (typeof v === 'number' && v >= 0) return v * answers(body.n, config?.candidateCount);
  return undefined;
}

/** How many answers a request asks for: Chat Completions' `n`, else Gemini's `candidateCount`; 1 unless more. */
function answers(n: unknown, candidates: unknown): number {
  const v = typeof n === 'number' ? n : candidates;
  return typeof v === 'number' && Number.isInteger(v) && v > 1 ? v : 1;
}
