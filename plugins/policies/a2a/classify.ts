// What an A2A request is, decided from its method, path and (for JSON-RPC) body.
import { boundedName } from '../../lib/telemetry/known-names.ts';

/** The well-known agent-card file names: `agent-card.json` since A2A v0.3, `agent.json` before. */
const CARD_FILES: ReadonlySet<string> = new Set(['agent-card.json', 'agent.json']);
const WELL_KNOWN = '.well-known';

/**
 * A path segment with its unreserved escapes decoded (`%2e` is `.`), as the gateway reads the path it routes: the
 * client's own spelling (`originalUrl`) may still have them. Other escapes stay, their hex in upper case.
 */
export function plainSegment(segment: string): string {
  if (!segment.includes('%')) return segment;
  return segment.replace(/%([0-9a-fA-F]{2})/g, (_escape, hex: string) => {
    const c = String.fromCharCode(parseInt(hex, 16));
    return /[A-Za-z0-9._~-]/.test(c) ? c : `%${hex.toUpperCase()}`;
  });
}

/**
 * A path segment as an agent's server may read it: unreserved escapes decoded (uvicorn decodes the path), `;`
 * parameters dropped (Tomcat, Jetty), without case (Express). Undefined for a segment the card cannot be (an escape
 * that is not unreserved, `%2F` among them).
 */
function cardSegment(segment: string): string | undefined {
  const semi = segment.indexOf(';');
  const s = plainSegment(semi === -1 ? segment : segment.slice(0, semi)).toLowerCase();
  return s.includes('%') ? undefined : s;
}

/**
 * The path of the agent an agent-card path describes (the path before the well-known segments), or undefined. Matched
 * as the servers agents run on may read a path, so a spelling the agent answers with its card cannot fetch it past
 * the rewrite: without case, past repeated and trailing slashes, unreserved escapes decoded, `;` parameters and a
 * file name's trailing dots dropped (IIS).
 */
export function agentCardBase(path: string): string | undefined {
  let end = path.length;
  while (end > 0 && path.charCodeAt(end - 1) === 47 /* / */) end--;
  const fileStart = path.lastIndexOf('/', end - 1);
  if (fileStart === -1) return undefined;
  const file = cardSegment(path.slice(fileStart + 1, end))?.replace(/\.+$/, '');
  if (file === undefined || !CARD_FILES.has(file)) return undefined;
  let dirEnd = fileStart;
  while (dirEnd > 0 && path.charCodeAt(dirEnd - 1) === 47) dirEnd--;
  const dirStart = path.lastIndexOf('/', dirEnd - 1);
  if (dirStart === -1 || cardSegment(path.slice(dirStart + 1, dirEnd)) !== WELL_KNOWN) return undefined;
  let base = dirStart;
  while (base > 0 && path.charCodeAt(base - 1) === 47) base--;
  return path.slice(0, base);
}

function mediaType(contentType: unknown): string {
  const value = Array.isArray(contentType) ? contentType[0] : contentType;
  if (typeof value !== 'string') return '';
  const semi = value.indexOf(';');
  return (semi === -1 ? value : value.slice(0, semi)).trim().toLowerCase();
}

/** `application/json`, or any `+json` type (`application/a2a+json` of the REST binding). */
export function isJsonType(contentType: unknown): boolean {
  const type = mediaType(contentType);
  return type === 'application/json' || type.endsWith('+json');
}

export function isEventStream(contentType: unknown): boolean {
  return mediaType(contentType) === 'text/event-stream';
}

/**
 * The canonical A2A method of an HTTP+JSON (REST) call, from the HTTP method and the last path segments (A2A v1.0
 * §11.3). Trailing segments only, because the agent may live under any prefix (`/agents/x/tasks/{id}`); ids are
 * opaque. Undefined when the request is no REST operation.
 */
