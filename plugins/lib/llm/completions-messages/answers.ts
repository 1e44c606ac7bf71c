// OpenAI Chat Completions <-> Anthropic Messages complete (non-streamed) answers, both directions (BEHAVIOUR.md §4.6).
import { randomUUID } from 'node:crypto';
import { canonicalExtra, toolCallsOf } from '../chat-messages.ts';
import { isObj, nowSeconds, textOf } from '../json.ts';
import { addThinking, signedCallsThinking, thinkingBlocksOf } from '../thinking.ts';
import type { Obj } from '../json.ts';
import { stopReasonToFinish, completionsUsageToMessages, finishToAnthropicStop, messagesUsageToCompletions, toolUseBlock } from './mapping.ts';

// ---------------------------------------------------------------------------------------------------------------
// Messages response -> Completions response

/** An Anthropic Messages response as an OpenAI Chat Completions response. */
export function messagesResponseToCompletions(resp: Obj): Obj {
  const blocks: Obj[] = Array.isArray(resp.content) ? resp.content : [];
  let text = '';
  const toolCalls: Obj[] = [];
  for (const b of blocks) {
    if (!isObj(b)) continue;
    if (b.type === 'text' && typeof b.text === 'string') text += b.text;
    else if (b.type === 'tool_use') toolCalls.push({ id: b.id, type: 'function', function: { name: b.name, arguments: JSON.stringify(b.input ?? {}) } });
  }
  const message: Obj = { role: 'assistant', content: text || toolCalls.length === 0 ? text : null };
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  const thinking = thinkingBlocksOf(blocks);
  if (thinking.length > 0) addThinking(message, thinking);
  const out: Obj = {
    id: resp.id ?? `chatcmpl-${randomUUID()}`,
    object: 'chat.completion',
    created: nowSeconds(),
    model: resp.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: stopReasonToFinish(resp.stop_reason) ?? 'stop' }],
  };
  const usage = messagesUsageToCompletions(resp.usage);
  if (usage) out.usage = usage;
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Completions response -> Messages response

/** An OpenAI Chat Completions response as an Anthropic Messages response. */
export function completionsResponseToMessages(resp: Obj): Obj {
  const choice: Obj = Array.isArray(resp.choices) && isObj(resp.choices[0]) ? resp.choices[0] : {};
  const msg: Obj = isObj(choice.message) ? choice.message : {};
  // The provider's reasoning (Converse's, Gemini's) first, as Anthropic answers it.
  const content: Obj[] = [...(canonicalExtra(msg, 'thinking') ?? [])];
  // A refusal (structured outputs) comes instead of the text: it is what the client is told.
  const answered = textOf(msg.content);
  const refusal = !answered && typeof msg.refusal === 'string' && msg.refusal ? msg.refusal : undefined;
  const text = answered || refusal;
  if (text) content.push({ type: 'text', text });
  const calls = toolCallsOf(msg);
  // Gemini's OpenAI-compatible API signs its calls (ADR 0180): the signature rides in a thinking block, first.
  const signed = content.length === 0 ? signedCallsThinking(calls) : undefined;
  if (signed !== undefined) content.unshift(signed);
  content.push(...calls.map(toolUseBlock));
  return {
    id: resp.id ?? `msg_${randomUUID()}`,
    type: 'message',
    role: 'assistant',
    model: resp.model,
    content,
    stop_reason: refusal !== undefined ? 'refusal' : (finishToAnthropicStop(choice.finish_reason, calls.length > 0) ?? 'end_turn'),
    stop_sequence: null,
    usage: completionsUsageToMessages(resp.usage),
  };
}
