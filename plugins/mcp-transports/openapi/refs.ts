import { isObject } from './document.ts';
import type { JsonObject, OpenApiDocument } from './document.ts';

/** Keywords whose value is one schema. */
const SCHEMA_KEYWORDS = new Set([
  'additionalProperties',
  'items',
  'not',
  'if',
  'then',
  'else',
  'contains',
  'propertyNames',
  'unevaluatedProperties',
  'unevaluatedItems',
  'additionalItems',
]);
/** Keywords whose value is a list of schemas. */
const SCHEMA_LIST_KEYWORDS = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems']);
/** Keywords whose value maps names to schemas. */
const SCHEMA_MAP_KEYWORDS = new Set(['properties', 'patternProperties', 'dependentSchemas', '$defs', 'definitions']);
/** OpenAPI-only keywords that mean nothing to a JSON Schema validator. */
const DROPPED_KEYWORDS = new Set(['discriminator', 'xml', 'externalDocs', 'nullable']);

/**
 * Schema nodes the schemas of one operation may take to expand, and those of a whole document. Shared expansions are
 * memoised, but one inside a cycle depends on where it is met and is expanded again each time: schemas that each use
 * the next twice and the first once more took time exponential in their number (20 of them, a 4 KB document, 2.4 s;
 * 30, the better part of an hour). A real operation takes a few thousand nodes. ADR 0134.
 */
export const MAX_OPERATION_NODES = 200_000;
export const MAX_DOCUMENT_NODES = 5_000_000;

/** An operation's schemas took more than their share of nodes to expand (MAX_OPERATION_NODES, MAX_DOCUMENT_NODES). */
export class ExpansionLimit extends Error {}

/** `$ref`s followed from one parameter, request body, answer or path item: real documents use one or two. */
export const MAX_REF_CHAIN = 64;

/**
 * Resolves local `$ref`s (`#/components/schemas/Pet`, `#/components/parameters/limit`, any JSON pointer into
 * the document) and inlines them into schemas. A reference met again while it is being expanded (a cycle) is
 * cut off with an open schema that says so, so every expansion terminates. Expansions that did not depend on
 * an enclosing cycle are memoised, so a schema used by many operations is expanded once.
 */
export class RefResolver {
  private readonly doc: OpenApiDocument;
  private readonly memo = new Map<string, unknown>();
  /** Schema nodes expanded for the current operation, and for the document. */
  private nodes = 0;
  private total = 0;

  constructor(doc: OpenApiDocument) {
    this.doc = doc;
  }

  /** The value a `$ref` points at. Only local references (`#/...`) are supported. */
  lookup(ref: string): unknown {
    if (!ref.startsWith('#')) throw new Error(`\`$ref: ${ref}\` points outside the document; only local references (\`#/components/\u2026\`) are supported`);
    const pointer = ref.slice(1);
    if (pointer === '') return this.doc;
    if (!pointer.startsWith('/')) throw new Error(`\`$ref: ${ref}\` is not a JSON pointer`);
    let node: unknown = this.doc;
    for (const raw of pointer.slice(1).split('/')) {
      let token: string;
      try {
        token = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
      } catch {
        token = raw.replace(/~1/g, '/').replace(/~0/g, '~');
      }
      if (Array.isArray(node) && /^\d+$/.test(token)) node = node[Number(token)];
      else if (isObject(node) && Object.hasOwn(node, token)) node = node[token];
      else throw new Error(`\`$ref: ${ref}\` points at nothing in the document`);
    }
    return node;
  }

  /**
   * Follow `$ref`s of a non-schema object (a parameter, a request body, a path item) until a plain object.
   * Sibling keys of a `$ref` override what it points at. Returns undefined for a non-object.
   */
  deref(node: unknown): JsonObject | undefined {
    const seen = new Set<string>();
    let current = node;
    // Each link's sibling keys, outermost first; the chain is bounded: 5,000 links merged at each took 51 s.
    const layers: JsonObject[] = [];
    while (isObject(current) && typeof current.$ref === 'string') {
      const ref = current.$ref;
      if (seen.has(ref)) throw new Error(`\`$ref: ${ref}\` refers to itself`);
      if (seen.size === MAX_REF_CHAIN) throw new ExpansionLimit(`\`$ref: ${(node as JsonObject).$ref as string}\` starts a chain of more than ${MAX_REF_CHAIN} references`);
      seen.add(ref);
      const { $ref: _ref, ...siblings } = current;
      if (Object.keys(siblings).length > 0) layers.push(siblings);
      current = this.lookup(ref);
    }
    if (!isObject(current)) return undefined;
    // Spread, not Object.assign: a JSON key `__proto__` stays a key.
    let out: JsonObject = { ...current };
    for (let i = layers.length - 1; i >= 0; i--) out = { ...out, ...layers[i] };
    return out;
  }

  /**
   * A copy of `schema` with every `$ref` inlined and OpenAPI 3.0 dialect mapped to JSON Schema 2020-12
   * (`nullable`, boolean `exclusiveMinimum`/`exclusiveMaximum`, `example`); OpenAPI-only keywords and `x-`
   * extensions are dropped. Values of `enum`, `const`, `default` and `examples` are copied untouched.
   */
  /** Start counting the nodes of another operation's schemas. */
  startOperation(): void {
    this.nodes = 0;
  }

  inline(schema: unknown): unknown {
    return this.schema(schema, [], { minCut: Infinity });
  }

