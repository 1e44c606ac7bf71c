import { definePolicy } from 'switchyard/sdk';
import type { TransformationsConfig } from './transformations.ts';
import schema from './schema.json' with { type: 'json' };

const side = (what: string) => ({
  type: 'object',
  description: `Header changes on the ${what}, applied add \u2192 set \u2192 remove. Values are CEL expressions (quote literals: \`'"v1"'\`).`,
  properties: {
    add: {
      type: 'object',
      description: 'Header name \u2192 CEL expression; the value is appended. A failing expression adds nothing.',
      'x-secret': 'headers',
      propertyNames: { $ref: 'switchyard:defs#/$defs/headerName' },
      additionalProperties: { type: 'string', minLength: 1, 'x-secret': 'cel' },
    },
    set: {
      type: 'object',
      description: 'Header name \u2192 CEL expression; replaces existing values. A failing expression removes the header.',
      'x-secret': 'headers',
      propertyNames: { $ref: 'switchyard:defs#/$defs/headerName' },
      additionalProperties: { type: 'string', minLength: 1, 'x-secret': 'cel' },
    },
    remove: { type: 'array', description: 'Header names to remove.', items: { $ref: 'switchyard:defs#/$defs/headerName' } },
  },
  additionalProperties: false,
});

/** `transformations`: header changes computed per request with CEL (request side before the backend, response side on every reply). */
export default definePolicy<TransformationsConfig>({
  key: 'transformations',
  description: 'Add, set or remove request and response headers with values computed by CEL expressions.',
  schema,
  attach: ['routePolicies', 'backendPolicies'],
  phase: 'mutate',
  // Headers and CEL over headers and attributes only (CEL has no request body), never `ex.req` as a stream: its routes
  // may be served lean (ADR 0088).
  requestStream: false,
  order: 10,
  async compile(config, ctx) {
    // The implementation loads only when a config uses this policy.
    const { compileTransformations } = await import('./transformations.ts');
    return compileTransformations(config, ctx);
  },
});
