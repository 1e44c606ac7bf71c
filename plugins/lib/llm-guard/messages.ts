import type { GuardMessage, LlmRouteType } from '../llm/contract.ts';
import { isObj } from '../llm/json.ts';

/**
 * The text of an LLM request or response as prompt guards see it, per client API format (BEHAVIOUR.md §2.9, §4.6).
 *
 * Every piece of text the client sent (or the model produced) becomes one *slot*: a role and a string, with a way to
 * write a changed string back to exactly the place it came from. A message whose content is one string is one slot;
 * a message whose content is a list of parts gives one slot per text part (images, tool calls and other non-text
 * parts are not guarded and never changed). Guards get the slots as `GuardMessage`s, in document order, and a
 * masking guard answers with the same number of messages in the same order.
 */
export interface TextSlot {
  readonly role: string;
  /** The current text. */
  readonly text: string;
  /** Replace the text in the body. */
  set(text: string): void;
}

type Obj = Record<string, unknown>;

/** A slot over `holder[key]` (an object field or an array index). */
function slot(role: string, holder: Obj | unknown[], key: string | number): TextSlot {
  return {
    role,
    get text() {
      return (holder as Record<string | number, unknown>)[key] as string;
    },
    set(text: string) {
      (holder as Record<string | number, unknown>)[key] = text;
    },
  };
}

/** Text parts of a content list: `{type: 'text'|…, text: string}`. */
function partSlots(role: string, parts: unknown[], types: ReadonlySet<string>, out: TextSlot[]): void {
  for (const part of parts) {
    if (!isObj(part) || typeof part.text !== 'string') continue;
    if (part.type !== undefined && !types.has(String(part.type))) continue;
    out.push(slot(role, part, 'text'));
  }
}

/** `content` of a message: a string, or a list of parts. */
function contentSlots(role: string, message: Obj, types: ReadonlySet<string>, out: TextSlot[]): void {
  const content = message.content;
  if (typeof content === 'string') out.push(slot(role, message, 'content'));
  else if (Array.isArray(content)) partSlots(role, content, types, out);
}

const CHAT_PARTS = new Set(['text']);
const RESPONSES_PARTS = new Set(['input_text', 'output_text', 'text']);

/** `messages[]` of an OpenAI Chat Completions or Anthropic Messages request. */
function messageListSlots(body: Obj, out: TextSlot[]): void {
  const messages = body.messages;
  if (!Array.isArray(messages)) return;
  for (const m of messages) {
    if (!isObj(m)) continue;
    contentSlots(typeof m.role === 'string' ? m.role : 'user', m, CHAT_PARTS, out);
  }
}

/** Anthropic's top-level `system`: a string or a list of text blocks. */
function systemSlots(body: Obj, out: TextSlot[]): void {
  const system = body.system;
  if (typeof system === 'string') out.push(slot('system', body, 'system'));
  else if (Array.isArray(system)) partSlots('system', system, CHAT_PARTS, out);
}

/** OpenAI Responses: `instructions`, then `input` (a string, or a list of items). */
function responsesRequestSlots(body: Obj, out: TextSlot[]): void {
  if (typeof body.instructions === 'string') out.push(slot('system', body, 'instructions'));
  const input = body.input;
  if (typeof input === 'string') out.push(slot('user', body, 'input'));
  else if (Array.isArray(input)) {
    for (const item of input) {
      if (!isObj(item) || (item.type !== undefined && item.type !== 'message') || typeof item.role !== 'string') continue;
      contentSlots(item.role, item, RESPONSES_PARTS, out);
    }
  }
}

/** OpenAI Embeddings: `input`, a string or a list of strings (token arrays are not text). */
function embeddingsSlots(body: Obj, out: TextSlot[]): void {
  const input = body.input;
  if (typeof input === 'string') out.push(slot('user', body, 'input'));
  else if (Array.isArray(input)) input.forEach((v, i) => typeof v === 'string' && out.push(slot('user', input, i)));
}

/** A Gemini `Content` (`{role, parts: [{text}, …]}`): its text parts; the model's role is `assistant` to guards. */
function geminiContentSlots(content: unknown, fallbackRole: string, out: TextSlot[]): void {
  if (!isObj(content) || !Array.isArray(content.parts)) return;
  const role = content.role === 'model' ? 'assistant' : typeof content.role === 'string' ? content.role : fallbackRole;
  partSlots(role, content.parts, CHAT_PARTS, out);
}

/** Gemini `generateContent`: `systemInstruction` (or `system_instruction`), then `contents[]`. */
function geminiRequestSlots(body: Obj, out: TextSlot[]): void {
  geminiContentSlots(body.systemInstruction ?? body.system_instruction, 'system', out);
  if (Array.isArray(body.contents)) for (const c of body.contents) geminiContentSlots(c, 'user', out);
}

/** The guarded text of a request body in the client's format. Formats without prompt text give none. */
export function requestSlots(format: LlmRouteType, body: Record<string, unknown>): TextSlot[] {
  const out: TextSlot[] = [];
  switch (format) {
    case 'completions':
      messageListSlots(body, out);
      break;
    case 'messages':
    case 'anthropicTokenCount':
      systemSlots(body, out);
      messageListSlots(body, out);
      break;
    case 'responses':
      responsesRequestSlots(body, out);
      break;
    case 'embeddings':
      embeddingsSlots(body, out);
      break;
    case 'generateContent':
      geminiRequestSlots(body, out);
      break;
    case 'detect':
      // The format is told from the body: each API's prompt fields are distinct.
      systemSlots(body, out);
      messageListSlots(body, out);
      if (!Array.isArray(body.messages)) responsesRequestSlots(body, out);
      break;
    default:
      break;
  }
  return out;
}

/** The guarded text of a complete (non-streamed) response body in the client's format. */
export function responseSlots(format: LlmRouteType, body: Record<string, unknown>): TextSlot[] {
  const out: TextSlot[] = [];
  const completions = (): void => {
    if (!Array.isArray(body.choices)) return;
    for (const c of body.choices) {
      if (!isObj(c) || !isObj(c.message)) continue;
      contentSlots(typeof c.message.role === 'string' ? c.message.role : 'assistant', c.message, CHAT_PARTS, out);
    }
  };
  const messages = (): void => {
    if (Array.isArray(body.content)) partSlots(typeof body.role === 'string' ? body.role : 'assistant', body.content, CHAT_PARTS, out);
  };
  const responses = (): void => {
    if (!Array.isArray(body.output)) return;
    for (const item of body.output) {
      if (!isObj(item) || item.type !== 'message') continue;
      contentSlots(typeof item.role === 'string' ? item.role : 'assistant', item, RESPONSES_PARTS, out);
    }
  };
  switch (format) {
    case 'completions':
      completions();
      break;
    case 'messages':
      messages();
      break;
    case 'responses':
      responses();
      break;
    case 'generateContent':
      if (Array.isArray(body.candidates)) for (const c of body.candidates) if (isObj(c)) geminiContentSlots(c.content, 'assistant', out);
      break;
    case 'detect':
      if (Array.isArray(body.choices)) completions();
      else if (Array.isArray(body.content)) messages();
      else responses();
      break;
    default:
      break;
  }
  return out;
}

/** The slots as guards see them. */
export function guardMessages(slots: readonly TextSlot[]): GuardMessage[] {
  return slots.map((s) => ({ role: s.role, content: s.text }));
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