export function restMethod(method: string, path: string): string | undefined {
  // Without case, as the agent's router may match (Express does): ids are never read, only recognised keywords.
  const segments = path.toLowerCase().split('/').filter((s) => s !== '');
  const n = segments.length;
  if (n === 0) return undefined;
  const last = segments[n - 1]!;
  const back = (i: number): string | undefined => segments[n - 1 - i];
  if (method === 'POST') {
    const colon = last.lastIndexOf(':');
    if (colon !== -1) {
      const noun = last.slice(0, colon);
      const verb = last.slice(colon + 1);
      if (noun === 'message' && verb === 'send') return 'SendMessage';
      if (noun === 'message' && verb === 'stream') return 'SendStreamingMessage';
      if (back(1) === 'tasks' && verb === 'cancel') return 'CancelTask';
      if (back(1) === 'tasks' && verb === 'subscribe') return 'SubscribeToTask';
      return undefined;
    }
    if (last === 'stream' && back(1) === 'message') return 'SendStreamingMessage';
    if (last === 'pushnotificationconfigs' && back(2) === 'tasks') return 'CreateTaskPushNotificationConfig';
    return undefined;
  }
  if (method === 'GET') {
    if (last === 'extendedagentcard') return 'GetExtendedAgentCard';
    if (last === 'pushnotificationconfigs' && back(2) === 'tasks') return 'ListTaskPushNotificationConfigs';
    if (back(1) === 'pushnotificationconfigs' && back(3) === 'tasks') return 'GetTaskPushNotificationConfig';
    // v1.0 subscribes with GET; any other colon is part of the task id.
    if (back(1) === 'tasks') return last.endsWith(':subscribe') && last.length > 10 ? 'SubscribeToTask' : 'GetTask';
    // v0.3 REST, and the a2a Python SDK's GET of it: the authenticated extended card.
    if ((last === 'card' && back(1) === 'v1') || (last === 'authenticatedextendedcard' && back(1) === 'agent')) return 'GetExtendedAgentCard';
    if (last === 'tasks') return 'ListTasks';
    return undefined;
  }
  if (method === 'DELETE' && back(1) === 'pushnotificationconfigs' && back(3) === 'tasks') return 'DeleteTaskPushNotificationConfig';
  return undefined;
}

/** What a JSON-RPC request body says about the call, for its span (ADR 0055). */
export interface JsonRpcCall {
  readonly method: string;
  /** The request id, as a string. */
  readonly id?: string;
  /** `params.message.contextId` (a message send), or `params.contextId`. */
  readonly contextId?: string;
  /** `params.id` (`tasks/get`, `tasks/cancel`, v0.3), `params.name` (`tasks/{id}`, v1.0) or `params.message.taskId`. */
  readonly taskId?: string;
}

/**
 * A method, id or state read from a body: a non-empty string of at most known-names' MAX_NAME characters, else
 * undefined. A2A names are far shorter; a longer value is ignored, so a client (or an agent) cannot make the access
 * log line or the span grow with the body.
 */
export function shortText(v: unknown): string | undefined {
  return v === '' ? undefined : boundedName(v);
}

/** The JSON-RPC call of a request body, or undefined when the body is no JSON object with a string method. */
export function jsonRpcCall(body: Buffer): JsonRpcCall | undefined {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const v = value as { method?: unknown; id?: unknown; params?: unknown };
  const method = shortText(v.method);
  if (method === undefined) return undefined;
  const id = typeof v.id === 'number' ? String(v.id) : shortText(v.id);
  const params = typeof v.params === 'object' && v.params !== null ? (v.params as Record<string, unknown>) : undefined;
  const message = typeof params?.message === 'object' && params.message !== null ? (params.message as Record<string, unknown>) : undefined;
  const name = shortText(params?.name);
  const taskId = shortText(params?.id) ?? (name?.startsWith('tasks/') ? name.slice(6).split('/')[0] : undefined) ?? shortText(message?.taskId);
  return { method, id, contextId: shortText(message?.contextId) ?? shortText(params?.contextId), taskId };
}

/** The JSON-RPC `method` of a request body, or undefined when the body is no JSON object with a string method. */
export function jsonRpcMethod(body: Buffer): string | undefined {
  return jsonRpcCall(body)?.method;
}
