import { randomInt } from 'node:crypto';
import type { AttemptHook, Logger, PolicySet, PluginSpans } from 'switchyard/sdk';
import type { McpTransportInstance } from '../../lib/mcp/upstream-contract.ts';
import type { RpcMessage } from './jsonrpc.ts';
import type { ClientEnvelope } from './revisions/2026-07-28/protocol.ts';
import type { TargetConn } from './target-conn.ts';
import { VouchedNames } from '../../lib/telemetry/known-names.ts';
import { ShortenedNames } from './naming.ts';

/** One configured target, compiled once per config load. */
export interface CompiledTarget {
  readonly name: string;
  readonly transport: McpTransportInstance;
  /** Route and backend policies merged with the target's own. */
  readonly policies: PolicySet;
  /**
   * The target's own policies when they have request hooks (`requestHeaderModifier`, `mcpAuthorization`): run on a
   * copy of the client's request for this target alone (the route's already ran on the request itself).
   */
  readonly requestPolicies: PolicySet | undefined;
  /** Deadline for each request to this target (from `timeout` facets); 0 means none. */
  readonly requestTimeoutMs: number;
  /** The config name of `requestTimeoutMs`, for messages (`timeout.requestTimeout`). */
  readonly requestTimeoutSource?: string;
  /** Deadline for starting the target: connect or spawn, then `initialize` answered (`startupTimeout`). */
  readonly startupTimeoutMs: number;
  /**
   * Tool and prompt names the target declared in its lists or answered without an error: the only ones a span name or
   * metric label shows (ADR 0130). Shared by the backend's sessions.
   */
  readonly names: DeclaredNames;
}

/** A target's own names, by kind. */
export interface DeclaredNames {
  readonly tool: VouchedNames;
  readonly prompt: VouchedNames;
  /** Tool names shortened to fit 64 characters once prefixed (multiplexed), to route calls back (ADR 0182). */
  readonly shortened: ShortenedNames;
}

/** Names kept per target and kind: more than a server declares, so a server declaring or answering any name is bounded. */
const MAX_DECLARED = 1000;

/** Shortened tool names kept per target: an `openapi` target gives at most 10,000 tools (ADR 0163). */
const MAX_SHORTENED = 10_000;

export function declaredNames(): DeclaredNames {
  return { tool: new VouchedNames(MAX_DECLARED), prompt: new VouchedNames(MAX_DECLARED), shortened: new ShortenedNames(MAX_SHORTENED) };
}

/** The client as one target sees it. */
export interface TargetClient {
  /** Client headers passed to an HTTP target. */
  readonly headers: Readonly<Record<string, string>> | undefined;
  /** Per-request hook of the target's policies (`backendAuth`), for every HTTP request made to it. */
  readonly onAttempt: AttemptHook | undefined;
}

/** What a connection needs from the session that owns it. */
export interface ConnHost {
  /** The client's `initialize` params, sent to every fresh upstream. */
  readonly initParams: Record<string, unknown>;
  /** How connections to `target` present the client (headers, backendAuth), after the target's own policies. */
  targetClient(target: CompiledTarget): Promise<TargetClient>;
  readonly logger: Logger;
  /** `ctx.spans`: a CLIENT span per target request when the gateway traces. */
  readonly spans?: PluginSpans;
  /**
   * Set when the session serves a 2026-07-28 client: targets that serve that revision too are spoken to in it
   * (no `initialize`; this envelope on every request); the others are initialized with `initParams` as usual.
   */
  readonly envelope: ClientEnvelope | undefined;
  /** A notification or server-to-client request from the target. */
  fromTarget(conn: TargetConn, message: RpcMessage): void;
  /** A fresh upstream session was initialized (not a resumed one): the first start, or a restart. */
  targetInitialized?(conn: TargetConn): void;
  /** The connection was lost (a crash, a dropped connection) while the session still uses it. */
  targetDown?(conn: TargetConn): void;
}

/** How long starting a target (spawn or connect, then `initialize`) may take when `startupTimeout` is not set. */
export const DEFAULT_STARTUP_TIMEOUT_MS = 30_000;
/** Pages of a list followed per target before giving up (a target paging forever). */
export const MAX_PAGES = 100;
/**
 * Bytes (of JSON) of one target's list items held while its pages are followed: one page is bounded by the transport's
 * message limit, but 100 of them were not (3.2 GiB per target per list).
 */
export const MAX_LIST_BYTES = 32 * 1024 * 1024;

/**
 * The id before a connection's first request. A connection resuming an upstream session another gateway made (a
 * sealed session id) shares it with that gateway: from 0 it would reuse the id of `initialize`, and two calls in
 * flight could share one id, of which the target answers one. It starts at a random point instead, within 32-bit
 * ids (some targets keep ids in an int), 2^24 below their end.
 */
export function firstRequestId(resumed: boolean): number {
  return resumed ? randomInt(2 ** 24, 2 ** 31 - 2 ** 24) : 0;
}

/** Capability names of an initialize result, kept in the sealed session id. */
export function capabilityNames(capabilities: Record<string, unknown> | undefined): string[] {
  return capabilities ? Object.keys(capabilities).filter((k) => capabilities[k] !== undefined && capabilities[k] !== null) : [];
}

