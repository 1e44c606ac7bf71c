import type { Environment } from '@marcbachmann/cel-js';
import { spendItems, spendStep } from './cel-budget.ts';

/**
 * Functions of the reference gateway's CEL that Switchyard provides with its semantics (BEHAVIOUR.md §10,
 * docs/adr/0145): `json`, `toJson`, the binding macro `with`, the map helpers `merge`, `filterKeys`, `removeKeys`,
 * `mapValues`, and the strings-extension methods `charAt`, `stripPrefix`, `stripSuffix`.
 */

/** Longest text `json()` parses and `toJson()` writes: client data, parsed per request. */
export const MAX_JSON_CHARS = 1024 * 1024;

/** JSON as CEL values: whole numbers within int64 are `int` (exactly, from their source text), others `double`. */
function parseJson(text: string): unknown {
  if (text.length > MAX_JSON_CHARS) throw new Error(`json(): input longer than ${MAX_JSON_CHARS} characters`);
  return JSON.parse(text, (_key, value: unknown, context?: { source?: string }) => {
    if (typeof value === 'number') {
      const src = context?.source;
      if (src !== undefined && /^-?\d+$/.test(src)) {
        const n = BigInt(src);
        if (n >= -(2n ** 63n) && n < 2n ** 63n) return n;
      }
      return value;
    }
    // cel-js types a map by its constructor: an object with its own `constructor` key becomes a Map.
    if (value !== null && typeof value === 'object' && !Array.isArray(value) && Object.hasOwn(value, 'constructor')) return new Map(Object.entries(value));
    return value;
  });
}

