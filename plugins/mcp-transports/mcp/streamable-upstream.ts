import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { McpConnectOptions, McpUpstream } from '../../lib/mcp/upstream-contract.ts';

/**
 * One client session's connection to a streamable-HTTP target, over the SDK's client transport (JSON and SSE
 * replies, the GET stream opened after `notifications/initialized`, SSE resumption with Last-Event-ID).
 */
export class StreamableUpstream implements McpUpstream {
  onmessage?: (message: JSONRPCMessage) => void;
  onerror?: (error: Error) => void;
  onclose?: () => void;
  private readonly transport: StreamableHTTPClientTransport;
  private readonly resuming: boolean;

  constructor(url: URL, fetchFn: typeof fetch, options: McpConnectOptions) {
    this.resuming = options.resumeSessionId !== undefined;
    this.transport = new StreamableHTTPClientTransport(url, {
      fetch: fetchFn,
      requestInit: options.headers ? { headers: { ...options.headers } } : undefined,
      sessionId: options.resumeSessionId,
    });
    this.transport.onmessage = (m) => this.onmessage?.(m);
    this.transport.onerror = (e) => this.onerror?.(e);
    this.transport.onclose = () => this.onclose?.();
  }

  get sessionId(): string | undefined {
    return this.transport.sessionId;
  }

  setProtocolVersion(version: string): void {
    this.transport.setProtocolVersion(version);
  }

  async start(): Promise<void> {
    await this.transport.start();
    // A resumed session skips `initialize`, so the SDK would never open the server-to-client GET stream; an
    // empty resumption token opens a fresh one (a 404 here means the upstream session is gone).
    if (!this.resuming) return;
    try {
      await this.transport.resumeStream('');
    } catch (err) {
      // 404 (or a 400 about the session, as SDK-based servers answer): the upstream session is gone and the caller
      // starts a new one. Anything else (409: another replica still holds the session's one GET stream) leaves the
      // session usable for requests.
      const code = (err as { code?: unknown }).code;
      if (code === 404 || (code === 400 && /session/i.test((err as Error).message))) throw err;
    }
  }

  send(message: JSONRPCMessage): Promise<void> {
    return this.transport.send(message);
  }

  /** End the upstream session (DELETE) and close. */
  async close(): Promise<void> {
    if (this.transport.sessionId) await this.transport.terminateSession().catch(() => undefined);
    await this.transport.close();
  }

  /** Close without ending the upstream session, so another gateway replica can resume it. */
  async detach(): Promise<void> {
    await this.transport.close();
  }
}
