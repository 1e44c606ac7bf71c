// Extended thinking across APIs (ADR 0167): an Anthropic client's token budget, an OpenAI client's effort, and the
// reasoning blocks of answers and histories, carried beside the canonical body (`canonicalExtra(..., 'thinking')`).
import { canonicalExtra, setCanonicalExtra } from './chat-messages.ts';
import { isObj } from './json.ts';
import type { Obj } from './json.ts';

/** Anthropic's smallest thinking budget. */
export const MIN_THINKING_BUDGET = 1024;

/** The budget an effort asks for (Anthropic's minimum for `minimal`); `none` asks for no thinking. */
const EFFORT_BUDGET: Readonly<Record<string, number>> = { minimal: 1024, low: 2048, medium: 8192, high: 16384, xhigh: 32768 };

/** A budget as an OpenAI effort: below 4096 `low`, below 16384 `medium`, else `high` (each effort's budget maps back). */
export function effortOfBudget(budget: number): string {
  return budget < 4096 ? 'low' : budget < 16384 ? 'medium' : 'high';
}

/**
 * The thinking budget a canonical request asks for: an Anthropic client's own, else its `reasoning_effort`'s bucket,
 * kept below `max` (the request's output limit, which the thinking counts against). Undefined: no thinking asked.
 * An effort whose budget cannot fit beside an answer under `max` is refused (the model could not think).
 */
export function thinkingBudgetOf(body: Obj, max: unknown): number | 'adaptive' | undefined {
  const own = canonicalExtra(body, 'thinkingBudget');
  if (own !== undefined) return own;
  const effort = body.reasoning_effort;
  if (typeof effort !== 'string' || !Object.hasOwn(EFFORT_BUDGET, effort) || continuesCallsWithoutThinking(body)) return undefined;
  const budget = EFFORT_BUDGET[effort]!;
  if (typeof max !== 'number') return budget;
  if (max <= MIN_THINKING_BUDGET) throw new Error(`\`reasoning_effort\` needs \`max_tokens\` above ${MIN_THINKING_BUDGET} (the thinking budget counts against it)`);
  return Math.min(budget, max - 1);
}

/**
 * The request continues a tool loop whose calls came without thinking blocks (an OpenAI client keeps none): Claude
 * refuses thinking there (the turn must start with its thinking), so the effort asks for none until the next turn.
 */
function continuesCallsWithoutThinking(body: Obj): boolean {
  const messages: unknown[] = Array.isArray(body.messages) ? body.messages : [];
  let i = messages.length - 1;
  while (i >= 0 && isObj(messages[i]) && (messages[i] as Obj).role === 'tool') i--;
  const m = messages[i];
  return i < messages.length - 1 && isObj(m) && m.role === 'assistant' && Array.isArray(m.tool_calls) && m.tool_calls.length > 0 && canonicalExtra(m, 'thinking') === undefined;
}

/** The Anthropic `thinking` / `redacted_thinking` blocks of a content list, as they are (signatures kept). */
export function thinkingBlocksOf(blocks: readonly unknown[]): Obj[] {
  return blocks.filter((b): b is Obj => isObj(b) && ((b.type === 'thinking' && typeof b.thinking === 'string') || (b.type === 'redacted_thinking' && typeof b.data === 'string')));
}

/** Anthropic's `output_config.effort` as an OpenAI effort (`max` is OpenAI's `high`). */
const ANTHROPIC_EFFORT: Readonly<Record<string, string>> = { low: 'low', medium: 'medium', high: 'high', max: 'high' };

/**
 * An Anthropic client's thinking: its budget (refused as Anthropic refuses it when it leaves no room for the
 * answer) or `adaptive`, with the OpenAI effort it is (a budget's bucket; adaptive's `output_config.effort`, else
 * `medium`). Undefined when it asks for none.
 */
export function anthropicThinking(body: Obj): { budget: number | 'adaptive'; effort: string } | undefined {
  const t = body.thinking;
  if (!isObj(t)) return undefined;
  if (t.type === 'adaptive') {
    const asked: unknown = isObj(body.output_config) ? body.output_config.effort : undefined;
    return { budget: 'adaptive', effort: typeof asked === 'string' && Object.hasOwn(ANTHROPIC_EFFORT, asked) ? ANTHROPIC_EFFORT[asked]! : 'medium' };
  }
  if (t.type !== 'enabled' || typeof t.budget_tokens !== 'number') return undefined;
  if (typeof body.max_tokens === 'number' && t.budget_tokens >= body.max_tokens) throw new Error('`thinking.budget_tokens` must be less than `max_tokens`');
  return { budget: t.budget_tokens, effort: effortOfBudget(t.budget_tokens) };
}

/**
 * A provider's reasoning on a canonical answer message or chunk delta: the Anthropic blocks (or pieces) beside it for
 * an Anthropic client, and the text as `reasoning_content` (DeepSeek's and vLLM's member) for an OpenAI client.
 */
export function addThinking(target: Obj, pieces: Obj[]): void {
  setCanonicalExtra(target, 'thinking', pieces);
  const text = pieces.map((p) => (typeof p.thinking === 'string' ? p.thinking : '')).join('');
  if (text) target.reasoning_content = text;
}

/** `tool_calls[].extra_content.google.thought_signature`: Gemini's signature kept by clients across turns. */
export function thoughtSignatureOf(toolCall: Obj): string | undefined {
  const sig = isObj(toolCall.extra_content) && isObj(toolCall.extra_content.google) ? toolCall.extra_content.google.thought_signature : undefined;
  return typeof sig === 'string' && sig ? sig : undefined;
}

/** The signature of an assistant turn's thinking blocks (the last one given), as an Anthropic client sends them back. */
export function signatureOfThinking(m: Obj): string | undefined {
  let sig: string | undefined;
  for (const b of canonicalExtra(m, 'thinking') ?? []) if (typeof b.signature === 'string' && b.signature) sig = b.signature;
  return sig;
}

/**
 * The signature of an answer's calls from Gemini's OpenAI-compatible API (ADR 0180) as an Anthropic thinking block,
 * as a native answer's turn signature is (ADR 0167); undefined when no call is signed.
 */
export function signedCallsThinking(calls: readonly Obj[]): Obj | undefined {
  for (const c of calls) {
    const signature = thoughtSignatureOf(c);
    if (signature !== undefined) return { type: 'thinking', thinking: '', signature };
  }
  return undefined;
}
