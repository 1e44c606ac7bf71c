// OpenAI Chat Completions <-> Anthropic Messages: what both directions map the same way (stop reasons, usage,
// tool calls as `tool_use` blocks), BEHAVIOUR.md §4.6.
import { randomUUID } from 'node:crypto';
import { isObj, parseArguments } from '../json.ts';
import type { Obj } from '../json.ts';
import { completionsUsageFromCounts } from '../usage.ts';

// ---------------------------------------------------------------------------------------------------------------
// Stop reasons

/**
 * An Anthropic Messages or Bedrock Converse stop reason as an OpenAI finish reason (Converse uses Anthropic's names
 * and adds its guardrail ones).
 */
export function stopReasonToFinish(stop: unknown): string | null {
  switch (stop) {
    case undefined:
    case null:
      return null;
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'tool_use':
      return 'tool_calls';
    case 'refusal':
    case 'guardrail_intervened':
    case 'content_filtered':
      return 'content_filter';
    default:
      return 'stop'; // end_turn, stop_sequence, pause_turn
  }
}

/**
 * An OpenAI finish reason as an Anthropic stop reason. An answer that called tools stopped for them (`tool_use`)
 * even when it says `stop`: OpenAI does for a named `tool_choice`, Gemini's OpenAI-compatible API does in streams,
 * and an Anthropic client's tool loop goes on only on `tool_use`.
 */
export function finishToAnthropicStop(finish: unknown, calledTools = false): string | null {
  switch (finish) {
    case undefined:
    case null:
      return null;
    case 'stop':
      return calledTools ? 'tool_use' : 'end_turn';
    case 'length':
      return 'max_tokens';
    case 'tool_calls':
    case 'function_call':
      return 'tool_use';
    case 'content_filter':
      return 'refusal';
    default:
      return 'end_turn';
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Usage

/** Anthropic usage as OpenAI usage: prompt tokens include cache reads and writes. */
export function messagesUsageToCompletions(u: unknown): Obj | undefined {
  return isObj(u) ? completionsUsageFromCounts(u.input_tokens, u.output_tokens, u.cache_read_input_tokens, u.cache_creation_input_tokens) : undefined;
}

/** OpenAI usage as Anthropic usage: cached prompt tokens become `cache_read_input_tokens`. */
export function completionsUsageToMessages(u: unknown): Obj {
  if (!isObj(u)) return { input_tokens: 0, output_tokens: 0 };
  const cached = isObj(u.prompt_tokens_details) && typeof u.prompt_tokens_details.cached_tokens === 'number' ? u.prompt_tokens_details.cached_tokens : 0;
  const prompt = typeof u.prompt_tokens === 'number' ? u.prompt_tokens : 0;
  const out: Obj = { input_tokens: Math.max(0, prompt - cached), output_tokens: typeof u.completion_tokens === 'number' ? u.completion_tokens : 0 };
  if (cached) out.cache_read_input_tokens = cached;
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Tool calls

/** An OpenAI tool call as an Anthropic `tool_use` block. */
export function toolUseBlock(tc: Obj): Obj {
  return { type: 'tool_use', id: tc.id ?? `toolu_${randomUUID()}`, name: tc.function.name, input: parseArguments(tc.function.arguments) };
}

// ---------------------------------------------------------------------------------------------------------------
// Error types

/** The error types of Anthropic's API (what its SDKs' error objects name). */
const ANTHROPIC_ERROR_TYPES: ReadonlySet<string> = new Set(['invalid_request_error', 'authentication_error', 'billing_error', 'permission_error', 'not_found_error', 'request_too_large', 'rate_limit_error', 'timeout_error', 'api_error', 'overloaded_error']);

/** Anthropic's error `type` for an HTTP status. */
export function anthropicErrorType(status: number): string {
  if (status === 400) return 'invalid_request_error';
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 413) return 'request_too_large';
  if (status === 429) return 'rate_limit_error';
  if (status === 529 || status === 503) return 'overloaded_error';
  return 'api_error';
}

/**
 * The `type` an Anthropic client gets for another API's error: its own when it is one of Anthropic's, else Anthropic's
 * type for the HTTP status (clients switch on these; `ThrottlingException` or `RESOURCE_EXHAUSTED` name none), else
 * `api_error`.
 */
export function anthropicErrorTypeOf(type: unknown, status: unknown): string {
  if (typeof type === 'string' && ANTHROPIC_ERROR_TYPES.has(type)) return type;
  return typeof status === 'number' && Number.isInteger(status) && status >= 400 && status <= 599 ? anthropicErrorType(status) : 'api_error';
}
