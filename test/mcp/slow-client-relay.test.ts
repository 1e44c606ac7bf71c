// A client that stops reading the SSE answer of a call the gateway relays from a streamable-HTTP target that floods it
// with notifications (ADR 0168, 0182): what the gateway holds for that client is bounded, the target's stream of that
// call is read only as fast as the client reads (back-pressure), and when the client leaves it is let go after the
// resume grace. In process, so the gateway's heap is this one.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { createServer } from 'node:http';
import type { Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { heapGrowth, heapNow } from '../helpers/byte-chunk-upstream.ts';
import { connectClient, startMcpGateway, waitFor } from './harness.ts';
import type { McpGateway } from './harness.ts';

type Json = Record<string, any>;

/** A streamable-HTTP MCP server whose tool `flood` answers with an SSE stream of 1 KiB notifications without end. */
class FloodMcp {
  server!: Server;
  port = 0;
  written = 0;
  /** `flood` streams the gateway closed. */
  closed = 0;
  private readonly open = new Set<ServerResponse>();

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      this.open.add(res);
      res.on('close', () => this.open.delete(res));
      if (req.method !== 'POST') return void res.writeHead(405).end();
      let text = '';
      req.setEncoding('utf8').on('data', (s: string) => (text += s));
      req.on('end', () => {
        const m = JSON.parse(text) as Json;
        if (m.id === undefined) return void res.writeHead(202).end();
        if (m.method !== 'tools/call') {
          const results: Record<string, Json> = {
            initialize: { protocolVersion: m.params?.protocolVersion, capabilities: { tools: {}, logging: {} }, serverInfo: { name: 'flood', version: '1' } },
            'tools/list': { tools: [{ name: 'flood', inputSchema: { type: 'object' } }] },
          };
          res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'flood-1' });
          return void res.end(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: results[m.method] ?? {} }));
        }
        res.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': 'flood-1' });
        const event = Buffer.from(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'x'.repeat(1000) } })}\n\n`);
        const block = Buffer.concat(Array.from({ length: 16 }, () => event));
        const more = (): void => {
          while (!res.destroyed && res.write(block)) this.written += block.length;
        };
        res.on('drain', more);
        res.on('close', () => this.closed++);
        more();
      });
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    for (const res of this.open) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

describe('an MCP call relayed to a client that stopped reading its SSE answer', () => {
  const flood = new FloodMcp();
  let gw: McpGateway;
  before(async () => {
    await flood.start();
    gw = await startMcpGateway({ targets: [{ name: 'flood', mcp: { host: '127.0.0.1', port: flood.port } }] });
  });
  after(async () => {
    await gw?.stop();
    await flood.stop();
  });

  it('holds a bounded amount for the client and lets the target\'s stream go', async () => {
    const { client, transport } = await connectClient(gw.mcpUrl);
    await client.listTools();
    const body = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'flood', arguments: {} } });
    const before = heapNow();
    const socket = connect(Number(gw.mcpUrl.port), '127.0.0.1');
    socket.on('error', () => undefined);
    socket.write(
      `POST /mcp HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n` +
        `Mcp-Session-Id: ${transport.sessionId}\r\nMcp-Protocol-Version: ${transport.protocolVersion ?? '2025-06-18'}\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    // Read the head and a little, then nothing more.
    await new Promise<void>((resolve) => socket.once('data', () => resolve()));
    socket.pause();
    try {
      const held = await heapGrowth(before);
      assert.ok(held < 24 * 1024 * 1024, `${(held / 1024 / 1024).toFixed(1)} MiB held for a client that stopped reading`);
      // Back-pressured (ADR 0182): the target's stream of this one call is read only as fast as the client reads, so
      // the target stalls with its socket buffers full instead of being read at full speed until the client is cut.
      await new Promise((r) => setTimeout(r, 1500));
      const stalled = flood.written;
      await new Promise((r) => setTimeout(r, 1500));
      assert.ok(flood.written - stalled < 1024 * 1024, `the target wrote ${((flood.written - stalled) / 1024 / 1024).toFixed(1)} MiB more while the client read nothing`);
      assert.ok(flood.written < 32 * 1024 * 1024, `${(flood.written / 1024 / 1024).toFixed(1)} MiB read from the target`);
      assert.equal(flood.closed, 0, 'the call goes on');
      // The client reads again: so does the gateway, and its stream was not cut.
      let got = 0;
      socket.on('data', (chunk: Buffer) => (got += chunk.length));
      socket.resume();
      await waitFor(() => got > 4 * 1024 * 1024 && flood.written > stalled + 4 * 1024 * 1024, 'events flowing again', 10_000);
      // The client leaves: the target's stream is let go after the resume grace (RESUME_GRACE_MS, 5 s), as before.
      socket.destroy();
      await waitFor(() => flood.closed === 1, 'the target\'s stream to be let go', 15_000);
    } finally {
      socket.destroy();
      await client.close().catch(() => undefined);
    }
  });
});
