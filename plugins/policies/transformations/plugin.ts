import { celValueToString, definePolicy } from 'switchyard/sdk';
import type { CompiledExpression, Exchange, ExpressionCompiler, HeaderMap } from 'switchyard/sdk';

interface HeaderTransform {
  add?: Record<string, string>;
  set?: Record<string, string>;
  remove?: string[];
}

interface TransformationsConfig {
  request?: HeaderTransform;
  response?: HeaderTransform;
}

interface CompiledTransform {
  readonly add: readonly (readonly [string, CompiledExpression])[];
  readonly set: readonly (readonly [string, CompiledExpression])[];
  readonly remove: readonly string[];
}

const side = (what: string) => ({
  type: 'object',
  description: `Header changes on the ${what}, applied add → set → remove. Values are CEL expressions (quote literals: \`'"v1"'\`).`,
  properties: {
    add: {
      type: 'object',
      description: 'Header name → CEL expression; the value is appended. A failing expression adds nothing.',
      propertyNames: { $ref: 'switchyard:defs#/$defs/headerName' },
      additionalProperties: { type: 'string', minLength: 1 },
    },
    set: {
      type: 'object',
      description: 'Header name → CEL expression; replaces existing values. A failing expression removes the header.',
      propertyNames: { $ref: 'switchyard:defs#/$defs/headerName' },
      additionalProperties: { type: 'string', minLength: 1 },
    },
    remove: { type: 'array', description: 'Header names to remove.', items: { $ref: 'switchyard:defs#/$defs/headerName' } },
  },
  additionalProperties: false,
});

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

/** `transformations`: header changes computed per request with CEL (request side before the backend, response side on every reply). */
export default definePolicy<TransformationsConfig>({
  key: 'transformations',
  description: 'Add, set or remove request and response headers with values computed by CEL expressions.',
  schema: {
    type: 'object',
    description: 'Header transformations whose values are CEL expressions over `request`, `source`, `jwt`, ….',
    properties: { request: side('request sent upstream'), response: side('response sent to the client') },
    additionalProperties: false,
  },
  attach: ['routePolicies', 'backendPolicies'],
  phase: 'mutate',
  order: 10,
  compile(config, ctx) {
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
    };
  },
});
