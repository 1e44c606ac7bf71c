/** A node of a checked cel-js AST, as far as the gateway's patches read it. */
export interface EngineNode {
  readonly op: string;
  readonly args: unknown;
  readonly meta?: { readonly alternate?: EngineNode };
  handle?: (...args: unknown[]) => unknown;
  evaluate(ev: unknown, ast: unknown, ctx: unknown): unknown;
}

export function isNode(x: unknown): x is EngineNode {
  return x !== null && typeof x === 'object' && typeof (x as { op?: unknown }).op === 'string' && typeof (x as { evaluate?: unknown }).evaluate === 'function';
}

/**
 * Every node of a cel-js AST, each once: a node's `args` (a node, a list of nodes and names, or a comprehension's
 * record of nodes) and the expansion of a macro (`meta.alternate`). Collected before `visit` runs, so a visit may
 * replace nodes without the walk seeing the replacements.
 */
export function forEachNode(root: unknown, visit: (node: EngineNode) => void): void {
  const seen = new Set<unknown>();
  const nodes: EngineNode[] = [];
  const walk = (x: unknown): void => {
    if (x === null || typeof x !== 'object' || seen.has(x)) return;
    seen.add(x);
    if (Array.isArray(x)) {
      for (const item of x) walk(item);
      return;
    }
    if (!isNode(x)) return;
    nodes.push(x);
    const alternate = x.meta?.alternate;
    if (alternate !== undefined) walk(alternate);
    const args = x.args;
    if (Array.isArray(args) || isNode(args)) walk(args);
    else if (args !== null && typeof args === 'object') for (const value of Object.values(args)) walk(value);
  };
  walk(root);
  for (const node of nodes) visit(node);
}
