// Bench MCP upstream: the official SDK v1 server (McpServer + StreamableHTTPServerTransport) in stateful mode on
// /mcp, with one tool, `echo`. Every `initialize` opens a session (its own transport and McpServer, as in the SDK's
// examples); later requests carry its `Mcp-Session-Id`. POSTs are answered the SDK's default way: SSE when the
// client accepts it (the bench's clients do), one event per answer, then the stream ends.
// Usage: node test/bench/mcp-upstream.ts PORT [--json]   (prints `listening PORT` once it accepts connections;
// `--json`: answer POSTs with one JSON body, the SDK's `enableJsonResponse`)
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

function mcpServer(): McpServer {
  const server = new McpServer({ name: 'bench-mcp-upstream', version: '1.0.0' });
  server.registerTool(
    'echo',
    { description: 'Echoes its input.', inputSchema: { text: z.string() } },
    ({ text }) => ({ content: [{ type: 'text', text: `echo: ${text}` }] }),
  );
  return server;
}

const sessions = new Map<string, StreamableHTTPServerTransport>();
const enableJsonResponse = process.argv.includes('--json');

function readJson(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch (err) {
        reject(err as Error);
      }
    });
    req.on('error', reject);
  });
}

const port = Number(process.argv[2] ?? 0);
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
        enableJsonResponse,
        onsessioninitialized: (id) => void sessions.set(id, created),
      });
      created.onclose = () => {
        if (created.sessionId) sessions.delete(created.sessionId);
      };
      await mcpServer().connect(created);
      transport = created;
    }
    await transport.handleRequest(req, res, body);
  })().catch((err: Error) => {
    if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
    res.end(`mcp upstream: ${err.message}\n`);
  });
});
server.listen(port, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : port}\n`);
});
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => process.exit(0));
