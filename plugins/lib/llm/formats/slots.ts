// Text slots: the pieces of text of an LLM body that prompt guards see and may mask (BEHAVIOUR.md §2.9, §4.6).
// Every piece of text the client sent (or the model produced) becomes one slot: a role and a string, with a way to
// write a changed string back to exactly the place it came from. A message whose content is one string is one slot;
// a message whose content is a list of parts gives one slot per text part (images, tool calls and other non-text
// parts are not guarded and never changed). A request's slots are every text the model reads, whichever API the
// client speaks and whatever a translation reads (tool results, text documents, bare string parts; ADR 0159). Each
// format module says where its text is (`requestSlots`, `responseSlots`); the helpers here are what they share.
import { isObj } from '../json.ts';

export interface TextSlot {
  readonly role: string;
  /** The current text. */
  readonly text: string;
  /** Replace the text in the body. */
  set(text: string): void;
  /** The text continues the slot before it: the next text part of the same content list (the model reads one text). */
  joined?: boolean;
  /** The text is JSON (tool-call arguments, a function response): a mask must leave it JSON (ADR 0165). */
  json?: boolean;
}

type Obj = Record<string, unknown>;

/** A slot over `holder[key]` (an object field or an array index); `json` when the string is JSON text. */
export function slot(role: string, holder: Obj | unknown[], key: string | number, json?: boolean): TextSlot {
  return {
    role,
    ...(json ? { json } : {}),
    get text() {
      return (holder as Record<string | number, unknown>)[key] as string;
    },
    set(text: string) {
      const h = holder as Record<string | number, unknown>;
      if (json && text !== h[key] && isJson(h[key] as string) && !isJson(text)) throw new Error('a masked JSON text (call arguments) is no longer JSON');
      h[key] = text;
    },
  };
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** Text parts of a content list: `{type: 'text'|..., text: string}`. */
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


/**
 * The text a model reads in one part of a request's content list (ADR 0159): its `text` whatever its `type` (the
 * translators read any part carrying one), a refusal of the history, a nested `content` (an Anthropic tool result's
 * string or blocks, a search result's blocks) and a text document's `source` (`text` data or `content` blocks).
 */
function promptPartSlots(role: string, part: Obj, out: TextSlot[]): void {
  if (typeof part.text === 'string') out.push(slot(role, part, 'text'));
  // An Anthropic tool call of the history: its input is text the model reads.
  if (part.type === 'tool_use') argumentsSlot(role, part, 'input', out);
  if (typeof part.refusal === 'string') out.push(slot(role, part, 'refusal'));
  promptContentSlots(role, part, 'content', out);
  const source = part.source;
  if (!isObj(source)) return;
  if (source.type === 'text' && typeof source.data === 'string') out.push(slot(role, source, 'data'));
  else if (source.type === 'content') promptContentSlots(role, source, 'content', out);
}

/** `holder[key]` of a request: a string, or a list of parts and bare strings (which the translators take as text). */
export function promptContentSlots(role: string, holder: Obj, key: string, out: TextSlot[]): void {
  const content = holder[key];
  if (typeof content === 'string') out.push(slot(role, holder, key));
  else if (Array.isArray(content)) {
    // A text part right after another text part continues it (`joined`); anything else between them ends the text.
    let textAt = -2;
    content.forEach((part, i) => {
      const from = out.length;
      if (typeof part === 'string') out.push(slot(role, content, i));
      else if (isObj(part)) promptPartSlots(role, part, out);
      const plain = out.length === from + 1 && (typeof part === 'string' || (isObj(part) && typeof part.text === 'string'));
      if (plain && textAt === i - 1) out[from]!.joined = true;
      textAt = plain ? i : -2;
    });
  }
}

/**
 * `holder[key]`, a JSON object the model reads as text (a Gemini `functionResponse.response`, what a Chat Completions
 * tool message carries as a string; call arguments), as one slot of its JSON text. A changed text must still be a JSON
 * object.
 */
export function jsonSlot(role: string, holder: Obj, key: string): TextSlot {
  return {
    role,
    json: true,
    get text() {
      return JSON.stringify(holder[key]);
    },
    set(text: string) {
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        value = undefined;
      }
      if (!isObj(value)) throw new Error('a masked JSON text (a function response or call arguments) is no longer a JSON object');
      holder[key] = value;
    },
  };
}

/**
 * The arguments of a tool call (of a request's history, which a client may write, or of an answer; ADR 0165): a
 * string, or a JSON object as its JSON text (`jsonSlot`). Empty ones (`''`, `{}`) say nothing and are left out.
 */
export function argumentsSlot(role: string, holder: Obj, key: string, out: TextSlot[]): void {
  const value = holder[key];
  if (typeof value === 'string') {
    if (value !== '' && value !== '{}') out.push(slot(role, holder, key, true));
  } else if (isObj(value) && Object.keys(value).length > 0) out.push(jsonSlot(role, holder, key));
}

/** `messages[]` of an OpenAI Chat Completions or Anthropic Messages request, tool-call arguments included. */
export function messageListSlots(body: Obj, out: TextSlot[]): void {
  const messages = body.messages;
  if (!Array.isArray(messages)) return;
  for (const m of messages) {
    if (!isObj(m)) continue;
    const role = typeof m.role === 'string' ? m.role : 'user';
    promptContentSlots(role, m, 'content', out);
    toolCallSlots(role, m, out);
  }
}

/** The arguments of a Chat Completions message's tool calls (`tool_calls`, the older `function_call`), a custom tool's input. */
export function toolCallSlots(role: string, m: Obj, out: TextSlot[]): void {
  if (Array.isArray(m.tool_calls)) {
    for (const c of m.tool_calls) {
      if (isObj(c) && isObj(c.function)) argumentsSlot(role, c.function, 'arguments', out);
      else if (isObj(c) && isObj(c.custom)) stringSlot(role, c.custom, 'input', out);
    }
  }
  if (isObj(m.function_call)) argumentsSlot(role, m.function_call, 'arguments', out);
}

/** `holder[key]` when it is a non-empty string (a refusal, a reasoning text of an answer). */
export function stringSlot(role: string, holder: Obj, key: string, out: TextSlot[]): void {
  if (typeof holder[key] === 'string' && holder[key] !== '') out.push(slot(role, holder, key));
}
