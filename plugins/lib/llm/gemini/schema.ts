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
 * A JSON Schema (what OpenAI tools and `response_format` carry) as Gemini's `Schema`: local `$ref`s inlined,
 * `const` as a one-value `enum`, `oneOf` as `anyOf`, a `type` list with `null` as `nullable`, and keywords Gemini
 * does not know (`additionalProperties`, `$schema`, `strict`, …) dropped.
 */
export function toGeminiSchema(schema: unknown, root: unknown = schema, depth = 0): unknown {
  if (!isObj(schema) || depth > 32) return schema;
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
    for (const [k, v] of Object.entries(out.properties)) props[k] = toGeminiSchema(v, root, depth + 1);
    out.properties = props;
  }
  if (out.items !== undefined) out.items = toGeminiSchema(out.items, root, depth + 1);
  if (Array.isArray(out.anyOf)) out.anyOf = out.anyOf.map((x: unknown) => toGeminiSchema(x, root, depth + 1));
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
