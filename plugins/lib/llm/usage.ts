import { isObj } from './json.ts';
import type { Obj } from './json.ts';

/**
 * Token counts of one LLM call, normalised across providers. `inputTokens` includes cached input (reads and
 * writes), as the reference does for `llm.inputTokens`.
 */
export interface LlmUsage {
  inputTokens?: number;
  outputTokens?: number;
  cachedInputTokens?: number;
  cacheCreationInputTokens?: number;
  reasoningTokens?: number;
  /** Audio input tokens, within `inputTokens` (priced at `audioInput`, ADR 0192). */
  audioInputTokens?: number;
  /** Cached audio input tokens, within both `cachedInputTokens` and `audioInputTokens`. */
  cachedAudioInputTokens?: number;
  /** Audio output tokens, within `outputTokens`. */
  audioOutputTokens?: number;
}

/**
 * A token count: a non-negative whole number (safe as an integer). Anything else is no count: a negative one would
 * settle a budget with a credit and make counters and costs go backwards.
 */
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : undefined);

/** OpenAI counts (Chat Completions and Responses name the totals differently, their details alike). */
function openAiUsage(input: unknown, output: unknown, inputDetails: unknown, outputDetails: unknown): LlmUsage {
  const inDetails = inputDetails as Obj | undefined;
  const usage: LlmUsage = {
    inputTokens: num(input),
    outputTokens: num(output),
    cachedInputTokens: num(inDetails?.cached_tokens),
    reasoningTokens: num((outputDetails as Obj | undefined)?.reasoning_tokens),
  };
  // Audio models (Chat Completions' audio models, Realtime): `audio_tokens` in the details; Realtime splits its cached
  // tokens by modality too.
  return withAudio(usage, num(inDetails?.audio_tokens), num((inDetails?.cached_tokens_details as Obj | undefined)?.audio_tokens), num((outputDetails as Obj | undefined)?.audio_tokens));
}

/** `usage` with the audio counts a provider reported (only those: a text call's usage keeps its shape). */
function withAudio(usage: LlmUsage, input: number | undefined, cachedInput: number | undefined, output: number | undefined): LlmUsage {
  if (input !== undefined) usage.audioInputTokens = input;
  if (cachedInput !== undefined) usage.cachedAudioInputTokens = cachedInput;
  if (output !== undefined) usage.audioOutputTokens = output;
  return usage;
}

/** OpenAI Chat Completions / Embeddings `usage`. */
export function usageFromCompletions(u: unknown): LlmUsage | undefined {
  return isObj(u) ? openAiUsage(u.prompt_tokens, u.completion_tokens, u.prompt_tokens_details, u.completion_tokens_details) : undefined;
}

/** OpenAI Responses `usage`. */
export function usageFromResponses(u: unknown): LlmUsage | undefined {
  return isObj(u) ? openAiUsage(u.input_tokens, u.output_tokens, u.input_tokens_details, u.output_tokens_details) : undefined;
}

/**
 * Counts that name cache reads and writes apart from the input (Anthropic Messages, Bedrock Converse): the input is
 * normalised to include both.
 */
export function usageFromCacheCounts(input: unknown, output: unknown, cacheRead: unknown, cacheWrite: unknown): LlmUsage {
  const inTokens = num(input);
  const read = num(cacheRead);
  const write = num(cacheWrite);
  return {
    inputTokens: inTokens === undefined && read === undefined && write === undefined ? undefined : (inTokens ?? 0) + (read ?? 0) + (write ?? 0),
    outputTokens: num(output),
    cachedInputTokens: read,
    cacheCreationInputTokens: write,
  };
}

/** Anthropic Messages `usage`. */
export function usageFromMessages(u: unknown): LlmUsage | undefined {
  return isObj(u) ? usageFromCacheCounts(u.input_tokens, u.output_tokens, u.cache_read_input_tokens, u.cache_creation_input_tokens) : undefined;
}

/**
 * Gemini `usageMetadata` (input: prompt tokens, which include cached content, plus tool-use prompt tokens; output:
 * candidate tokens plus thinking tokens, as OpenAI counts reasoning in its output).
 */
export function usageFromGemini(u: unknown): LlmUsage | undefined {
  if (!isObj(u)) return undefined;
  const prompt = num(u.promptTokenCount);
  const toolUse = num(u.toolUsePromptTokenCount);
  // The Live API names the output `responseTokenCount` (its details `responseTokensDetails`).
  const candidates = num(u.candidatesTokenCount) ?? num(u.responseTokenCount);
  const thoughts = num(u.thoughtsTokenCount);
  const usage: LlmUsage = {
    inputTokens: prompt === undefined && toolUse === undefined ? undefined : (prompt ?? 0) + (toolUse ?? 0),
    outputTokens: candidates === undefined && thoughts === undefined ? undefined : (candidates ?? 0) + (thoughts ?? 0),
    cachedInputTokens: num(u.cachedContentTokenCount),
    reasoningTokens: thoughts,
  };
  return withAudio(usage, modalityCount(u.promptTokensDetails, 'AUDIO'), modalityCount(u.cacheTokensDetails, 'AUDIO'), modalityCount(u.candidatesTokensDetails ?? u.responseTokensDetails, 'AUDIO'));
}

/** The count of one modality in Gemini's `ModalityTokenCount` list (`[{modality, tokenCount}]`); bounded to 16 entries. */
function modalityCount(list: unknown, modality: string): number | undefined {
  if (!Array.isArray(list)) return undefined;
  let sum: number | undefined;
  for (let i = 0; i < list.length && i < 16; i++) {
    const entry = list[i] as Obj | undefined;
    if (!isObj(entry) || entry.modality !== modality) continue;
    const n = num(entry.tokenCount);
    if (n !== undefined) sum = (sum ?? 0) + n;
  }
  return sum;
}

/** OpenAI usage from a provider's counts: prompt tokens include cache reads and writes (a non-number counts 0). */
export function completionsUsageFromCounts(input: unknown, output: unknown, cacheRead: unknown, cacheWrite: unknown): Obj {
  const read = typeof cacheRead === 'number' ? cacheRead : 0;
  const write = typeof cacheWrite === 'number' ? cacheWrite : 0;
  const prompt = (typeof input === 'number' ? input : 0) + read + write;
  const completion = typeof output === 'number' ? output : 0;
  const out: Obj = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  if (read) out.prompt_tokens_details = { cached_tokens: read };
  return out;
}

/** Merge newer counts over older ones (a stream reports input first and output last). */
export function mergeUsage(into: LlmUsage, from: LlmUsage | undefined): void {
  if (!from) return;
  // The fields by name: no key array per call (every LLM answer merges at least once).
  if (from.inputTokens !== undefined) into.inputTokens = from.inputTokens;
  if (from.outputTokens !== undefined) into.outputTokens = from.outputTokens;
  if (from.cachedInputTokens !== undefined) into.cachedInputTokens = from.cachedInputTokens;
  if (from.cacheCreationInputTokens !== undefined) into.cacheCreationInputTokens = from.cacheCreationInputTokens;
  if (from.reasoningTokens !== undefined) into.reasoningTokens = from.reasoningTokens;
  if (from.audioInputTokens !== undefined) into.audioInputTokens = from.audioInputTokens;
  if (from.cachedAudioInputTokens !== undefined) into.cachedAudioInputTokens = from.cachedAudioInputTokens;
  if (from.audioOutputTokens !== undefined) into.audioOutputTokens = from.audioOutputTokens;
}
