export type RpcId = string | number;

export interface RpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

/** A JSON-RPC 2.0 message as it travels: request, notification or response. Fields are read, rarely rebuilt. */
export interface RpcMessage {
  jsonrpc: '2.0';
  id?: RpcId | null;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: RpcErrorObject;
}

export const RpcCode = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
} as const;

export const isRequest = (m: RpcMessage): boolean => m.method !== undefined && m.id !== undefined && m.id !== null;
export const isNotification = (m: RpcMessage): boolean => m.method !== undefined && (m.id === undefined || m.id === null);
export const isResponse = (m: RpcMessage): boolean => m.method === undefined;

export function errorMessage(id: RpcId | null | undefined, code: number, message: string, data?: unknown): RpcMessage {
  const error: RpcErrorObject = { code, message };
  if (data !== undefined) error.data = data;
  return { jsonrpc: '2.0', id: id ?? null, error };
}

export function resultMessage(id: RpcId | null | undefined, result: Record<string, unknown>): RpcMessage {
  return { jsonrpc: '2.0', id: id ?? null, result };
}

/**
 * A failure the gateway answers itself: a JSON-RPC error, and the HTTP status used when it is known before the
 * response stream started (BEHAVIOUR.md §4.4: 400 for unknown or refused items, 500 for relay failures).
 */
export class RpcFailure extends Error {
  readonly code: number;
  readonly httpStatus: number;
  readonly data: unknown;

  constructor(code: number, message: string, httpStatus: number, data?: unknown) {
    super(message);
    this.name = 'RpcFailure';
    this.code = code;
    this.httpStatus = httpStatus;
    this.data = data;
  }
}

type JsonObject = Record<string, unknown>;
const RELATED_TASK_META_KEY = 'io.modelcontextprotocol/related-task';
const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
/** A request id or progress token: a string or an integer (the SDK's `z.number().int()`: a safe integer). */
const isIdLike = (v: unknown): boolean => typeof v === 'string' || Number.isSafeInteger(v);

function onlyKeys(o: JsonObject, a: string, b: string, c: string, d?: string): boolean {
  for (const k in o) if (k !== a && k !== b && k !== c && k !== d) return false;
  return true;
}

/** `_meta` of params and results: an object; `progressToken` and the related task, when present, well-formed. */
function metaOk(meta: unknown): boolean {
  if (meta === undefined) return true;
  if (!isObject(meta)) return false;
  if (meta.progressToken !== undefined && !isIdLike(meta.progressToken)) return false;
  const task = meta[RELATED_TASK_META_KEY];
  return task === undefined || (isObject(task) && typeof task.taskId === 'string');
}

/**
 * True when `value` is one valid JSON-RPC message: the SDK's `JSONRPCMessageSchema` (request, notification, result or
 * error; unknown methods pass, unknown top-level keys do not), written out rather than run through zod on every
 * message. jsonrpc.test.ts checks both agree.
 */
export function isValidMessage(value: unknown): value is RpcMessage {
  if (!isObject(value) || value.jsonrpc !== '2.0') return false;
  if ('method' in value) {
    if (typeof value.method !== 'string') return false;
    const params = value.params;
    if (params !== undefined && !(isObject(params) && metaOk(params._meta))) return false;
    if ('id' in value) return isIdLike(value.id) && onlyKeys(value, 'jsonrpc', 'id', 'method', 'params');
    return onlyKeys(value, 'jsonrpc', 'method', 'params');
  }
  if ('result' in value) {
    const result = value.result;
    return isIdLike(value.id) && isObject(result) && metaOk(result._meta) && onlyKeys(value, 'jsonrpc', 'id', 'result');
  }
  if ('error' in value) {
    const error = value.error;
    if ('id' in value && !isIdLike(value.id)) return false;
    return isObject(error) && Number.isSafeInteger(error.code) && typeof error.message === 'string' && onlyKeys(value, 'jsonrpc', 'id', 'error');
  }
  return false;
}

/**
 * What an `initialize` request's params lack of the MCP schema's `InitializeRequest` (a string `protocolVersion`, a
 * `capabilities` object, `clientInfo` with string `name` and `version`), or undefined when they have it. Checked
 * before any target starts: a malformed initialize must not spawn processes or reach targets (ADR 0186).
 */
export function initializeParamsProblem(params: unknown): string | undefined {
  if (!isObject(params)) return 'params';
  if (typeof params.protocolVersion !== 'string') return 'a string `protocolVersion`';
  if (!isObject(params.capabilities)) return 'a `capabilities` object';
  const info = params.clientInfo;
  if (!isObject(info) || typeof info.name !== 'string' || typeof info.version !== 'string') return '`clientInfo` with a string `name` and `version`';
  return undefined;
}
