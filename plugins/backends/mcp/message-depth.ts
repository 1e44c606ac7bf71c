import type { RpcMessage } from './jsonrpc.ts';
import { RpcCode } from './jsonrpc.ts';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../../lib/json-depth/json-depth.ts';

/** The shared bound (plugins/lib/json-depth): a target's message nested deeper ran out of stack when serialised. */
export const MAX_MESSAGE_DEPTH = MAX_JSON_DEPTH;

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
