// Bench MCP upstream: the official SDK v1 server (McpServer + StreamableHTTPServerTransport) in stateful mode on
// /mcp, with one tool, `echo` (the plumbing: test/helpers/mcp-sdk-http.ts). POSTs are answered the SDK's default way:
// SSE when the client accepts it (the bench's clients do), one event per answer, then the stream ends.
// Usage: node test/bench/mcp-upstream.ts PORT [--json]   (prints `listening PORT` once it accepts connections;
// `--json`: answer POSTs with one JSON body, the SDK's `enableJsonResponse`)
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { sdkHttpServer } from '../helpers/mcp-sdk-http.ts';

function mcpServer(): McpServer {
  const server = new McpServer({ name: 'bench-mcp-upstream', version: '1.0.0' });
  server.registerTool(
    'echo',
    { description: 'Echoes its input.', inputSchema: { text: z.string() } },
    ({ text }) => ({ content: [{ type: 'text', text: `echo: ${text}` }] }),
  );
  return server;
}

const port = Number(process.argv[2] ?? 0);
const { server } = sdkHttpServer(mcpServer, { json: process.argv.includes('--json') });
server.listen(port, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : port}\n`);
});
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => process.exit(0));
