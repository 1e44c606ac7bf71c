const MACROS = new Set(['all', 'exists', 'exists_one', 'map', 'filter']);

type Found = (node: { op: string; args: unknown }, bound: ReadonlySet<string>) => boolean;

function offsetOf(node: unknown): number {
  const { start, pos } = node as { start?: number; pos?: number };
  return start ?? pos ?? 0;
}

/** The first node (in source order) `found` accepts, macro bindings shadowing the free variables they name. */
function firstAt(node: unknown, found: Found, bound: ReadonlySet<string>): number | undefined {
  if (Array.isArray(node)) {
    for (const n of node) {
      const at = firstAt(n, found, bound);
      if (at !== undefined) return at;
    }
    return undefined;
  }
  if (node === null || typeof node !== 'object' || !('op' in node)) return undefined;
  const x = node as { op: string; args: unknown };
  if (found(x, bound)) return offsetOf(x);
  const { op, args } = x;
  if (op === 'rcall' && Array.isArray(args) && MACROS.has(args[0] as string) && Array.isArray(args[2])) {
    const [binding, ...body] = args[2] as unknown[];
    const v = (binding as { op?: string; args?: unknown } | undefined)?.op === 'id' ? String((binding as { args: unknown }).args) : undefined;
    return firstAt(args[1], found, bound) ?? firstAt(body, found, v === undefined ? bound : new Set([...bound, v]));
  }
  return firstAt(args, found, bound);
}

const isFree = (node: unknown, name: string, bound: ReadonlySet<string>): boolean => {
  const n = node as { op?: string; args?: unknown } | null;
  return n?.op === 'id' && n.args === name && !bound.has(name);
};

/**
 * Where a parsed expression (cel-js AST: `{ op, args }`) first reads `name`: a free variable (`llm`), or one field of
 * it (`llm.inputTokens`, also as `llm.?inputTokens` or `llm["inputTokens"]`). Its offset in the source, or undefined.
 */
export function readAt(root: unknown, name: string): number | undefined {
  const dot = name.indexOf('.');
  if (dot < 0) return firstAt(root, (x, bound) => x.op === 'id' && isFree(x, name, bound), new Set());
  const variable = name.slice(0, dot);
  const field = name.slice(dot + 1);
  return firstAt(
    root,
    (x, bound) => {
      if (x.op !== '.' && x.op !== '.?' && x.op !== '[]' && x.op !== '[?]') return false;
      const [obj, key] = x.args as [unknown, unknown];
      const keyName = typeof key === 'string' ? key : (key as { op?: string; args?: unknown } | null)?.op === 'value' ? (key as { args: unknown }).args : undefined;
      return keyName === field && isFree(obj, variable, bound);
    },
    new Set(),
  );
}
