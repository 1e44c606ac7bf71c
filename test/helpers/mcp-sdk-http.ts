// The official MCP SDK (v1) serving streamable HTTP in stateful mode on /mcp, as its examples do: every `initialize`
// opens a session with its own transport and McpServer (`makeServer`), later requests carry its `Mcp-Session-Id`.
// `json: true` answers POSTs with one JSON body (the SDK's `enableJsonResponse`) instead of an event stream. Used by
// the bench's MCP upstream and by tests that need a real SDK server over HTTP. `onRequest` sees each parsed body.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, Server } from 'node:http';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';

export interface SdkHttpOptions {
  readonly json?: boolean;
  /** Each POST's parsed body, with the session id it named (undefined for `initialize`), before the SDK sees it. */
  readonly onRequest?: (body: unknown, sessionId: string | undefined) => void;
}

function readJson(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      try {
        resolve(chunks.length === 0 ? undefined : JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch (err) {
        reject(err as Error);
      }
    });
    req.on('error', reject);
  });
}

/** An HTTP server (not listening yet) and a function closing every session's transport. */
export function sdkHttpServer(makeServer: () => McpServer, options: SdkHttpOptions = {}): { server: Server; closeSessions(): Promise<void> } {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
    void (async () => {
      if (!req.url?.startsWith('/mcp')) return void res.writeHead(404).end();
      const sid = req.headers['mcp-session-id'];
      const body = req.method === 'POST' ? await readJson(req) : undefined;
      let transport = typeof sid === 'string' ? sessions.get(sid) : undefined;
      if (!transport) {
        if (sid !== undefined) {
          res.writeHead(404, { 'content-type': 'application/json' });
          return void res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } }));
        }
        if (req.method !== 'POST' || !isInitializeRequest(body)) {
          res.writeHead(400, { 'content-type': 'application/json' });
          return void res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'No session id' } }));
        }
        const created = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          enableJsonResponse: options.json === true,
          onsessioninitialized: (id) => void sessions.set(id, created),
        });
        created.onclose = () => {
          if (created.sessionId) sessions.delete(created.sessionId);
        };
        await makeServer().connect(created);
        transport = created;
      }
      if (body !== undefined) options.onRequest?.(body, typeof sid === 'string' ? sid : undefined);
      await transport.handleRequest(req, res, body);
    })().catch((err: Error) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`mcp sdk server: ${err.message}\n`);
    });
  });
  return {
    server,
    closeSessions: async () => {
      for (const t of sessions.values()) await t.close().catch(() => undefined);
    },
  };
}
