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

/** What one API's message list allows, for `checkMessageList`. */
export interface MessageListRules {
  /** What an entry is, in a refusal: `a message`, `an item`. */
  readonly entry: string;
  readonly roles: ReadonlySet<unknown>;
  /** The roles, in a refusal: `a Messages role (user, assistant)`. */
  readonly rolesText: string;
  /** Entries the list may hold that are not messages (a Responses item of another type): not checked further. */
  notMessage?(m: Obj): boolean;
  /** Messages whose content must be text or a list (all when absent). */
  needsContent?(m: Obj): boolean;
  /** The refusal of such a content, after its path: `must be a string or a list of parts`. */
  readonly contentText: string;
}

/**
 * Refuse (throw) an entry of a message list (`where`: `messages`, `input`) a translation to another API would drop,
 * or give another speaker, without a word (ADR 0186): one that is not an object, a message whose role the client's
 * API does not define, or one whose content is neither text nor a list. The client's API refuses each of them.
 */
export function checkMessageList(list: readonly unknown[], where: string, rules: MessageListRules): void {
  list.forEach((m, i) => {
    if (!isObj(m)) throw new Error(`\`${where}[${i}]\` is not ${rules.entry} object`);
    if (rules.notMessage?.(m)) return;
    if (!rules.roles.has(m.role)) throw new Error(`\`${where}[${i}].role\` \`${String(m.role).slice(0, 40)}\` is not ${rules.rolesText}`);
    if ((rules.needsContent?.(m) ?? true) && typeof m.content !== 'string' && !Array.isArray(m.content)) {
      throw new Error(`\`${where}[${i}].content\` ${rules.contentText}`);
    }
  });
}

const CHAT_ROLES: ReadonlySet<unknown> = new Set(['system', 'developer', 'user', 'assistant', 'tool', 'function']);
const CHAT_RULES: MessageListRules = {
  entry: 'a message',
  roles: CHAT_ROLES,
  rolesText: `a Chat Completions role (${[...CHAT_ROLES].join(', ')})`,
  // A user message's only: an assistant's content may be null beside its tool calls.
  needsContent: (m) => m.role === 'user',
  contentText: 'of a user message must be a string or a list of parts',
};

/** `checkMessageList` of a Chat Completions request's `messages`. */
export function checkChatMessages(body: Obj): void {
  checkMessageList(Array.isArray(body.messages) ? body.messages : [], 'messages', CHAT_RULES);
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
