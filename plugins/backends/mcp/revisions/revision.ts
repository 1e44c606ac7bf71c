import type { Exchange, Reply } from 'switchyard/sdk';
import type { Call } from '../responder.ts';
import type { RpcMessage } from '../jsonrpc.ts';
import type { McpSession } from '../session.ts';
import type { TargetConn } from '../target-conn.ts';

/** One POST body, parsed and checked to be JSON-RPC 2.0 (endpoint.ts). */
export interface ParsedPost {
  readonly messages: RpcMessage[];
  readonly batch: boolean;
  /** The client accepts an SSE response. */
  readonly sse: boolean;
}

/**
 * One protocol revision at the edge of the backend (ADR 0031). The endpoint asks the adapters newest first; each
 * serves what belongs to its revision and leaves the rest (undefined) to the next. Everything behind the adapters
 * (sessions, routing, aggregation, target connections) is revision-neutral except at the `SessionRevision` hooks.
 */
export interface RevisionAdapter {
  /** The revision the adapter is named for (its folder under revisions/). */
  readonly revision: string;
  /** The `MCP-Protocol-Version` values it serves. */
  readonly versions: readonly string[];
  /** Whether an `MCP-Protocol-Version` header value is this revision's (the newest also claims later, unknown dates). */
  claims(version: string): boolean;
  /** Serve a POST if it is this revision's; undefined leaves it to the next adapter. */
  post(ex: Exchange, post: ParsedPost): Promise<Reply> | Reply | undefined;
  /** Serve any other method (GET, DELETE, ...) if this revision decides it; undefined leaves it to the next adapter. */
  other(ex: Exchange): Promise<Reply> | Reply | undefined;
}

/** What a revision changes inside a client session: its own methods, and target messages it handles itself. */
export interface SessionRevision {
  readonly revision: string;
  /** A method only this revision has, served here; undefined when `method` is not one of them. */
  route(session: McpSession, call: Call, method: string, params: Record<string, unknown>): Promise<void> | undefined;
  /** A message from a target this revision handles itself (true); false leaves it to the common relay. */
  fromTarget(session: McpSession, conn: TargetConn, m: RpcMessage): boolean;
}

/** The `initialize` revisions change nothing in the session: it is built for them. */
export const INITIALIZE_SESSION: SessionRevision = {
  revision: '2025-11-25',
  route: () => undefined,
  fromTarget: () => false,
};
