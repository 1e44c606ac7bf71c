import type { RpcMessage } from './jsonrpc.ts';
import { RpcCode } from './jsonrpc.ts';

/**
 * Deepest nesting of arrays and objects the gateway takes in a target's message. Valid JSON may nest without end (a
 * 200 KB answer nests 100,000 levels); serialising it for the client ran out of stack after the call had been
 * settled, and the client waited for ever. MCP messages nest a few dozen levels (tool schemas included). ADR 0134.
 */
export const MAX_MESSAGE_DEPTH = 512;

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

/**
 * A target's message as the gateway takes it: as it came, or, nested past MAX_MESSAGE_DEPTH, an answer becomes a
 * JSON-RPC error for its request (naming the target by `label`) and anything else is dropped (`dropped` says why).
 */
export function withinDepth(m: RpcMessage, label: string, dropped: (why: string) => void): RpcMessage | undefined {
  if (!nestsDeeperThan(m, MAX_MESSAGE_DEPTH)) return m;
  if (m.method !== undefined || m.id === undefined || m.id === null) {
    dropped(`\`${String(m.method)}\` nested deeper than ${MAX_MESSAGE_DEPTH} levels`);
    return undefined;
  }
  return { jsonrpc: '2.0', id: m.id, error: { code: RpcCode.internalError, message: `${label} answered with JSON nested deeper than ${MAX_MESSAGE_DEPTH} levels` } };
}
