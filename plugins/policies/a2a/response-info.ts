/** What an A2A response says, for the access log (BEHAVIOUR.md §4.5, §6.1 field names). */
import { shortText as str } from './classify.ts';

export interface ResponseInfo {
  readonly outcome: 'success' | 'error' | 'unknown';
  readonly errorCode?: number;
  /** The A2A error's `google.rpc.ErrorInfo` reason (`TASK_NOT_FOUND`): the same whichever binding answered. */
  readonly errorReason?: string;
  /** `task`, `message`, `status-update`, `artifact-update`. */
  readonly resultKind?: string;
  /** As the agent wrote it: `completed` (v0.3) or `TASK_STATE_COMPLETED` (v1.0). */
  readonly taskState?: string;
  readonly contextId?: string;
  /** The task the result belongs to (its `id` for a task, `taskId` otherwise); on the span, not in the log. */
  readonly taskId?: string;
}

type Json = Record<string, unknown>;

function obj(value: unknown): Json | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : undefined;
}

/** A2A v1.0 wraps the result in a one-of (`{task}`, `{message}`, ...) without `kind`; v0.3 puts `kind` on the result. */
const PAYLOADS: readonly (readonly [string, string])[] = [
  ['task', 'task'],
  ['message', 'message'],
  ['statusUpdate', 'status-update'],
  ['artifactUpdate', 'artifact-update'],
];

function fromResult(result: Json): Omit<ResponseInfo, 'outcome'> {
  let payload: Json = result;
  let kind = str(result.kind);
  if (kind === undefined) {
    for (const [field, name] of PAYLOADS) {
      const inner = obj(result[field]);
      if (inner) {
        payload = inner;
        kind = name;
        break;
      }
    }
  }
  const taskId = str(kind === 'task' ? payload.id : payload.taskId);
  return { resultKind: kind, taskState: str(obj(payload.status)?.state), contextId: str(payload.contextId), taskId };
}

/** The `reason` of the first `google.rpc.ErrorInfo` in a list of error details. */
function errorInfoReason(details: unknown): string | undefined {
  if (!Array.isArray(details)) return undefined;
  for (const entry of details) {
    const detail = obj(entry);
    const type = detail?.['@type'];
    if (typeof type === 'string' && type.endsWith('google.rpc.ErrorInfo')) return str(detail!.reason);
  }
  return undefined;
}

/**
 * Read a response body: a JSON-RPC envelope (`result` / `error`), or a bare HTTP+JSON (REST) result. `ok` is
 * whether the HTTP status was 2xx, which decides a REST body's outcome.
 */
export function responseInfo(value: unknown, ok: boolean): ResponseInfo {
  const body = obj(value);
  if (!body) return { outcome: 'unknown' };
  const error = obj(body.error);
  if (error) {
    const code = error.code;
    const errorCode = typeof code === 'number' && Number.isInteger(code) ? code : undefined;
    // JSON-RPC carries the ErrorInfo in `data`, HTTP+JSON in `details` (google.rpc.Status).
    const errorReason = errorInfoReason(error.data) ?? errorInfoReason(error.details);
    return errorReason === undefined ? { outcome: 'error', errorCode } : { outcome: 'error', errorCode, errorReason };
  }
  if ('jsonrpc' in body || 'result' in body) {
    const result = obj(body.result);
    return result ? { outcome: 'success', ...fromResult(result) } : { outcome: 'unknown' };
  }
  if (ok) return { outcome: 'success', ...fromResult(body) };
  // A REST error body: `{code, message}` (v0.3) or `{error: {code, status, message}}` (handled above).
  const code = body.code;
  return { outcome: 'error', errorCode: typeof code === 'number' && Number.isInteger(code) ? code : undefined };
}

/** Parse a response body and read it; undefined when it is not JSON. */
export function parseResponseInfo(text: string, ok: boolean): ResponseInfo | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  return responseInfo(value, ok);
}

/** The log fields of a response (BEHAVIOUR.md §6.1). */
export function logResponseInfo(info: ResponseInfo, logField: (name: string, value: string | number) => void): void {
  logField('a2a.response.outcome', info.outcome);
  if (info.errorCode !== undefined) logField('a2a.response.error_code', info.errorCode);
  if (info.errorReason !== undefined) logField('a2a.response.error_reason', info.errorReason);
  if (info.resultKind !== undefined) logField('a2a.result.kind', info.resultKind);
  if (info.taskState !== undefined) logField('a2a.task.state', info.taskState);
  if (info.contextId !== undefined) logField('a2a.context.id', info.contextId);
}
