/**
 * About the length of `JSON.stringify(value)` (within a separator per item), or `Infinity` once past `cap`, without
 * serialising. A converted tool shares the expansion of a `$ref` wherever it is used (refs.ts memoises it), so its
 * schema is a graph whose JSON can be exponentially larger than the document: 30 schemas that each use the next
 * twice are 4 KB of document and 2^30 leaves of JSON. A shared node is measured once (`seen`), so measuring costs
 * the graph, not its JSON. Give calls with one `seen` the same `cap`.
 */
export function expandedJsonLength(value: unknown, cap: number, seen: WeakMap<object, number> = new WeakMap()): number {
  if (value === null || typeof value !== 'object') return (JSON.stringify(value) ?? 'null').length;
  const known = seen.get(value);
  if (known !== undefined) return known;
  let length = 2;
  if (Array.isArray(value)) {
    for (const item of value) {
      length += 1 + expandedJsonLength(item, cap, seen);
      if (length > cap) break;
    }
  } else {
    for (const [key, item] of Object.entries(value)) {
      if (item === undefined || typeof item === 'function') continue;
      length += JSON.stringify(key).length + 2 + expandedJsonLength(item, cap, seen);
      if (length > cap) break;
    }
  }
  if (length > cap) length = Infinity;
  seen.set(value, length);
  return length;
}