  /** `stack`: references being expanded, outermost first. `state.minCut`: the lowest stack index a cycle was cut at. */
  private schema(node: unknown, stack: string[], state: { minCut: number }): unknown {
    if (typeof node === 'boolean') return node;
    if (!isObject(node)) return {};
    if (++this.total > MAX_DOCUMENT_NODES) throw new ExpansionLimit(`the document's schemas took more than ${MAX_DOCUMENT_NODES} nodes to expand before it`);
    if (++this.nodes > MAX_OPERATION_NODES) throw new ExpansionLimit(`its schemas take more than ${MAX_OPERATION_NODES} nodes to expand (\`$ref\`s used over and over)`);
    if (typeof node.$ref === 'string') return this.reference(node, stack, state);
    const out: JsonObject = {};
    for (const [key, value] of Object.entries(node)) {
      if (DROPPED_KEYWORDS.has(key) || key.startsWith('x-')) continue;
      if (SCHEMA_KEYWORDS.has(key)) out[key] = Array.isArray(value) ? value.map((v) => this.schema(v, stack, state)) : this.schema(value, stack, state);
      else if (SCHEMA_LIST_KEYWORDS.has(key)) out[key] = Array.isArray(value) ? value.map((v) => this.schema(v, stack, state)) : value;
      else if (SCHEMA_MAP_KEYWORDS.has(key) && isObject(value)) {
        const map: JsonObject = {};
        for (const [name, sub] of Object.entries(value)) map[name] = this.schema(sub, stack, state);
        out[key] = map;
      } else out[key] = value;
    }
    return normaliseDialect(node, out);
  }

  private reference(node: JsonObject, stack: string[], state: { minCut: number }): unknown {
    const ref = node.$ref as string;
    let expanded: unknown;
    const at = stack.indexOf(ref);
    if (at >= 0) {
      state.minCut = Math.min(state.minCut, at);
      expanded = { description: `Recursive reference to \`${ref}\` (not expanded further).` };
    } else if (this.memo.has(ref)) {
      expanded = this.memo.get(ref);
    } else {
      const depth = stack.length;
      const inner = { minCut: Infinity };
      expanded = this.schema(this.lookup(ref), [...stack, ref], inner);
      // Cut only at this reference or deeper: the expansion does not depend on who asked, so keep it.
      if (inner.minCut >= depth) this.memo.set(ref, expanded);
      state.minCut = Math.min(state.minCut, inner.minCut);
    }
    const { $ref: _ref, ...siblings } = node;
    if (Object.keys(siblings).length === 0) return expanded;
    const rest = this.schema(siblings, stack, state) as JsonObject;
    return isObject(expanded) ? { ...expanded, ...rest } : { allOf: [expanded], ...rest };
  }
}

/**
 * `schema` (inlined) as a request takes it: properties marked `readOnly` left out, and out of `required` (OpenAPI:
 * they are sent by the server only). Copies only what changes; a shared part is visited once (`seen`), so the walk
 * costs the schema graph, not its JSON.
 */
export function writableOnly(schema: unknown, seen: Map<object, unknown> = new Map()): unknown {
  if (!isObject(schema)) return schema;
  const known = seen.get(schema);
  if (known !== undefined) return known;
  seen.set(schema, schema);
  let out: JsonObject | undefined;
  const set = (key: string, value: unknown): void => {
    out ??= { ...schema };
    out[key] = value;
  };
  for (const [key, value] of Object.entries(schema)) {
    if (SCHEMA_KEYWORDS.has(key) || SCHEMA_LIST_KEYWORDS.has(key)) {
      const next = Array.isArray(value) ? value.map((v) => writableOnly(v, seen)) : writableOnly(value, seen);
      if (Array.isArray(value) ? (next as unknown[]).some((v, i) => v !== value[i]) : next !== value) set(key, next);
    } else if (SCHEMA_MAP_KEYWORDS.has(key) && isObject(value)) {
      const map: JsonObject = {};
      let changed = false;
      for (const [name, sub] of Object.entries(value)) {
        if (key === 'properties' && isObject(sub) && sub.readOnly === true) {
          changed = true;
          continue;
        }
        map[name] = writableOnly(sub, seen);
        if (map[name] !== sub) changed = true;
      }
      if (changed) set(key, map);
    }
  }
  if (out && isObject(schema.properties) && Array.isArray(schema.required)) {
    const kept = out.properties as JsonObject;
    const props = schema.properties;
    out.required = schema.required.filter((name) => typeof name !== 'string' || !(isObject(props[name]) && props[name].readOnly === true && !Object.hasOwn(kept, name)));
  }
  seen.set(schema, out ?? schema);
  return out ?? schema;
}

/** Map the OpenAPI 3.0 schema dialect onto JSON Schema 2020-12 (no-ops for 3.1 documents). */
function normaliseDialect(source: JsonObject, out: JsonObject): JsonObject {
  if (source.nullable === true) {
    if (typeof out.type === 'string') out.type = [out.type, 'null'];
    else if (Array.isArray(out.type) && !out.type.includes('null')) out.type = [...out.type, 'null'];
    if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
    // `nullable` beside `allOf: [{$ref}]` (3.0 allows no other way to make a reference nullable): null or the rest.
    if (out.type === undefined && out.enum === undefined) {
      const composed: JsonObject = {};
      for (const key of ['allOf', 'oneOf', 'anyOf']) {
        if (key in out) {
          composed[key] = out[key];
          delete out[key];
        }
      }
      if (Object.keys(composed).length > 0) out.anyOf = [composed, { type: 'null' }];
    }
  }
  for (const [bound, exclusive] of [
    ['minimum', 'exclusiveMinimum'],
    ['maximum', 'exclusiveMaximum'],
  ] as const) {
    if (typeof out[exclusive] === 'boolean') {
      if (out[exclusive] === true && typeof out[bound] === 'number') {
        out[exclusive] = out[bound];
        delete out[bound];
      } else delete out[exclusive];
    }
  }
  if ('example' in out) {
    if (!Array.isArray(out.examples)) out.examples = [out.example];
    delete out.example;
  }
  return out;
}
