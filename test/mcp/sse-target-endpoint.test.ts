// A legacy SSE target names, in its `endpoint` event, where the gateway POSTs its messages. One that names another
// origin (an absolute URL, or a protocol-relative `//host/path`) must not get the gateway's messages sent there
// (with the target's credentials): the start fails at once, naming the target, and the other server sees nothing.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { INIT, rawPost, startMcpGateway } from './harness.ts';
import type { McpGateway } from './harness.ts';

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as { port: number }).port;
}

describe('mcp: a legacy SSE target whose endpoint event names another origin', () => {
  const elsewhere: string[] = [];
  let other: Server;
  let target: Server;
  let gw: McpGateway;
  before(async () => {
    other = createServer((req, res) => {
      elsewhere.push(`${req.method} ${req.url}`);
      res.writeHead(202).end();
    });
    const otherPort = await listen(other);
    target = createServer((req, res) => {
      if (req.method !== 'GET') return void res.writeHead(405).end();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const endpoint = req.url === '/absolute/sse' ? `http://127.0.0.1:${otherPort}/messages` : `//127.0.0.1:${otherPort}/messages`;
      res.write(`event: endpoint\ndata: ${endpoint}\n\n`);
    });
    const port = await listen(target);
    gw = await startMcpGateway({
      targets: [
        { name: 'absolute', sse: { host: `http://127.0.0.1:${port}/absolute/sse` } },
        { name: 'relative', sse: { host: `http://127.0.0.1:${port}/relative/sse` } },
      ],
    });
  });
  after(async () => {
    await gw?.stop();
    target?.closeAllConnections();
    target?.close();
    other?.close();
  });

  it('initialize fails at once naming the target, and nothing is sent to the other origin', async () => {
    const started = performance.now();
    const res = await rawPost(gw.mcpUrl, INIT(1), { accept: 'application/json' });
    assert.ok(performance.now() - started < 10_000, 'no wait for the start deadline');
    const body = JSON.parse(res.text) as { error?: { message: string } };
    assert.match(body.error?.message ?? '', /target `(absolute|relative)`.*origin/i, res.text);
    assert.match(body.error?.message ?? '', /Endpoint origin does not match/, 'the reason, not a bare "closed the connection"');
    assert.deepEqual(elsewhere, []);
  });
});
