/** How large a value's JSON is: about its length (within a separator per item), and how deeply it nests. */
export interface JsonExtent {
  readonly length: number;
  readonly depth: number;
}

const PAST_CAP: JsonExtent = { length: Infinity, depth: Infinity };

/**
 * The extent of `JSON.stringify(value)` without serialising, `length` `Infinity` once past `cap`. A converted tool
 * shares the expansion of a `$ref` wherever it is used (refs.ts memoises it), so its schema is a graph whose JSON can
 * be exponentially larger than the document: 30 schemas that each use the next twice are 4 KB of document and 2^30
 * leaves of JSON. A shared node is measured once (`seen`), so measuring costs the graph, not its JSON. Give calls
 * with one `seen` the same `cap`.
 */
export function jsonExtent(value: unknown, cap: number, seen: WeakMap<object, JsonExtent> = new WeakMap()): JsonExtent {
  if (value === null || typeof value !== 'object') return { length: (JSON.stringify(value) ?? 'null').length, depth: 0 };
  const known = seen.get(value);
  if (known !== undefined) return known;
  let length = 2;
  let depth = 0;
  const add = (item: unknown, extra: number): boolean => {
    const inner = jsonExtent(item, cap, seen);
    length += extra + inner.length;
    depth = Math.max(depth, inner.depth);
    return length <= cap;
  };
  if (Array.isArray(value)) {
    for (const item of value) if (!add(item, 1)) break;
  } else {
    for (const [key, item] of Object.entries(value)) {
      if (item === undefined || typeof item === 'function') continue;
      if (!add(item, JSON.stringify(key).length + 2)) break;
    }
  }
  const extent = length > cap ? PAST_CAP : { length, depth: depth + 1 };
  seen.set(value, extent);
  return extent;
}
