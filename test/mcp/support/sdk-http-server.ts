// An in-process MCP server over streamable HTTP: the official SDK (McpServer + StreamableHTTPServerTransport),
// stateful, on /mcp. It records the JSON-RPC id of every request it receives, per upstream session, and offers:
// `whoami` (answers the request id it got) and `slow` (answers after `ms`, or records its cancellation).
// `json: true` answers POSTs with one JSON body (the SDK's `enableJsonResponse`) instead of an event stream.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, Server } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

export interface SdkHttpServer {
  readonly port: number;
  /** Request ids received, by upstream session id. */
  readonly ids: Map<string, (string | number)[]>;
  /** `slow` calls that ended by cancellation, and those that ran to their end. */
  readonly cancelled: number[];
  readonly finished: number[];
  stop(): Promise<void>;
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

export async function startSdkHttpServer(options: { json?: boolean } = {}): Promise<SdkHttpServer> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
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

  const server: Server = createServer((req, res) => {
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
        await mcpServer().connect(created);
        transport = created;
      }
      for (const m of Array.isArray(body) ? body : body === undefined ? [] : [body]) {
        const message = m as { id?: string | number; method?: string };
        if (message.method !== undefined && message.id !== undefined) {
          const key = typeof sid === 'string' ? sid : 'initialize';
          let list = ids.get(key);
          if (!list) ids.set(key, (list = []));
          list.push(message.id);
        }
      }
      await transport.handleRequest(req, res, body);
    })().catch((err: Error) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`sdk http server: ${err.message}\n`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    ids,
    cancelled,
    finished,
    stop: async () => {
      for (const t of sessions.values()) await t.close().catch(() => undefined);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
