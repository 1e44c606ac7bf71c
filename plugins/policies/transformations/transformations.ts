import { celValueToString, headerListAdd, headerListRemove, headerListSet } from 'switchyard/sdk';
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

function compileSide(config: HeaderTransform | undefined, expr: ExpressionCompiler, at: string): CompiledTransform | undefined {
  if (!config) return undefined;
  const compileMap = (kind: 'add' | 'set') =>
    Object.entries(config[kind] ?? {}).map(([name, source]) => [name.toLowerCase(), expr.compile(source, [at, kind, name])] as const);
  return { add: compileMap('add'), set: compileMap('set'), remove: (config.remove ?? []).map((n) => n.toLowerCase()) };
}

function apply(t: CompiledTransform, ex: Exchange, headers: HeaderMap): void {
  for (const [name, expression] of t.add) {
    let value: string;
    try {
      value = celValueToString(expression.evaluate(ex));
    } catch {
      continue;
    }
    const existing = headers[name];
    if (existing === undefined) headers[name] = value;
    else if (Array.isArray(existing)) existing.push(value);
    else headers[name] = [String(existing), value];
  }
  for (const [name, expression] of t.set) {
    try {
      headers[name] = celValueToString(expression.evaluate(ex));
    } catch {
      delete headers[name];
    }
  }
  for (const name of t.remove) delete headers[name];
}

/** `apply` on a forwarded answer's raw header list (`onResponseHeaders`, ADR 0071): the same edits, list helpers. */
function applyToList(t: CompiledTransform, ex: Exchange, list: string[]): void {
  for (const [name, expression] of t.add) {
    let value: string;
    try {
      value = celValueToString(expression.evaluate(ex));
    } catch {
      continue;
    }
    headerListAdd(list, name, value);
  }
  for (const [name, expression] of t.set) {
    try {
      headerListSet(list, name, celValueToString(expression.evaluate(ex)));
    } catch {
      headerListRemove(list, name);
    }
  }
  for (const name of t.remove) headerListRemove(list, name);
}

/** Compile one `transformations` policy: every value is a CEL expression, compiled once here. */
export function compileTransformations(config: TransformationsConfig, ctx: CompileContext): PolicyInstance {
  const request = compileSide(config.request, ctx.expr, 'request');
  const response = compileSide(config.response, ctx.expr, 'response');
  return {
    onRequest: request
      ? (ex) => {
          apply(request, ex, ex.headers as HeaderMap);
          const host = ex.headers.host;
          if (typeof host === 'string' && host !== ex.authority) ex.authority = host;
        }
      : undefined,
    onResponse: response ? (ex, reply) => apply(response, ex, reply.headers) : undefined,
    // Response expressions cannot read `response` (refused at load), so the edit needs no Reply: the route keeps the
    // direct forward.
    onResponseHeaders: response ? (ex, _status, list) => applyToList(response, ex, list) : undefined,
  };
}
