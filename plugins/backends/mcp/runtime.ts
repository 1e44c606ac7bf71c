import type { PluginSpans } from 'switchyard/sdk';
import type { Logger } from 'switchyard/sdk';
import type { McpMetrics } from './metrics.ts';
import { RpcCode, RpcFailure } from './jsonrpc.ts';
import { TargetError } from './target-errors.ts';
import type { CompiledTarget } from './target.ts';

/** What every session of one backend shares: the compiled targets and the backend's modes. */
export interface BackendRuntime {
  readonly targets: readonly CompiledTarget[];
  /** More than one target, or `prefixMode: always`: names are prefixed and the gateway answers `initialize`. */
  readonly multiplexed: boolean;
  readonly failOpen: boolean;
  readonly stateful: boolean;
  readonly logger: Logger;
  readonly key: Buffer;
  /** The backend fingerprint, bound into sealed session ids. */
  readonly aad: Buffer;
  /** Client requests one session may have in progress (`maxPendingRequests`). */
  readonly maxPendingRequests: number;
  readonly metrics?: McpMetrics;
  /** `ctx.spans`: one span per client JSON-RPC method and per target call when the gateway traces. */
  readonly spans?: PluginSpans;
}

export type Json = Record<string, unknown>;

/** Gateway identity in multiplexed `initialize` (and `server/discover`) answers. */
export const SERVER_INFO = { name: 'switchyard', version: '0.1.0' };
/** JSON-RPC code of the gateway's own limits (too many sessions, processes or requests): try again later. */
export const LIMIT_CODE = -32000;

/** MCP's log levels (RFC 5424 severities), least severe first. */
export const LOG_LEVELS: readonly string[] = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];

/** A target failure as the client's JSON-RPC error: its code and HTTP status (503 at a limit, 504 timed out, else 500). */
export function failureOf(err: unknown): RpcFailure {
  if (err instanceof RpcFailure) return err;
  if (err instanceof TargetError) return new RpcFailure(err.kind.code, err.message, err.kind.httpStatus);
  return new RpcFailure(RpcCode.internalError, (err as Error)?.message ?? String(err), 500);
}
