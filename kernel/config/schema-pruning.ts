import type { JsonSchema } from '../sdk/index.ts';

// Schema pruning (ConfigValidator): only the schemas of the plugins a config names are compiled.

const LOCAL_DEF = '#/$defs/';
/** Keywords that would make a schema reachable in ways the pruning does not follow. */
const UNPRUNABLE = new Set(['$dynamicRef', '$recursiveRef', '$anchor', '$dynamicAnchor']);

/**
 * The definitions reachable from the root when slot properties not in `used` are not followed; the others
 * become `{}` (they stay defined, as the slots still refer to them).
 */
export function reachableDefs(schema: JsonSchema, defs: Readonly<Record<string, unknown>>, used: ReadonlySet<string>): Record<string, unknown> {
  const reached = new Set<string>();
  const pending: string[] = [];
  const scan = (node: unknown, isRoot = false): void => {
    if (Array.isArray(node)) {
      for (const n of node) scan(n);
      return;
    }
    if (typeof node !== 'object' || node === null) return;
    const obj = node as Record<string, unknown>;
    const isSlot = obj['x-switchyard-slot'] !== undefined;
    for (const [k, v] of Object.entries(obj)) {
      if (k === '$ref' && typeof v === 'string') {
        const name = refDef(v);
        if (name !== undefined && !reached.has(name)) {
          reached.add(name);
          pending.push(name);
        }
      } else if (k === '$defs' && isRoot) {
        continue;
      } else if (k === 'properties' && isSlot && typeof v === 'object' && v !== null) {
        for (const [key, sub] of Object.entries(v)) if (used.has(key)) scan(sub);
      } else {
        scan(v);
      }
    }
  };
  scan(schema, true);
  while (pending.length > 0) scan(defs[pending.pop()!]);
  const out: Record<string, unknown> = {};
  for (const [name, def] of Object.entries(defs)) out[name] = reached.has(name) ? def : {};
  return out;
}

/** The slot keys that appear as an object key anywhere in the config. */
export function usedKeys(config: unknown, slotKeys: ReadonlySet<string>, tree: boolean): Set<string> {
  const used = new Set<string>();
  // Aliases can share (and nest) objects; a tree of a million objects is walked without the set.
  const seen = tree ? undefined : new Set<object>();
  const stack: unknown[] = [config];
  while (stack.length > 0) {
    const node = stack.pop();
    if (typeof node !== 'object' || node === null) continue;
    if (seen) {
      if (seen.has(node)) continue;
      seen.add(node);
    }
    // Only objects are pushed, and no entry pairs are built: this visits every node of a 100,000-route config.
    if (Array.isArray(node)) {
      for (const n of node) if (typeof n === 'object' && n !== null) stack.push(n);
      continue;
    }
    for (const k of Object.keys(node)) {
      if (slotKeys.has(k)) used.add(k);
      const v = (node as Record<string, unknown>)[k];
      if (typeof v === 'object' && v !== null) stack.push(v);
    }
  }
  return used;
}

/** The definition a `#/$defs/<name>[/...]` reference points into, or undefined for any other form. */
function refDef(ref: string): string | undefined {
  if (!ref.startsWith(LOCAL_DEF)) return undefined;
  return ref.slice(LOCAL_DEF.length).split('/')[0]!.replace(/~1/g, '/').replace(/~0/g, '~');
}

/**
 * Whether `reachableDefs` can follow every reference of the schema: each is `#/$defs/<name>[/...]` naming an
 * existing definition, and nothing else (`$dynamicRef`, `$anchor`, nested `$id`) makes a part reachable.
 */
export function isPrunable(schema: JsonSchema, defs: Readonly<Record<string, unknown>>): boolean {
  const stack: unknown[] = [schema];
  while (stack.length > 0) {
    const node = stack.pop();
    if (typeof node !== 'object' || node === null) continue;
    if (Array.isArray(node)) {
      for (const n of node) stack.push(n);
      continue;
    }
    for (const [k, v] of Object.entries(node)) {
      if (UNPRUNABLE.has(k) || (k === '$id' && node !== schema)) return false;
      if (k === '$ref') {
        const name = typeof v === 'string' ? refDef(v) : undefined;
        if (name === undefined || !Object.hasOwn(defs, name)) return false;
      }
      stack.push(v);
    }
  }
  return true;
}

