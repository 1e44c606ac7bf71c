import type { CompileContext, PolicySet } from 'switchyard/sdk';

/** `config.defaultTimeouts` when the context has none (a context built outside a config load). */
const FALLBACK = { backendRequestMs: 15_000, streamIdleMs: 300_000 };

/**
 * The deadlines of the HTTP requests an MCP transport makes to its target (ADR 0019 applied to MCP targets). A
 * `timeout` policy with a request deadline (on the target, the backend or the route) replaces the response-start
 * default; the TargetConn timer then carries it out for the whole call. `streamIdleTimeout` replaces the idle default.
 */
export interface McpDeadlines {
  /** Until the response headers arrive, per request (0 = none). */
  readonly responseMs: number;
  /** The config name of `responseMs`, for messages. */
  readonly responseSource: string;
  /** Longest silence inside a response body (0 = none). Never applied to standalone GET streams. */
  readonly idleMs: number;
  readonly idleSource: string;
}

export function mcpDeadlines(policies: PolicySet | undefined, ctx: CompileContext): McpDeadlines {
  const facets = policies?.facets;
  const defaults = ctx.defaultTimeouts ?? FALLBACK;
  const ownDeadline = facets?.requestTimeoutMs !== undefined || facets?.attemptTimeoutMs !== undefined;
  const idle = facets?.streamIdleTimeoutMs;
  return {
    responseMs: ownDeadline ? 0 : defaults.backendRequestMs,
    responseSource: 'config.defaultTimeouts.backendRequestTimeout',
    idleMs: idle ?? defaults.streamIdleMs,
    idleSource: idle !== undefined ? 'timeout.streamIdleTimeout' : 'config.defaultTimeouts.streamIdleTimeout',
  };
}

/** `1500ms`, `30s`, `2m`: a deadline as the config would write it. */
export function formatMs(ms: number): string {
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

/**
 * A request to the target ran out of time: `response` (no answer started within `ms`) or `idle` (its response went
 * quiet for `ms`). The MCP backend answers the client with a JSON-RPC error naming the target and the deadline.
 */
export class McpDeadlineError extends Error {
  override readonly name = 'McpDeadlineError';
  readonly kind: 'response' | 'idle';
  readonly ms: number;
  readonly source: string;
  constructor(kind: 'response' | 'idle', ms: number, source: string) {
    super(kind === 'response' ? `no answer started within ${formatMs(ms)} (${source})` : `sent nothing for ${formatMs(ms)} (${source})`);
    this.kind = kind;
    this.ms = ms;
    this.source = source;
  }

  /** The message for request `method`, after the target's name. */
  describe(method: string): string {
    return this.kind === 'response'
      ? `did not answer \`${method}\` within ${formatMs(this.ms)} (${this.source})`
      : `sent nothing for ${formatMs(this.ms)} (${this.source}) while answering \`${method}\``;
  }
}

/** Whether `err` is the kernel's timeout of a request (504) or a body that went quiet. */
export function isUpstreamTimeout(err: unknown): boolean {
  const e = err as { status?: unknown; code?: unknown } | undefined;
  return e?.status === 504 || e?.code === 'UND_ERR_BODY_TIMEOUT';
}
