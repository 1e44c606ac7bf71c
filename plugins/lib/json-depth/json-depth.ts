/**
 * Deepest nesting of arrays and objects the gateway takes in JSON it parses from a peer and then serialises again or
 * walks: a client's request body (`ai`, `mcp` backends) or an MCP target's message. `JSON.parse` takes any depth (a
 * 400 KB text nests 200,000 levels), `JSON.stringify` and structured cloning recurse and run out of stack. MCP
 * messages and LLM requests (tool schemas included) nest a few dozen levels. ADR 0134, ADR 0148.
 */
export const MAX_JSON_DEPTH = 512;

/** Whether `value` nests arrays and objects more than `max` levels deep; iterative, so any depth is measured. */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (typeof node !== 'object' || node === null) continue;
    if (depth > max) return true;
    for (const child of Array.isArray(node) ? node : Object.values(node)) if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
  }
  return false;
}
