import type { GuardMessage, LlmRouteType } from '../llm/contract.ts';
import { formatOf } from '../llm/formats/index.ts';
import { completions } from '../llm/formats/completions.ts';
import { messages, messagesRequestSlots } from '../llm/formats/messages.ts';
import { responses, responsesRequestSlots } from '../llm/formats/responses.ts';
import type { TextSlot } from '../llm/formats/slots.ts';
import { toolDefinitionSlots } from './tool-definitions.ts';

export type { TextSlot } from '../llm/formats/slots.ts';

/**
 * The text of an LLM request or response as prompt guards see it, per client API format (BEHAVIOUR.md §2.9, §4.6):
 * each format module says where its text is (plugins/lib/llm/formats, `requestSlots`/`responseSlots`; the slot
 * helpers are in formats/slots.ts). Guards get the slots as `GuardMessage`s, in document order, and a masking guard
 * answers with the same number of messages in the same order.
 */

/**
 * The guarded text of a request body in the client's format, then its tool definitions (names, descriptions,
 * parameter schemas; ADR 0181). Formats without prompt text give none.
 */
export function requestSlots(format: LlmRouteType, body: Record<string, unknown>): TextSlot[] {
  const out: TextSlot[] = [];
  if (format === 'detect') {
    // The format is told from the body: each API's prompt fields are distinct.
    messagesRequestSlots(body, out);
    if (!Array.isArray(body.messages)) responsesRequestSlots(body, out);
  } else formatOf(format)?.requestSlots?.(body, out);
  if (format !== 'embeddings') toolDefinitionSlots(body, out);
  return out;
}

/** The guarded text of a complete (non-streamed) response body in the client's format. */
export function responseSlots(format: LlmRouteType, body: Record<string, unknown>): TextSlot[] {
  const out: TextSlot[] = [];
  if (format === 'detect') {
    const f = Array.isArray(body.choices) ? completions : Array.isArray(body.content) ? messages : responses;
    f.responseSlots!(body, out);
  } else formatOf(format)?.responseSlots?.(body, out);
  return out;
}

/** The slots as guards see them. */
export function guardMessages(slots: readonly TextSlot[]): GuardMessage[] {
  return slots.map((s) => {
    const m: GuardMessage = { role: s.role, content: s.text };
    if (s.joined) m.joined = true;
    if (s.json) m.json = true;
    return m;
  });
}

/**
 * Write a masking guard's messages back. Throws when the guard answered with another number of messages, or with a
 * content that is not a string (the body is then left as it was).
 */
export function writeBack(slots: readonly TextSlot[], messages: readonly GuardMessage[]): void {
  if (messages.length !== slots.length) throw new Error(`the guard returned ${messages.length} messages for ${slots.length}`);
  messages.forEach((m, i) => {
    if (typeof m?.content !== 'string') throw new Error(`message ${i} of the guard's answer has no text content`);
  });
  slots.forEach((s, i) => {
    const text = messages[i]!.content;
    if (text !== s.text) s.set(text);
  });
}
