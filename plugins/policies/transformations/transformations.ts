import { CEL_NOT_SET_BEFORE_BACKEND, CEL_NOT_SET_HERE, celValueToString, headerListAdd, headerListRemove, headerListSet, headerMapAdd } from 'switchyard/sdk';
import { framingEdit, framingMessage, hostToAuthority, sendableHeaderValue } from '../../lib/header-modifier/header-modifier.ts';
import type { CompileContext, CompiledExpression, Exchange, ExpressionCompiler, HeaderMap, PolicyInstance } from 'switchyard/sdk';

export interface HeaderTransform {
  add?: Record<string, string>;
  set?: Record<string, string>;
  remove?: string[];
}

export interface TransformationsConfig {
  request?: HeaderTransform;
  response?: HeaderTransform;
}

interface CompiledTransform {
  readonly add: readonly (readonly [string, CompiledExpression])[];
  readonly set: readonly (readonly [string, CompiledExpression])[];
  readonly remove: readonly string[];
}

function compileSide(config: HeaderTransform | undefined, expr: ExpressionCompiler, at: 'request' | 'response'): CompiledTransform | undefined {
  if (!config) return undefined;
  // Request values run before the backend (no `llm` yet); response values after it (ADR 0176).
  const unavailable = at === 'request' ? CEL_NOT_SET_BEFORE_BACKEND : CEL_NOT_SET_HERE;
  const compileMap = (kind: 'add' | 'set') =>
    Object.entries(config[kind] ?? {}).map(([name, source]) => [name.toLowerCase(), expr.compile(source, [at, kind, name], unavailable)] as const);
  return { add: compileMap('add'), set: compileMap('set'), remove: (config.remove ?? []).map((n) => n.toLowerCase()) };
}

/** The three edits on one shape of headers: a header object (`onRequest`, `onResponse`) or a raw list (ADR 0071). */
interface HeaderEdits<H> {
  add(headers: H, name: string, value: string): void;
  set(headers: H, name: string, value: string): void;
  remove(headers: H, name: string): void;
}

const MAP_EDITS: HeaderEdits<HeaderMap> = {
  add: headerMapAdd,
  set: (headers, name, value) => void (headers[name] = value),
  remove: (headers, name) => void delete headers[name],
};

const LIST_EDITS: HeaderEdits<string[]> = { add: headerListAdd, set: headerListSet, remove: headerListRemove };

/** The header value of an expression, undefined when it fails or its value cannot be sent in a header. */
function valueOf(expression: CompiledExpression, ex: Exchange): string | undefined {
  try {
    return sendableHeaderValue(celValueToString(expression.evaluate(ex)));
  } catch {
    return undefined;
  }
}

/** Each `add` whose expression evaluates, each `set` (its header removed when it fails), then each `remove`. */
function apply<H>(t: CompiledTransform, ex: Exchange, edits: HeaderEdits<H>, headers: H): void {
  for (const [name, expression] of t.add) {
    const value = valueOf(expression, ex);
    if (value !== undefined) edits.add(headers, name, value);
  }
  for (const [name, expression] of t.set) {
    const value = valueOf(expression, ex);
    if (value !== undefined) edits.set(headers, name, value);
    else edits.remove(headers, name);
  }
  for (const name of t.remove) edits.remove(headers, name);
}

/**
 * Response values reading `llm` need `ai` backends: only their call sets it, so in front of any other the value would
 * fail on every response (ADR 0176). Pointed at the first such value.
 */
function llmRequirement(config: HeaderTransform, t: CompiledTransform, ctx: CompileContext): Pick<PolicyInstance, 'requiresBackendProtocol'> | undefined {
  for (const kind of ['add', 'set'] as const) {
    const found = t[kind].findIndex(([, expression]) => expression.reads?.('llm') === true);
    if (found < 0) continue;
    const name = Object.keys(config[kind]!)[found]!;
    const message = `\`${t[kind][found]![1].source}\` reads \`llm\`, and only an \`ai\` backend sets \`llm\`; this route has another backend (or none), so the value would fail on every response`;
    return { requiresBackendProtocol: { protocol: 'llm', message, path: [...ctx.path, 'response', kind, name] } };
  }
  return undefined;
}

/** Compile one `transformations` policy: every value is a CEL expression, compiled once here. */
export function compileTransformations(config: TransformationsConfig, ctx: CompileContext): PolicyInstance {
  for (const side of ['request', 'response'] as const) {
    const framing = config[side] ? framingEdit(config[side]) : undefined;
    if (framing) return ctx.fail(framingMessage(framing[1], side), [side, ...framing]);
  }
  const request = compileSide(config.request, ctx.expr, 'request');
  const requestHost = request !== undefined && [...request.add, ...request.set].some(([name]) => name === 'host');
  const response = compileSide(config.response, ctx.expr, 'response');
  return {
    ...(response && llmRequirement(config.response!, response, ctx)),
    onRequest: request
      ? (ex) => {
          apply(request, ex, MAP_EDITS, ex.headers as HeaderMap);
          if (requestHost) hostToAuthority(ex);
        }
      : undefined,
    onResponse: response ? (ex, reply) => apply(response, ex, MAP_EDITS, reply.headers) : undefined,
    // Response expressions cannot read `response` (refused at load), so the edit needs no Reply: the route keeps the
    // direct forward.
    onResponseHeaders: response ? (ex, _status, list) => apply(response, ex, LIST_EDITS, list) : undefined,
  };
}
