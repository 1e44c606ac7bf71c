import { CEL_NOT_SET_HERE, ConfigError, ErrorCode } from '../sdk/index.ts';
import type { ConfigIssue } from '../sdk/index.ts';
import type { LoggedExchange } from './access-log.ts';
import type { CelExpressions, CheckedExpression } from '../expr/cel-expressions.ts';
import { celActivation } from '../expr/cel-expressions.ts';
import { CREDENTIAL_KEY, CREDENTIAL_PARAM, isSensitiveName, REDACTED } from '../config/secret-marks.ts';

/** `config.logging.filter` and `config.logging.fields` (BEHAVIOUR.md §6.1), compiled at load. */
export interface AccessLogRules {
  readonly filter: CheckedExpression | undefined;
  readonly add: readonly (readonly [name: string, expression: CheckedExpression])[];
  readonly remove: readonly string[];
}

export interface RawLoggingRules {
  filter?: string;
  fields?: { add?: Record<string, string>; remove?: string[] };
}

/** Every line's own fields: an added field of one of these names would replace the line's level or message. */
const LINE_FIELDS = new Set(['time', 'level', 'msg']);
/** Characters a `key=value` key cannot hold (text lines write keys bare). */
const UNWRITABLE_NAME = /[\s"=\u0000-\u001f\u007f-\u009f]|^$/;

/** Compile the rules; null when there are none (the access log then takes its fast path). */
export function compileAccessLogRules(raw: RawLoggingRules | undefined, expressions: CelExpressions): AccessLogRules | null {
  if (raw?.filter === undefined && raw?.fields?.add === undefined && !raw?.fields?.remove?.length) return null;
  const issues: ConfigIssue[] = [];
  const compile = (source: string, path: (string | number)[]): CheckedExpression | undefined => {
    try {
      // Written once the response is sent: `response` and `llm` are known, `mcp` and `llmRequest` never set (ADR 0176).
      return expressions.compile(source, path, true, CEL_NOT_SET_HERE);
    } catch (err) {
      if (err instanceof ConfigError) issues.push(...err.issues);
      else throw err;
      return undefined;
    }
  };
  let filter: CheckedExpression | undefined;
  if (raw.filter !== undefined) {
    filter = compile(raw.filter, ['config', 'logging', 'filter']);
    if (filter && filter.type !== 'bool' && filter.type !== 'dyn') {
      issues.push({ code: ErrorCode.configInvalid, path: ['config', 'logging', 'filter'], message: `the filter must be a bool expression, \`${raw.filter}\` is ${filter.type}` });
    }
  }
  const add: (readonly [string, CheckedExpression])[] = [];
  for (const [name, source] of Object.entries(raw.fields?.add ?? {})) {
    const clash = LINE_FIELDS.has(name) ? `\`${name}\` is the line's own field (time, level, msg)` : UNWRITABLE_NAME.test(name) ? `\`${name}\` cannot be a key of a text line (blanks, quotes, \`=\`, control characters)` : undefined;
    if (clash !== undefined) {
      issues.push({ code: ErrorCode.configInvalid, path: ['config', 'logging', 'fields', 'add', name], message: `${clash}: choose another name` });
      continue;
    }
    const expression = compile(source, ['config', 'logging', 'fields', 'add', name]);
    if (expression) add.push([name, expression]);
  }
  if (issues.length) throw new ConfigError(issues);
  return { filter, add, remove: raw.fields?.remove ?? [] };
}

/** The request path as logged: credentials in the query string replaced (ADR 0017). Only paths with a query run the regex. */
export function loggedPath(url: string): string {
  return url.includes('?') ? url.replace(CREDENTIAL_PARAM, '$1$2=<redacted>') : url;
}

function redactedHeaders(headers: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name in headers) if (headers[name] !== undefined) out[name] = isSensitiveName(name) ? REDACTED : headers[name];
  return out;
}

/** Response header values as CEL sees them: strings (numbers such as `content-length` too), lists as lists. */
function responseHeaders(headers: Readonly<Record<string, unknown>> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (headers === undefined) return out;
  for (const name in headers) {
    const v = headers[name];
    if (v === undefined || v === null) continue;
    const key = name.toLowerCase();
    out[key] = isSensitiveName(key) ? REDACTED : Array.isArray(v) ? v.map(String) : String(v);
  }
  return out;
}

/**
 * The CEL activation of a log line: the request's, with credentials hidden (sensitive headers, query parameters
 * that carry credentials, `apiKey.key`), so
 * no expression can write them to the log, and `response` (`code`, `headers`, sensitive ones hidden the same way:
 * `set-cookie`, tokens). Made once per logged request, only when rules exist.
 */
export function logActivation(ex: LoggedExchange): Record<string, unknown> {
  const activation = celActivation(ex);
  const request = activation.request as Record<string, unknown>;
  request.headers = redactedHeaders(ex.headers as Record<string, unknown>);
  if (ex.query.length > 1) {
    // The query's credentials as `http.path` hides them: in `request.uri` (and `pathAndQuery`) and in `request.query`.
    request.uri = loggedPath(request.uri as string);
    request.pathAndQuery = request.uri;
    const query: Record<string, string> = {};
    for (const [name, value] of Object.entries(request.query as Record<string, string>)) query[name] = CREDENTIAL_KEY.test(name) ? REDACTED : value;
    Object.defineProperty(request, 'query', { value: query, enumerable: true, writable: true, configurable: true });
  }
  const response: Record<string, unknown> = {
    code: BigInt(ex.status),
    get headers() {
      return responseHeaders(ex.replyHeaders);
    },
  };
  // The access log's `grpc.status` (request-pipeline.ts): absent unless the answer carried one.
  const grpcStatus = ex.fields?.['grpc.status'];
  if (typeof grpcStatus === 'number') response.grpcStatus = BigInt(grpcStatus);
  activation.response = response;
  const apiKey = activation.apiKey;
  if (apiKey !== null && typeof apiKey === 'object') activation.apiKey = { ...apiKey, key: REDACTED };
  return activation;
}

/**
 * Most text one `fields.add` value may put in a line (strings, keys and bytes counted as converted): an expression
 * can repeat a client's header once per item of a client's list, its size squared (docs/adr/0145).
 */
export const MAX_LOG_FIELD_CHARS = 256 * 1024;

/** A CEL value as a log field: ints as numbers, maps as objects, bytes as base64. Throws past MAX_LOG_FIELD_CHARS. */
export function logValue(value: unknown): unknown {
  const budget = { left: MAX_LOG_FIELD_CHARS };
  return toLogValue(value, 0, budget);
}

function spendText(budget: { left: number }, n: number): void {
  if ((budget.left -= n) < 0) throw new Error(`log field longer than ${MAX_LOG_FIELD_CHARS} characters`);
}

function toLogValue(value: unknown, depth: number, budget: { left: number }): unknown {
  if (typeof value === 'string') {
    spendText(budget, value.length);
    return value;
  }
  if (typeof value === 'bigint') return Number(value);
  spendText(budget, 1);
  if (value === null || typeof value !== 'object' || depth > 8) return value;
  if (value instanceof Uint8Array) {
    spendText(budget, Math.ceil(value.length / 3) * 4);
    return Buffer.from(value).toString('base64');
  }
  if (Array.isArray(value)) return value.map((v) => toLogValue(v, depth + 1, budget));
  const entries = value instanceof Map ? [...value.entries()] : Object.entries(value);
  const out: Record<string, unknown> = {};
  for (const [k, v] of entries) {
    const key = String(k);
    spendText(budget, key.length);
    out[key] = toLogValue(v, depth + 1, budget);
  }
  return out;
}
