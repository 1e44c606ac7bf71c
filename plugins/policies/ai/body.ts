import type { CompiledExpression, Exchange } from 'switchyard/sdk';
import type { LlmRouteType } from '../../lib/llm/contract.ts';
import { isObj } from '../../lib/llm/json.ts';
import { completionsPrompts } from '../../lib/llm/formats/completions.ts';
import { formatOf } from '../../lib/llm/formats/index.ts';
import { messagesPrompts } from '../../lib/llm/formats/messages.ts';
import { responsesPrompts } from '../../lib/llm/formats/responses.ts';
import type { BodyFields, PromptMessage } from '../../lib/llm/formats/format.ts';

export type { PromptMessage } from '../../lib/llm/formats/format.ts';

type Obj = Record<string, unknown>;

// --- prompts ----------------------------------------------------------------------------------------------------

/**
 * Insert the configured prompts into a body of the given format (each format module knows where: `insertPrompts`).
 * Formats without a conversation are left alone.
 */
export function applyPrompts(format: LlmRouteType, body: Obj, prepend: readonly PromptMessage[], append: readonly PromptMessage[]): void {
  if (prepend.length === 0 && append.length === 0) return;
  if (format !== 'detect') return formatOf(format)?.insertPrompts?.(body, prepend, append);
  // Told from the body: a top-level `system` means Anthropic Messages, `input` means Responses.
  if (Array.isArray(body.messages)) {
    if (body.system !== undefined) messagesPrompts(body, prepend, append);
    else completionsPrompts(body, prepend, append);
  } else if (body.input !== undefined) responsesPrompts(body, prepend, append);
}

// --- CEL values -------------------------------------------------------------------------------------------------

/** Deepest level converted: a client's body nested deeper is passed on as it is below it (no stack overflow). */
const MAX_CEL_DEPTH = 128;

/** A JSON value as CEL sees it: integers become CEL `int` (bigint), so `llmRequest.max_tokens * 2` type-checks. */
export function jsonToCel(value: unknown, depth = 0): unknown {
  if (typeof value === 'number') return Number.isInteger(value) ? BigInt(value) : value;
  if (depth >= MAX_CEL_DEPTH) return value;
  if (Array.isArray(value)) return value.map((v) => jsonToCel(v, depth + 1));
  // fromEntries defines keys: a client's `__proto__` key stays a key instead of replacing the prototype.
  if (isObj(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, jsonToCel(v, depth + 1)]));
  return value;
}

/** A CEL result as JSON: ints back to numbers, maps to objects, bytes to base64. */
export function celToJson(value: unknown): unknown {
  if (typeof value === 'bigint') {
    const n = Number(value);
    return Number.isSafeInteger(n) ? n : value.toString();
  }
  if (value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return value;
  if (value === undefined) throw new Error('no value');
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  if (Array.isArray(value)) return value.map(celToJson);
  if (value instanceof Map) {
    const out: Obj = {};
    for (const [k, v] of value) out[String(k)] = celToJson(v);
    return out;
  }
  if (isObj(value) && Object.getPrototypeOf(value) === Object.prototype) {
    const out: Obj = {};
    for (const [k, v] of Object.entries(value)) out[k] = celToJson(v);
    return out;
  }
  // Other CEL values (ip, cidr, durations, timestamps) as their text.
  return String(value);
}

// --- body fields ------------------------------------------------------------------------------------------------

const REMOVE = Symbol('remove');

export interface BodyMutations {
  readonly overrides: readonly (readonly [string, unknown])[];
  readonly transformations: readonly (readonly [string, CompiledExpression])[];
  readonly defaults: readonly (readonly [string, unknown])[];
}

/**
 * `overrides` -> `transformations` -> `defaults` (BEHAVIOUR.md §2.8). Every transformation is evaluated against the
 * body as the client sent it; one that fails (or yields no value) removes its field.
 */
export function applyMutations(ex: Exchange, body: Obj, m: BodyMutations, fields: BodyFields = TOP_LEVEL): void {
  let computed: [string, unknown | typeof REMOVE][] | undefined;
  if (m.transformations.length) {
    const llmRequest = jsonToCel(body);
    computed = m.transformations.map(([field, expression]) => {
      try {
        return [field, celToJson(expression.evaluate(ex, { llmRequest }))];
      } catch {
        return [field, REMOVE];
      }
    });
  }
  for (const [field, value] of m.overrides) fields.set(body, field, structuredClone(value));
  if (computed) {
    for (const [field, value] of computed) {
      if (value === REMOVE) fields.delete(body, field);
      else fields.set(body, field, value);
    }
  }
  for (const [field, value] of m.defaults) if (!fields.has(body, field)) fields.set(body, field, structuredClone(value));
}

/** Fields at the body's top level, named as written (every format but Gemini's). */
const TOP_LEVEL: BodyFields = {
  has: (body, field) => body[field] !== undefined,
  set(body, field, value) {
    body[field] = value;
  },
  delete(body, field) {
    delete body[field];
  },
};

// --- model aliases ----------------------------------------------------------------------------------------------

export interface ModelAliases {
  readonly exact: ReadonlyMap<string, string>;
  /** Wildcard patterns, longest first. */
  readonly patterns: readonly (readonly [RegExp, string])[];
}

export function compileModelAliases(aliases: Record<string, string>): ModelAliases {
  const exact = new Map<string, string>();
  const patterns: [RegExp, string, number][] = [];
  for (const [from, to] of Object.entries(aliases)) {
    if (!from.includes('*')) exact.set(from, to);
    else patterns.push([new RegExp(`^${from.split('*').map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`, 's'), to, from.length]);
  }
  patterns.sort((a, b) => b[2] - a[2]);
  return { exact, patterns: patterns.map(([re, to]) => [re, to] as const) };
}

/** The model to send for a requested one, or undefined when no alias applies. */
export function resolveModelAlias(aliases: ModelAliases, model: string): string | undefined {
  const hit = aliases.exact.get(model);
  if (hit !== undefined) return hit;
  for (const [re, to] of aliases.patterns) if (re.test(model)) return to;
  return undefined;
}
