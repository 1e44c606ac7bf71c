import { createHash } from 'node:crypto';

/**
 * Client-visible names when several targets share one MCP endpoint (BEHAVIOUR.md DECIDED 14): tools and prompts
 * are `<target>_<name>` (split back at the first `_`), resource URIs and task ids `<target>+<value>` (split at the
 * first `+`). Target names cannot contain either separator, so the split is unambiguous.
 */
export const NAME_SEPARATOR = '_';
export const URI_SEPARATOR = '+';

export interface Split {
  readonly target: string;
  readonly rest: string;
}

export function splitName(value: string): Split | undefined {
  const i = value.indexOf(NAME_SEPARATOR);
  return i <= 0 ? undefined : { target: value.slice(0, i), rest: value.slice(i + 1) };
}

export function splitUri(value: string): Split | undefined {
  const i = value.indexOf(URI_SEPARATOR);
  return i <= 0 ? undefined : { target: value.slice(0, i), rest: value.slice(i + 1) };
}

export const prefixName = (target: string, name: string): string => `${target}${NAME_SEPARATOR}${name}`;

/**
 * The tool names LLM APIs take (OpenAI's function names, Anthropic's tool names): ASCII letters, digits, `_`, `-`, at
 * most 64 characters. MCP allows more (`.`, `/`, 128 characters) and so do target names (DNS-label style, 253), but a
 * client that hands the gateway's list to a model has its whole request refused for one name outside it.
 */
export const LLM_TOOL_NAME_CHARACTERS = /^[a-zA-Z0-9_-]*$/;
export const LLM_TOOL_NAME_MAX = 64;
/** Whether `name` is a tool name LLM APIs take. */
export const llmsTakeToolName = (name: string): boolean => name.length <= LLM_TOOL_NAME_MAX && LLM_TOOL_NAME_CHARACTERS.test(name);

/** Hex digits of the hash that ends a shortened tool name (32 bits: names sharing their first 55 characters). */
const HASH_DIGITS = 8;
const SHORTENED_END = new RegExp(`-[0-9a-f]{${HASH_DIGITS}}$`);
/** Where the kept part of a shortened prefixed name ends. */
const KEPT = LLM_TOOL_NAME_MAX - 1 - HASH_DIGITS;

/**
 * `<target>_<name>` made to fit the 64 characters LLM APIs take (ADR 0182): a longer one keeps its first 55 characters
 * and ends `-<8 hex digits of the SHA-256 of name>`, the same on every replica and after every restart. Unchanged
 * when it fits, or when the target's own name leaves no room for the hash (ADR 0143 warns of that name at load).
 */
export function fittedToolName(target: string, name: string): string {
  const full = prefixName(target, name);
  if (full.length <= LLM_TOOL_NAME_MAX || target.length + NAME_SEPARATOR.length >= KEPT) return full;
  return `${full.slice(0, KEPT)}-${createHash('sha256').update(name).digest('hex').slice(0, HASH_DIGITS)}`;
}

/** Whether `rest`, the part of a client's tool name after `<target>_`, has the shape of a shortened name. */
export const mayBeShortened = (target: string, rest: string): boolean => target.length + NAME_SEPARATOR.length + rest.length === LLM_TOOL_NAME_MAX && SHORTENED_END.test(rest);

/** How often a call of a shortened name this process has not seen may list the target's tools again to find it. */
const RELIST_EVERY_MS = 10_000;

/**
 * The target's tool names a shortened name stands for (the part after `<target>_` of each), learnt from its lists.
 * Bounded: past `max` it starts again, and a call that misses lists the target's tools again (at most every 10 s:
 * made-up names of that shape must not each cost the target a full list).
 */
export class ShortenedNames {
  private readonly names = new Map<string, string>();
  private readonly max: number;
  private relisted = -Infinity;

  constructor(max: number) {
    this.max = max;
  }

  /** Whether a missed name may list the target's tools now (and counts that it does). */
  relistDue(): boolean {
    const now = performance.now();
    if (now - this.relisted < RELIST_EVERY_MS) return false;
    this.relisted = now;
    return true;
  }

  note(shortened: string, name: string): void {
    if (this.names.size >= this.max && !this.names.has(shortened)) this.names.clear();
    this.names.set(shortened, name);
  }

