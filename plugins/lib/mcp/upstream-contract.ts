import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { AttemptHook, Logger, PolicySet } from 'switchyard/sdk';

/**
 * The most one message from a target may take, on every transport (ADR 0143): a JSON answer or one event of an event
 * stream (streamable HTTP, legacy SSE), one line of a stdio process, in bytes. Past it the message is not read: the
 * request it answers fails with a JSON-RPC error and the connection (the process) is closed, to start again on the
 * session's next request. 32 MiB is far past a real answer (a million tokens is about 4 MiB of text).
 */
export const MAX_TARGET_MESSAGE_BYTES = 32 * 1024 * 1024;
/** {@link MAX_TARGET_MESSAGE_BYTES} in words, for errors. */
export const MAX_TARGET_MESSAGE = `${MAX_TARGET_MESSAGE_BYTES / 1024 / 1024} MiB`;

/** Per-message options; open-ended so an upstream stays usable as the MCP SDK's `Transport`. */
export interface UpstreamSendOptions {
  /** The client request's id (ADR 0025): HTTP transports send it as `x-request-id`; stdio has no headers. */
  readonly clientRequestId?: string;
  readonly [other: string]: unknown;
}

/**
 * A live connection from the gateway to one MCP target for one client session. The shape mirrors the MCP
 * SDK's `Transport`, so SDK client transports (stdio, SSE, streamable HTTP) fit it directly and an in-process
 * adapter (OpenAPI) can implement it too.
 */
export interface McpUpstream {
  /** Open the connection (spawn the process, open the stream). Resolves when `send` may be called. */
  start(): Promise<void>;
  /**
   * Send one JSON-RPC message (request, notification or response) to the target. `clientRequestId`: see UpstreamSendOptions.
   */
  send(message: JSONRPCMessage, options?: UpstreamSendOptions): Promise<void>;
  /** Close the connection and release its resources (kill the child process, DELETE the upstream session). */
  close(): Promise<void>;
  /** Messages from the target: responses, notifications and server-to-client requests. */
  onmessage?: (message: JSONRPCMessage) => void;
  onerror?: (error: Error) => void;
  /** The connection ended (process exit, stream closed). */
  onclose?: () => void;
  /** The target's own session id (streamable HTTP), kept in the sealed client session so it can be resumed. */
  readonly sessionId?: string | undefined;
  /**
   * The protocol version negotiated with the target (as in the SDK `Transport`): HTTP transports send it as
   * `MCP-Protocol-Version`. Called after `initialize`, or before `start` when resuming an upstream session.
   */
  setProtocolVersion?(version: string): void;
  /**
   * Close the connection but leave the target's session alive (gateway shutdown: another replica holding the session
   * key may resume it). Transports without resumable sessions omit it and `close` is used.
   */
  detach?(): Promise<void>;
  /**
   * Stop waiting for the answer to request `id` and tell the target (2026-07-28 targets over HTTP: abort the
   * request's response stream, the revision's cancellation signal). Transports without it get
   * `notifications/cancelled`.
   */
  cancel?(id: string | number): void;
  /**
   * Set by the backend: the pace of the client that request `id`'s answer stream is relayed to, when that stream serves
   * one client request alone (a POST answered as SSE). The transport stops reading it while the client has not taken
   * what was relayed (ADR 0182); undefined: read at full speed, the client's bound cuts it (a shared stream).
   */
  flowGate?: (id: string | number) => FlowGate | undefined;
}

/** How fast a client takes what is relayed to it (see `McpUpstream.flowGate`). */
export interface FlowGate {
  /** What was relayed waits for the client: stop reading until `whenDrained`. */
  readonly backlogged: boolean;
  /** Run `callback` once the client took it, or left. */
  whenDrained(callback: () => void): void;
}

/** What a 2026-07-28 target says about itself in its `server/discover` answer. */
export interface McpDiscovery {
  /** The revisions it serves (at least one from 2026-07-28 on, else it is treated as an `initialize`-revision target). */
  readonly supportedVersions: readonly string[];
  readonly capabilities: Record<string, unknown>;
  readonly serverInfo: Record<string, unknown> | undefined;
  readonly instructions: string | undefined;
  /** The whole result as the target sent it. */
  readonly result: Record<string, unknown>;
}

/** What the MCP backend passes when it opens a target for a client session. */
export interface McpConnectOptions {
  /** Resume this upstream session instead of starting a new one (from a sealed client session id). */
  readonly resumeSessionId?: string;
  /** Client request headers the target should receive (after gateway auth stripped what it consumed). */
  readonly headers?: Readonly<Record<string, string>>;
  /** The target's policies (per-target `policies` merged over the route's): TLS facets, backendAuth, ... */
  readonly policies?: PolicySet;
  /**
   * Run on every HTTP request made to the target for this connection (pass it as `onAttempt` to
   * `UpstreamTarget.request`): the target's `backendAuth` adds its credential or signature here.
   */
  readonly onAttempt?: AttemptHook;
  readonly logger: Logger;
  /** The target as messages name it (`target \`x\` (mcp: http://h:p/mcp)`), for errors a transport answers with. */
  readonly label?: string;
  /**
   * Speak the 2026-07-28 revision (no `initialize`, no session; every request carries its `_meta` envelope and the
   * `MCP-Protocol-Version`/`Mcp-Method`/`Mcp-Name` headers). Only after `discover` said the target serves it.
   */
  readonly revision?: '2026-07-28';
}

/** What `discover` needs: the client's headers (the target may require its credentials), as for `connect`. */
export interface McpDiscoverOptions {
  readonly headers?: Readonly<Record<string, string>>;
  readonly onAttempt?: AttemptHook;
  readonly logger: Logger;
}

/** What an `mcpTransport` plugin (`stdio`, `sse`, `mcp`, `openapi`) compiles to. */
export interface McpTransportInstance {
  /** The transport key, for logs and errors. */
  readonly kind: string;
  /** A short description of where it connects (`node server.js`, `http://h:p/mcp`), for error messages. */
  readonly describe: string;
  /**
   * Called once at config load, before any `connect`, with the target's effective policies (the route's and
   * backend's merged with the target's own), so the transport can build TLS-aware pools at compile time (with
   * `ctx.connect`); the backend awaits it.
   */
  configure?(policies: PolicySet): void | Promise<void>;
  /** Create a connection for one client session (not started yet). */
  connect(options: McpConnectOptions): McpUpstream | Promise<McpUpstream>;
  /**
   * Whether the target serves the 2026-07-28 revision: probed with `server/discover` once and cached (a definite
   * answer either way; failures to reach it are not cached). Undefined: a legacy target. Transports that cannot
   * carry the revision (stdio, SSE, OpenAPI) omit it.
   */
  discover?(options: McpDiscoverOptions): Promise<McpDiscovery | undefined>;
  /** Release shared resources when the config generation is retired. */
  dispose?(): void;
}

/**
 * `start` or `send` refused because the target is at a limit of its own (a stdio target already runs `maxProcesses`
 * children, or its process is not reading what waits for its stdin): the client gets a JSON-RPC error (HTTP 503)
 * saying so, rather than a failure.
 */
export class McpTargetBusy extends Error {
  override readonly name = 'McpTargetBusy';
}

/**
 * Reported through `onerror` when the target sent something that is not MCP (an event whose data is not JSON, a
 * message that is not JSON-RPC): it is dropped, and the backend logs it at warn level, since a request it may have
 * answered would otherwise wait for its deadline with nothing said of why.
 */
export class McpProtocolViolation extends Error {
  override readonly name = 'McpProtocolViolation';
}
