import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { McpConnectOptions, McpUpstream } from '../../lib/mcp/upstream-contract.ts';

/**
 * One client session's connection to a legacy SSE target, over the SDK's client transport. A legacy session lives
 * as long as its GET stream: when the stream breaks, the connection is reported closed (the SDK's EventSource would
 * silently reconnect into a new, uninitialized upstream session), and the gateway re-initializes on the next request.
 */
export class SseUpstream implements McpUpstream {
  onmessage?: (message: JSONRPCMessage) => void;
  onerror?: (error: Error) => void;
  onclose?: () => void;
  private readonly transport: SSEClientTransport;
  private started = false;
  private closed = false;

  constructor(url: URL, fetchFn: typeof fetch, options: McpConnectOptions) {
    this.transport = new SSEClientTransport(url, {
      fetch: fetchFn,
      eventSourceInit: { fetch: fetchFn },
      requestInit: options.headers ? { headers: { ...options.headers } } : undefined,
    });
    this.transport.onmessage = (m) => this.onmessage?.(m);
    this.transport.onerror = (e) => {
      if (!this.started) return;
      this.onerror?.(new Error(`the SSE stream broke: ${e.message}`));
      void this.close();
    };
    this.transport.onclose = () => {
      // Before the endpoint arrived, `start` rejects with the reason (an endpoint on another origin): the SDK's
      // close comes first and would be reported as a bare "closed the connection".
      if (this.closed || !this.started) return;
      this.closed = true;
      this.onclose?.();
    };
  }

  setProtocolVersion(version: string): void {
    this.transport.setProtocolVersion(version);
  }

  async start(): Promise<void> {
    try {
      await this.transport.start();
    } catch (err) {
      // The EventSource keeps retrying in the background; stop it.
      this.closed = true;
      await this.transport.close().catch(() => undefined);
      throw err;
    }
    this.started = true;
  }

  send(message: JSONRPCMessage): Promise<void> {
    return this.transport.send(message);
  }

  async close(): Promise<void> {
    await this.transport.close();
  }
}
