// JSON Schema as Gemini's `Schema`, for tool parameters and `response_format` (BEHAVIOUR.md §2.8).
import { isObj } from '../json.ts';
import type { Obj } from '../json.ts';

/** The JSON Schema keywords Gemini's `Schema` (an OpenAPI 3.0 subset) accepts; others make it answer 400. */
const SCHEMA_KEYS = new Set([
  'type', 'format', 'title', 'description', 'nullable', 'enum', 'maxItems', 'minItems', 'properties', 'required',
  'minProperties', 'maxProperties', 'minLength', 'maxLength', 'pattern', 'example', 'anyOf', 'propertyOrdering',
  'default', 'items', 'minimum', 'maximum',
]);

/**
 * Most schemas one request's tools and `response_format` may become with their `$ref`s inlined. Inlining copies a
 * definition at every place naming it, so a definition naming the next one twice doubles per level: 2 KB of JSON
 * made 2^30 schemas (a worker spun and grew until killed). Far more than Gemini accepts in one request.
 */
export const MAX_INLINED_SCHEMAS = 20_000;

/** What is left of a request's {@link MAX_INLINED_SCHEMAS}, shared by all its schemas. */
export interface SchemaBudget {
  left: number;
}

/**
 * A JSON Schema (what OpenAI tools and `response_format` carry) as Gemini's `Schema`: local `$ref`s inlined,
 * `const` as a one-value `enum`, `oneOf` as `anyOf`, a `type` list with `null` as `nullable`, and keywords Gemini
 * does not know (`additionalProperties`, `$schema`, `strict`, ...) dropped. Throws when the request's schemas
 * (`budget`) would grow past {@link MAX_INLINED_SCHEMAS}: the request is refused as untranslatable.
 */
export function toGeminiSchema(schema: unknown, budget: SchemaBudget = { left: MAX_INLINED_SCHEMAS }): unknown {
  return convert(schema, schema, 0, budget);
}

function convert(schema: unknown, root: unknown, depth: number, budget: SchemaBudget): unknown {
  if (!isObj(schema) || depth > 32) return schema;
  if (--budget.left < 0) throw new Error(`the tool and response schemas make more than ${MAX_INLINED_SCHEMAS} schemas once their \`$ref\`s are inlined (Gemini's Schema has no \`$ref\`: each is replaced by a copy of what it names)`);
  let s: Obj = schema;
  if (typeof s.$ref === 'string') {
    const target = resolveRef(root, s.$ref);
    if (target === undefined) return { type: 'object' };
    const { $ref: _ref, ...rest } = s;
    s = { ...target, ...rest };
  }
  const out: Obj = {};
  for (const [k, v] of Object.entries(s)) {
    if (k === 'const') out.enum = [v];
    else if (k === 'oneOf') out.anyOf = v;
    else if (SCHEMA_KEYS.has(k)) out[k] = v;
  }
  if (Array.isArray(out.type)) {
    const types = (out.type as unknown[]).filter((t) => t !== 'null');
    if (types.length < (out.type as unknown[]).length) out.nullable = true;
    if (types.length <= 1) out.type = types[0] ?? 'string';
    else {
      out.anyOf = types.map((t) => ({ type: t }));
      delete out.type;
    }
  }
  if (isObj(out.properties)) {
    const props: Obj = {};
    for (const [k, v] of Object.entries(out.properties)) props[k] = convert(v, root, depth + 1, budget);
    out.properties = props;
  }
  if (out.items !== undefined) out.items = convert(out.items, root, depth + 1, budget);
  if (Array.isArray(out.anyOf)) out.anyOf = out.anyOf.map((x: unknown) => convert(x, root, depth + 1, budget));
  return out;
}

function resolveRef(root: unknown, ref: string): Obj | undefined {
  if (!ref.startsWith('#/')) return undefined;
  let node: unknown = root;
  for (const raw of ref.slice(2).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (!isObj(node)) return undefined;
    node = node[key];
  }
  return isObj(node) ? node : undefined;
}
