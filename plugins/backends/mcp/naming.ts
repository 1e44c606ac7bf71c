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
