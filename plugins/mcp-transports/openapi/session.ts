import {
  ErrorCode as RpcCode,
  isJSONRPCNotification,
  isJSONRPCRequest,
  LATEST_PROTOCOL_VERSION,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '@modelcontextprotocol/sdk/types.js';
import type { CallToolResult, Implementation, JSONRPCMessage, JSONRPCRequest, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { McpUpstream } from '../../lib/mcp/upstream-contract.ts';

/** What a session serves: the tools of one OpenAPI target, bound to one client session's connection. */
export interface ToolHandler {
  readonly serverInfo: Implementation;
  readonly tools: readonly Tool[];
  hasTool(name: string): boolean;
  /** Run `listener` whenever `tools` changes (the document was read again); returns the way to stop. */
  onToolsChanged?(listener: () => void): () => void;
  /** Run a call; never rejects for API failures (those are `isError` results). */
  callTool(name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<CallToolResult>;
}

/** A JSON-RPC error to answer with. */
class RpcError extends Error {
  readonly code: number;
  constructor(code: number, message: string) {
    super(message);
    this.code = code;
  }
}

/** Methods answered with an empty list: an OpenAPI target has no prompts or resources. */
const EMPTY_LISTS: Readonly<Record<string, string>> = {
  'prompts/list': 'prompts',
  'resources/list': 'resources',
  'resources/templates/list': 'resourceTemplates',
};

/**
 * An in-process MCP server over an `McpUpstream`: what the `mcp` backend sees of an OpenAPI target. Requests
 * are answered locally (`initialize`, `ping`, `tools/list`, `tools/call`, empty prompt and resource lists,
 * `logging/setLevel` accepted and ignored);
 * other methods get -32601 and a call to an unknown tool -32602. Answers arrive through `onmessage`, never
 * during `send`. `notifications/cancelled` aborts the named call's HTTP request and suppresses its answer. Once
 * initialized, a change of the handler's tools is sent as `notifications/tools/list_changed`.
 */
export class OpenApiSession implements McpUpstream {
  onmessage?: (message: JSONRPCMessage) => void;
  onerror?: (error: Error) => void;
  onclose?: () => void;
  readonly sessionId: string | undefined = undefined;

  private readonly handler: ToolHandler;
  private readonly inflight = new Map<string | number, AbortController>();
  private closed = false;
  private initialized = false;
  private readonly unsubscribe: (() => void) | undefined;

  constructor(handler: ToolHandler) {
    this.handler = handler;
    this.unsubscribe = handler.onToolsChanged?.(() => {
      if (this.initialized) this.emit({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    });
  }

  /** Called after `initialize`, or before `start` when the gateway resumes a client session (no `initialize` then). */
  setProtocolVersion(): void {
    this.initialized = true;
  }

  async start(): Promise<void> {
    if (this.closed) throw new Error('the OpenAPI session is closed');
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.closed) throw new Error('the OpenAPI session is closed');
    if (isJSONRPCRequest(message)) {
      void this.answer(message);
      return;
    }
    if (isJSONRPCNotification(message)) {
      if (message.method === 'notifications/cancelled') {
        const id = (message.params as { requestId?: string | number } | undefined)?.requestId;
        if (id !== undefined) this.inflight.get(id)?.abort(new Error('cancelled by the client'));
      }
      return;
    }
    // Responses: this server never sends requests, so there is nothing waiting for them.
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.unsubscribe?.();
    for (const controller of this.inflight.values()) controller.abort(new Error('the session closed'));
    this.inflight.clear();
    this.onclose?.();
  }

  private async answer(request: JSONRPCRequest): Promise<void> {
    const controller = new AbortController();
    this.inflight.set(request.id, controller);
    let reply: JSONRPCMessage;
    try {
      const result = await this.dispatch(request, controller.signal);
      reply = { jsonrpc: '2.0', id: request.id, result };
    } catch (err) {
      const code = err instanceof RpcError ? err.code : RpcCode.InternalError;
      reply = { jsonrpc: '2.0', id: request.id, error: { code, message: (err as Error)?.message ?? String(err) } };
    } finally {
      if (this.inflight.get(request.id) === controller) this.inflight.delete(request.id);
    }
    // A cancelled request gets no answer (MCP cancellation); a closed session delivers nothing more.
    if (controller.signal.aborted || this.closed) return;
    if (request.method === 'initialize' && !('error' in reply)) this.initialized = true;
    this.emit(reply);
  }

  /** Deliver a message on a later turn (never during `send`), unless the session closed meanwhile. */
  private emit(message: JSONRPCMessage): void {
    setImmediate(() => {
      if (this.closed) return;
      try {
        this.onmessage?.(message);
      } catch (err) {
        this.onerror?.(err as Error);
      }
    });
  }

  private async dispatch(request: JSONRPCRequest, signal: AbortSignal): Promise<Record<string, unknown>> {
    const params = (request.params ?? {}) as Record<string, unknown>;
    switch (request.method) {
      case 'initialize': {
        const asked = params.protocolVersion;
        const protocolVersion = typeof asked === 'string' && SUPPORTED_PROTOCOL_VERSIONS.includes(asked) ? asked : LATEST_PROTOCOL_VERSION;
        const tools = this.handler.onToolsChanged ? { listChanged: true } : {};
        return { protocolVersion, capabilities: { tools }, serverInfo: this.handler.serverInfo };
      }
      case 'ping':
      // Accepted and ignored (this server sends no log messages), so a gateway fanning it out sees no failure.
      case 'logging/setLevel':
        return {};
      case 'tools/list':
        // A copy: the gateway owns every message a target sends, as it would own one parsed from the wire, and renames
        // a multiplexed list's items in place (`petstore_getPetById`); the handler's list is shared by every session.
        return { tools: structuredClone(this.handler.tools) };
      case 'tools/call': {
        const name = params.name;
        if (typeof name !== 'string') throw new RpcError(RpcCode.InvalidParams, 'tools/call needs a tool `name`');
        const args = params.arguments ?? {};
        if (typeof args !== 'object' || args === null || Array.isArray(args)) throw new RpcError(RpcCode.InvalidParams, '`arguments` must be an object');
        if (!this.handler.hasTool(name)) throw new RpcError(RpcCode.InvalidParams, `Unknown tool: ${name}`);
        return (await this.handler.callTool(name, args as Record<string, unknown>, signal)) as Record<string, unknown>;
      }
      default: {
        const list = EMPTY_LISTS[request.method];
        if (list) return { [list]: [] };
        throw new RpcError(RpcCode.MethodNotFound, `Method not found: ${request.method}`);
      }
    }
  }
}
