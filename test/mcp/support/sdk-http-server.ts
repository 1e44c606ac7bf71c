// An in-process MCP server over streamable HTTP (the official SDK, test/helpers/mcp-sdk-http.ts) that records the
// JSON-RPC id of every request it receives, per upstream session, and offers: `whoami` (answers the request id it
// got) and `slow` (answers after `ms`, or records its cancellation).
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { sdkHttpServer } from '../../helpers/mcp-sdk-http.ts';

export interface SdkHttpServer {
  readonly port: number;
  /** Request ids received, by upstream session id (`initialize` for requests without one). */
  readonly ids: Map<string, (string | number)[]>;
  /** `slow` calls that ended by cancellation, and those that ran to their end. */
  readonly cancelled: number[];
  readonly finished: number[];
  stop(): Promise<void>;
}

export async function startSdkHttpServer(options: { json?: boolean } = {}): Promise<SdkHttpServer> {
  const ids = new Map<string, (string | number)[]>();
  const cancelled: number[] = [];
  const finished: number[] = [];
  const mcpServer = (): McpServer => {
    const server = new McpServer({ name: 'sdk-http', version: '1.0.0' });
    server.registerTool('whoami', { description: 'The JSON-RPC id of this request.', inputSchema: {} }, (_args, extra) => ({ content: [{ type: 'text', text: String(extra.requestId) }] }));
    server.registerTool('slow', { description: 'Answers after `ms`, unless cancelled.', inputSchema: { ms: z.number() } }, ({ ms }, extra) =>
      new Promise((resolve) => {
        const timer = setTimeout(() => {
          finished.push(ms);
          resolve({ content: [{ type: 'text', text: `slept ${ms}` }] });
        }, ms);
        extra.signal.addEventListener('abort', () => {
          clearTimeout(timer);
          cancelled.push(ms);
          resolve({ content: [{ type: 'text', text: 'cancelled' }] });
        });
      }),
    );
    return server;
  };
  const record = (body: unknown, sessionId: string | undefined): void => {
    for (const m of Array.isArray(body) ? body : [body]) {
      const message = m as { id?: string | number; method?: string };
      if (message.method === undefined || message.id === undefined) continue;
      const key = sessionId ?? 'initialize';
      let list = ids.get(key);
      if (!list) ids.set(key, (list = []));
      list.push(message.id);
    }
  };
  const { server, closeSessions } = sdkHttpServer(mcpServer, { json: options.json, onRequest: record });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    ids,
    cancelled,
    finished,
    stop: async () => {
      await closeSessions();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