  get(shortened: string): string | undefined {
    return this.names.get(shortened);
  }
}

/** How long a suggested target name is at most, leaving the tools themselves most of the 64 characters. */
const SUGGESTED_TARGET_MAX = 24;

/**
 * Why every `<target>_<name>` of target `target` would be refused by LLM APIs, with a name that would not be (ADR 0143),
 * or undefined. Only what the target's name causes: a tool's own name is its server's.
 */
export function prefixRefusedByLlms(target: string): string | undefined {
  const badCharacters = !LLM_TOOL_NAME_CHARACTERS.test(target);
  // The shortest prefixed name: the target, the separator and one character.
  const tooLong = target.length + NAME_SEPARATOR.length + 1 > LLM_TOOL_NAME_MAX;
  if (!badCharacters && !tooLong) return undefined;
  const why = [
    badCharacters ? 'has characters LLM APIs refuse in tool names (OpenAI and Anthropic take ASCII letters, digits, `_` and `-`)' : undefined,
    tooLong ? `is ${target.length} characters long, so every tool name is over the ${LLM_TOOL_NAME_MAX} characters LLM APIs take` : undefined,
  ].filter((w) => w !== undefined);
  let suggestion = target.replace(/[^a-zA-Z0-9-]+/g, '-');
  if (tooLong) suggestion = suggestion.slice(0, SUGGESTED_TARGET_MAX).replace(/-+$/, '');
  return (
    `target name \`${target}\` ${why.join(' and ')}: its tools and prompts are listed as \`${target}${NAME_SEPARATOR}<name>\` when several targets share the route, ` +
    `and a client that gives the list to a model has every request refused; did you mean \`${suggestion}\`?`
  );
}
export const prefixUri = (target: string, uri: string): string => `${target}${URI_SEPARATOR}${uri}`;

/**
 * Ids of server-to-client requests when multiplexing: they must say which target asked, so the client's response
 * can go back, and be decodable by any replica (a resumed session), hence self-describing.
 */
export function encodeServerRequestId(target: string, id: string | number): string {
  return `swy:${target}:${typeof id === 'number' ? 'n' : 's'}:${id}`;
}

const SERVER_REQUEST_ID = /^swy:([^:]+):([ns]):(.*)$/s;

export function decodeServerRequestId(id: string | number): { target: string; id: string | number } | undefined {
  if (typeof id !== 'string') return undefined;
  const m = SERVER_REQUEST_ID.exec(id);
  if (!m) return undefined;
  return { target: m[1]!, id: m[2] === 'n' ? Number(m[3]) : m[3]! };
}

type Json = Record<string, unknown>;

/** Prefix the URIs of resource links and embedded resources in tool results and prompt messages. */
function prefixContent(target: string, content: unknown): void {
  if (!Array.isArray(content)) return;
  for (const item of content as Json[]) {
    if (!item || typeof item !== 'object') continue;
    if (item.type === 'resource_link' && typeof item.uri === 'string') item.uri = prefixUri(target, item.uri);
    else if (item.type === 'resource' && item.resource && typeof (item.resource as Json).uri === 'string') {
      (item.resource as Json).uri = prefixUri(target, (item.resource as Json).uri as string);
    }
  }
}

/** Rewrite a result coming back from `target` so every URI or task id in it routes back to that target. */
export function prefixResult(target: string, method: string, result: Json | undefined): void {
  if (!result) return;
  switch (method) {
    case 'tools/call':
      prefixContent(target, result.content);
      break;
    case 'prompts/get':
      if (Array.isArray(result.messages)) for (const m of result.messages as Json[]) prefixContent(target, [m?.content]);
      break;
    case 'resources/read':
      if (Array.isArray(result.contents)) {
        for (const c of result.contents as Json[]) if (c && typeof c.uri === 'string') c.uri = prefixUri(target, c.uri);
      }
      break;
  }
  const task = result.task as Json | undefined;
  if (task && typeof task.taskId === 'string') task.taskId = prefixUri(target, task.taskId);
  if (method.startsWith('tasks/') && typeof result.taskId === 'string') result.taskId = prefixUri(target, result.taskId);
}
