// Reading an OpenAI Chat Completions `messages` list, shared by the translators to other providers' formats.
import { isObj, textOf } from './json.ts';
import type { Obj } from './json.ts';

/**
 * What a client's request says that Chat Completions has no member for (an Anthropic `top_k`, a `tool_result`'s
 * `is_error`), kept on the canonical body (or its tool message) under a symbol key for the wire translators whose API
 * has one (Gemini, Converse). `JSON.stringify` leaves symbol keys out, so an OpenAI-style provider, which refuses
 * members it does not know, never sees them.
 */
interface CanonicalExtras {
  topK?: number;
  toolError?: boolean;
  /**
   * An Anthropic client's `thinking.budget_tokens`, or `adaptive` (the model decides); the body also says it as a
   * `reasoning_effort`.
   */
  thinkingBudget?: number | 'adaptive';
  /**
   * Reasoning in Anthropic's shape (`thinking` with its `signature`, `redacted_thinking` with its `data`): an
   * assistant turn's of the history, an answer message's, or a stream chunk delta's pieces.
   */
  thinking?: Obj[];
}
const EXTRAS = Symbol('canonical.extras');

export function setCanonicalExtra<K extends keyof CanonicalExtras>(o: Obj, key: K, value: CanonicalExtras[K]): void {
  const holder = o as { [EXTRAS]?: CanonicalExtras };
  (holder[EXTRAS] ??= {})[key] = value;
}

export function canonicalExtra<K extends keyof CanonicalExtras>(o: Obj, key: K): CanonicalExtras[K] | undefined {
  return (o as { [EXTRAS]?: CanonicalExtras })[EXTRAS]?.[key];
}

/** What to do with each kind of message; messages of other roles (and non-objects) are skipped. */
export interface ChatMessageHandlers {
  /** A `system` or `developer` message, as its text (parts joined by newlines; may be empty). */
  system(text: string): void;
  user(m: Obj): void;
  assistant(m: Obj): void;
  tool(m: Obj): void;
  /** The legacy `function` role (tool results before `tool`); skipped unless handled. */
  function?(m: Obj): void;
}

const CHAT_ROLES: ReadonlySet<unknown> = new Set(['system', 'developer', 'user', 'assistant', 'tool', 'function']);

/**
 * Refuse (throw) a `messages` entry a translation to another API would drop without a word (ADR 0186): one that is
 * not an object, has a role Chat Completions does not define, or is a user message whose content is neither text
 * nor a list of parts. OpenAI refuses each of them; dropped, the model would answer a different conversation.
 */
export function checkChatMessages(body: Obj): void {
  const messages: unknown[] = Array.isArray(body.messages) ? body.messages : [];
  messages.forEach((m, i) => {
    if (!isObj(m)) throw new Error(`\`messages[${i}]\` is not a message object`);
    if (!CHAT_ROLES.has(m.role)) throw new Error(`\`messages[${i}].role\` \`${String(m.role).slice(0, 40)}\` is not a Chat Completions role (${[...CHAT_ROLES].join(', ')})`);
    if (m.role === 'user' && typeof m.content !== 'string' && !Array.isArray(m.content)) {
      throw new Error(`\`messages[${i}].content\` of a user message must be a string or a list of parts`);
    }
  });
}

/** Walk `body.messages` in order, handing each message to the handler for its role. */
export function walkChatMessages(body: Obj, h: ChatMessageHandlers): void {
  for (const m of Array.isArray(body.messages) ? body.messages : []) {
    if (!isObj(m)) continue;
    switch (m.role) {
      case 'system':
      case 'developer':
        h.system(textOf(m.content, '\n'));
        break;
      case 'user':
        h.user(m);
        break;
      case 'assistant':
        h.assistant(m);
        break;
      case 'tool':
        h.tool(m);
        break;
      case 'function':
        h.function?.(m);
        break;
      default:
        break;
    }
  }
}

/**
 * A request's tools and tool choice for an API without `tool_choice: {type: "allowed_tools"}`: the tools narrowed to
 * the allowed ones and the choice their mode (`auto`, `required`), so the model cannot call a tool the client did not
 * allow. Any other choice leaves both as they are.
 */
export function narrowToAllowedTools(body: Obj): { tools: unknown; choice: unknown } {
  const choice = body.tool_choice;
  if (!isObj(choice) || choice.type !== 'allowed_tools' || !isObj(choice.allowed_tools)) return { tools: body.tools, choice };
  const allowed = choice.allowed_tools;
  const names = new Set<unknown>();
  for (const t of Array.isArray(allowed.tools) ? allowed.tools : []) if (isObj(t) && isObj(t.function)) names.add(t.function.name);
  const tools = Array.isArray(body.tools) ? body.tools.filter((t: unknown) => isObj(t) && isObj(t.function) && names.has(t.function.name)) : body.tools;
  return { tools, choice: allowed.mode === 'required' ? 'required' : 'auto' };
}

/** An assistant message's `tool_calls` that are objects with a `function` object. */
export function toolCallsOf(m: Obj): Obj[] {
  return Array.isArray(m.tool_calls) ? m.tool_calls.filter((tc: unknown) => isObj(tc) && isObj(tc.function)) : [];
}

/** The URL of an `image_url` content part (`{image_url: {url}}`, or the older bare string). */
export function imageUrlOf(part: Obj): unknown {
  return isObj(part.image_url) ? part.image_url.url : part.image_url;
}

/**
 * Append a turn of `items` under `key` (`content` for Converse, `parts` for Gemini), merging it into the previous
 * turn when that has the same role (tool results of parallel calls, say). An empty turn is not added.
 */
export function appendTurn(turns: Obj[], role: string, key: 'content' | 'parts', items: Obj[]): void {
  if (items.length === 0) return;
  const last = turns[turns.length - 1];
  if (last && last.role === role) last[key].push(...items);
  else turns.push({ role, [key]: items });
}