// Node 21+: a number written exactly as given (an int64 beyond 2^53 keeps its digits). Not yet in TypeScript's lib.
const rawJSON = (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON;

/** A CEL value as JSON text: ints exactly, maps as objects, bytes as base64, other values (ip, duration) as text. */
function toJson(value: unknown): string {
  // Estimated first: a client's list of a client's strings is not written out only to be refused.
  if (textSize(value, 0) > MAX_JSON_CHARS) throw new Error(`toJson(): output longer than ${MAX_JSON_CHARS} characters`);
  const text = JSON.stringify(value, function (this: unknown, _key: string, v: unknown): unknown {
    if (typeof v === 'bigint') return rawJSON(v.toString());
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    if (v instanceof Map) return Object.fromEntries(v);
    if (v instanceof Uint8Array) return Buffer.from(v).toString('base64');
    if (v instanceof Set) return [...v];
    const proto = Object.getPrototypeOf(v) as unknown;
    return proto === Object.prototype || proto === null ? v : String(v);
  });
  if (text === undefined) throw new Error('toJson(): the value has no JSON form');
  if (text.length > MAX_JSON_CHARS) throw new Error(`toJson(): output longer than ${MAX_JSON_CHARS} characters`);
  return text;
}

/** At least the length of the JSON text of `value` (strings and structure), stopping once past MAX_JSON_CHARS. */
function textSize(value: unknown, depth: number): number {
  if (typeof value === 'string') return value.length + 2;
  if (value === null || typeof value !== 'object') return 8;
  if (depth > 64) throw new Error('toJson(): value nested more than 64 levels');
  let total = 2;
  const items = Array.isArray(value) || value instanceof Set ? [...value] : value instanceof Map ? [...value.entries()].flat() : value instanceof Uint8Array ? [] : Object.entries(value).flat();
  if (value instanceof Uint8Array) total += Math.ceil(value.length / 3) * 4;
  for (const item of items) {
    total += textSize(item, depth + 1) + 1;
    if (total > MAX_JSON_CHARS) return total;
  }
  return total;
}

/** Entries of a CEL map (a plain object or a Map). */
function entriesOf(map: unknown): [unknown, unknown][] {
  if (map instanceof Map) return [...map.entries()];
  if (map !== null && typeof map === 'object' && !Array.isArray(map)) return Object.entries(map);
  throw new Error('no such overload: the receiver is not a map');
}

function merge(a: unknown, b: unknown): Map<unknown, unknown> {
  return new Map([...entriesOf(a), ...entriesOf(b)]);
}

// --- binding macros (the engine's `cel.bind` pattern: a variable scoped to one argument) ---------------------

interface Node {
  readonly op?: string;
  readonly args?: unknown;
}
interface Type {
  readonly name?: string;
  readonly kind?: string;
  readonly keyType?: Type;
  readonly valueType?: Type;
}
interface Ctx {
  forkWithVariable(name: string, type: Type): Ctx;
  reuse(parent: Ctx): Ctx;
  setIterValue(value: unknown, ev: Evaluator): Ctx;
}
interface Checker {
  check(node: unknown, ctx: Ctx): Type;
  getType(name: string): Type;
  createError(code: string, message: string, node: unknown): Error;
}
interface Evaluator {
  run(node: unknown, ctx: Ctx): unknown;
}
interface MacroCall {
  readonly args: readonly Node[];
  readonly receiver: Node;
}

function boundName(checker: Checker, node: Node, fn: string): string {
  if (node.op === 'id' && typeof node.args === 'string') return node.args;
  throw checker.createError('invalid_macro_argument', `${fn}(name, expr): the first argument must be a name`, node);
}

/**
 * A receiver macro `x.fn(name, body)`: `body` sees `name` bound to the receiver (`with`) or, for the map helpers,
 * to each key or value in turn. Bodies must be synchronous (every gateway function is).
 */
function bindingMacro(fn: 'with' | 'filterKeys' | 'removeKeys' | 'mapValues') {
  return ({ args, receiver }: MacroCall): unknown => {
    let bodyCtx: Ctx | undefined;
    return {
      args,
      async: false,
      typeCheck(checker: Checker, _macro: unknown, ctx: Ctx): Type {
        const name = boundName(checker, args[0]!, fn);
        const recv = checker.check(receiver, ctx);
        if (fn !== 'with' && recv.kind !== 'map' && recv.kind !== 'dyn') {
          throw checker.createError('no_matching_overload', `${fn}() needs a map, not ${JSON.stringify(recv.kind)}`, receiver);
        }
        const dyn = checker.getType('dyn');
        const bound = fn === 'with' ? recv : fn === 'mapValues' ? (recv.valueType ?? dyn) : (recv.keyType ?? dyn);
        bodyCtx = ctx.forkWithVariable(name, bound);
        const body = checker.check(args[1], bodyCtx);
        if (fn === 'with') return body;
        if (fn !== 'mapValues' && body.name !== 'bool' && body.name !== 'dyn') {
          throw checker.createError('invalid_macro_argument', `${fn}(name, predicate): the predicate must be a bool`, args[1]);
        }
        return fn === 'mapValues' ? checker.getType('map') : recv;
      },
      evaluate(ev: Evaluator, _macro: unknown, ctx: Ctx): unknown {
        const value = ev.run(receiver, ctx);
        const scope = bodyCtx!.reuse(ctx);
        const body = (v: unknown): unknown => ev.run(args[1], scope.setIterValue(v, ev));
        if (fn === 'with') return body(value);
        const out = new Map<unknown, unknown>();
        const entries = entriesOf(value);
        spendItems(entries.length);
        for (const [k, v] of entries) {
          spendStep();
          if (fn === 'mapValues') out.set(k, body(v));
          else {
            const keep = body(k);
            if (typeof keep !== 'boolean') throw new Error(`${fn}(name, predicate): the predicate gave no bool`);
            if (keep === (fn === 'filterKeys')) out.set(k, v);
          }
        }
        return out;
      },
    };
  };
}

type Fn = (...args: never[]) => unknown;

/** [signature, handler, description]. */
export const REFERENCE_FUNCTIONS: readonly (readonly [string, Fn, string])[] = [
  ['json(string): dyn', parseJson, 'Parse JSON text (whole numbers become `int`); malformed JSON or more than 1 MiB is an error.'],
  ['json(bytes): dyn', (b: Uint8Array) => parseJson(Buffer.from(b).toString('utf8')), 'Parse JSON bytes, as `json(string)`.'],
  ['toJson(dyn): string', toJson, 'The JSON text of a value (ints exact, bytes as base64, addresses and durations as text).'],
  ['map.merge(map): map', merge, 'The first map with the second\'s entries added or replacing.'],
  ['string.charAt(int): string', (s: string, i: bigint) => charAt(s, i), 'The code point at an index; the length gives `""`, beyond it is an error.'],
  ['string.stripPrefix(string): string', (s: string, p: string) => (s.startsWith(p) ? s.slice(p.length) : s), 'The string without a leading prefix (unchanged without it).'],
  ['string.stripSuffix(string): string', (s: string, p: string) => (p !== '' && s.endsWith(p) ? s.slice(0, s.length - p.length) : s), 'The string without a trailing suffix (unchanged without it).'],
];

function charAt(s: string, i: bigint): string {
  const points = [...s];
  if (i < 0n || i > BigInt(points.length)) throw new Error(`charAt(): index ${i} out of range`);
  return points[Number(i)] ?? '';
}

const MACROS: readonly (readonly [string, 'with' | 'filterKeys' | 'removeKeys' | 'mapValues', string])[] = [
  ['dyn.with(ast, ast): dyn', 'with', 'Bind a name to the receiver inside an expression: `json(x).with(b, b.a + b.b)`.'],
  ['map.filterKeys(ast, ast): map', 'filterKeys', 'The entries whose key satisfies the predicate.'],
  ['map.removeKeys(ast, ast): map', 'removeKeys', 'The entries whose key does not satisfy the predicate.'],
  ['map.mapValues(ast, ast): map', 'mapValues', 'The map with each value replaced by the expression\'s value for it.'],
];

/** Register the reference's functions; returns their signatures as the engine lists them (`map` as `map<dyn, dyn>`). */
export function registerReferenceFunctions(env: Environment): string[] {
  const out: string[] = [];
  for (const [signature, handler, description] of REFERENCE_FUNCTIONS) {
    env.registerFunction(signature, handler as never, { description });
    out.push(signature);
  }
  for (const [signature, fn, description] of MACROS) {
    env.registerFunction(signature, bindingMacro(fn) as never, { description });
    out.push(signature);
  }
  return out.map((s) => s.replace(/\bmap\b(?!<)/g, 'map<dyn, dyn>'));
}
