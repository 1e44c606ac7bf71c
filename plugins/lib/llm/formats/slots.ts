// Text slots: the pieces of text of an LLM body that prompt guards see and may mask (BEHAVIOUR.md §2.9, §4.6).
// Every piece of text the client sent (or the model produced) becomes one slot: a role and a string, with a way to
// write a changed string back to exactly the place it came from. A message whose content is one string is one slot;
// a message whose content is a list of parts gives one slot per text part (images, tool calls and other non-text
// parts are not guarded and never changed). Each format module says where its text is (`requestSlots`,
// `responseSlots`); the helpers here are what they share.
import { isObj } from '../json.ts';

export interface TextSlot {
  readonly role: string;
  /** The current text. */
  readonly text: string;
  /** Replace the text in the body. */
  set(text: string): void;
}

type Obj = Record<string, unknown>;

/** A slot over `holder[key]` (an object field or an array index). */
export function slot(role: string, holder: Obj | unknown[], key: string | number): TextSlot {
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
export function partSlots(role: string, parts: unknown[], types: ReadonlySet<string>, out: TextSlot[]): void {
  for (const part of parts) {
    if (!isObj(part) || typeof part.text !== 'string') continue;
    if (part.type !== undefined && !types.has(String(part.type))) continue;
    out.push(slot(role, part, 'text'));
  }
}

/** `content` of a message: a string, or a list of parts. */
export function contentSlots(role: string, message: Obj, types: ReadonlySet<string>, out: TextSlot[]): void {
  const content = message.content;
  if (typeof content === 'string') out.push(slot(role, message, 'content'));
  else if (Array.isArray(content)) partSlots(role, content, types, out);
}

export const CHAT_PARTS = new Set(['text']);
export const RESPONSES_PARTS = new Set(['input_text', 'output_text', 'text']);


/** `messages[]` of an OpenAI Chat Completions or Anthropic Messages request. */
export function messageListSlots(body: Obj, out: TextSlot[]): void {
  const messages = body.messages;
  if (!Array.isArray(messages)) return;
  for (const m of messages) {
    if (!isObj(m)) continue;
    contentSlots(typeof m.role === 'string' ? m.role : 'user', m, CHAT_PARTS, out);
  }
}
