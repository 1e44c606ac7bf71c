// Deadlines of MCP target requests (issue 14 item 5, ADR 0019 for MCP): a streamable-HTTP target or an OpenAPI
// target's REST API that accepts a call and never answers fails the client's request with a JSON-RPC error naming
// the target and the deadline (`config.defaultTimeouts.backendRequestTimeout`, shortened here), and the upstream
// request is aborted; a target `timeout` policy replaces the default (`requestTimeout`, `streamIdleTimeout`); the
// standalone GET stream is never cut for being quiet. The legacy `sse` transport goes through the fetch adapter.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import openapi from '../../plugins/mcp-transports/openapi/plugin.ts';
import { connectClient, mcpPreset, startMcpGateway, waitFor } from './harness.ts';
import type { McpGateway } from './harness.ts';
import { testTempDir } from '../helpers/temp-dir.ts';
import { fullPresetWith } from '../helpers/preset.ts';

type Json = Record<string, any>;

/** A tiny streamable-HTTP MCP server: tools `hang` (never answers), `late` (answers after 1.5 s), `stall` (an SSE
 * stream that sends one event and then nothing), `quick`; its GET stream sends a notification at 1.5 s and 3 s. */
class TinyMcp {
  server!: Server;
  port = 0;
  /** tools/call requests seen, and whether their connection was closed before an answer. */
  readonly calls: { name: string; closed: boolean }[] = [];
  gets = 0;
  private readonly open = new Set<ServerResponse>();

  async start(): Promise<void> {
    this.server = createServer((req, res) => this.handle(req, res));
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as AddressInfo).port;
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    this.open.add(res);
    res.on('close', () => this.open.delete(res));
    if (req.method === 'GET') {
      this.gets++;
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.flushHeaders();
      const note = (n: number): string => `data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: `tick ${n}` } })}\n\n`;
      const t1 = setTimeout(() => res.write(note(1)), 1500);
      const t2 = setTimeout(() => res.write(note(2)), 3000);
      res.on('close', () => (clearTimeout(t1), clearTimeout(t2)));
      return;
    }
    if (req.method === 'DELETE') return void res.writeHead(200).end();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const m = JSON.parse(Buffer.concat(chunks).toString()) as Json;
      const json = (result: Json): void => {
        res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'tiny-1' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: m.id, result }));
      };
      if (m.id === undefined) return void res.writeHead(202).end();
      if (m.method === 'initialize') {
        return json({ protocolVersion: m.params.protocolVersion, capabilities: { tools: {}, logging: {} }, serverInfo: { name: 'tiny', version: '1' } });
      }
      if (m.method === 'tools/list') {
        const tool = (name: string): Json => ({ name, inputSchema: { type: 'object' } });
        return json({ tools: ['hang', 'late', 'stall', 'quick'].map(tool) });
      }
      if (m.method !== 'tools/call') return json({});
      const call = { name: m.params.name as string, closed: false };
      this.calls.push(call);
      res.on('close', () => {
        if (!res.writableEnded) call.closed = true;
      });
      const answer = { content: [{ type: 'text', text: `done ${call.name}` }] };
      if (call.name === 'hang') return;
      if (call.name === 'late') return void setTimeout(() => json(answer), 1500);
      if (call.name === 'stall') {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': 'tiny-1' });
        res.write(`id: 1\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'working' } })}\n\n`);
        return;
      }
      json(answer);
    });
  }

  async stop(): Promise<void> {
    for (const res of this.open) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

/** Call `tool` through the real SDK client; resolves with the error (or result) and how long it took. */
async function timedCall(gw: McpGateway, tool: string): Promise<{ ms: number; error?: Error; result?: Json }> {
  const { client } = await connectClient(gw.mcpUrl);
  const t0 = Date.now();
  try {
    const result = (await client.callTool({ name: tool, arguments: {} }, undefined, { timeout: 20_000 })) as Json;
    return { ms: Date.now() - t0, result };
  } catch (err) {
    return { ms: Date.now() - t0, error: err as Error };
  } finally {
    await client.close().catch(() => undefined);
  }
}

describe('mcp target deadlines: a streamable-HTTP target that never answers a call', () => {
  const tiny = new TinyMcp();
  before(() => tiny.start());
  after(() => tiny.stop());

  it('the default response deadline fails tools/call with a JSON-RPC error naming the target and aborts the upstream request', async () => {
    const gw = await startMcpGateway(
      { targets: [{ name: 'tiny', mcp: { host: '127.0.0.1', port: tiny.port } }] },
      { staticConfig: { defaultTimeouts: { backendRequestTimeout: '1s' } } },
    );
    try {
      const r = await timedCall(gw, 'hang');
      assert.ok(r.error, `expected an error, got ${JSON.stringify(r.result)}`);
      assert.match(r.error.message, /target `tiny` \(mcp: http:\/\/127\.0\.0\.1:\d+\/mcp\).*did not answer `tools\/call` within 1s \(config\.defaultTimeouts\.backendRequestTimeout\)/);
      assert.ok(r.ms >= 900 && r.ms < 6000, `answered after ${r.ms} ms`);
      const call = tiny.calls.findLast((c) => c.name === 'hang')!;
      await waitFor(() => call.closed, 'the upstream request to be aborted', 5000);
    } finally {
      await gw.stop();
    }
  });

  it('a target `timeout.requestTimeout` replaces the default: a call slower than the default but within the policy succeeds', async () => {
    const gw = await startMcpGateway(
      { targets: [{ name: 'tiny', mcp: { host: '127.0.0.1', port: tiny.port }, policies: { timeout: { requestTimeout: '5s' } } }] },
      { staticConfig: { defaultTimeouts: { backendRequestTimeout: '1s' } } },
    );
    try {
      const r = await timedCall(gw, 'late');
      assert.equal(r.error, undefined, r.error?.message);
      assert.equal(r.result?.content?.[0]?.text, 'done late');
    } finally {
      await gw.stop();
    }
  });

  it('a target `timeout.requestTimeout` bounds a call that never answers (the default is long)', async () => {
    const gw = await startMcpGateway({ targets: [{ name: 'tiny', mcp: { host: '127.0.0.1', port: tiny.port }, policies: { timeout: { requestTimeout: '1s' } } }] });
    try {
      const r = await timedCall(gw, 'hang');
      assert.ok(r.error, `expected an error, got ${JSON.stringify(r.result)}`);
      assert.match(r.error.message, /target `tiny` .*did not answer `tools\/call` within 1s \(timeout\.requestTimeout\)/);
      assert.ok(r.ms >= 900 && r.ms < 6000, `answered after ${r.ms} ms`);
      const call = tiny.calls.findLast((c) => c.name === 'hang')!;
      await waitFor(() => call.closed, 'the upstream request to be aborted', 5000);
    } finally {
      await gw.stop();
    }
  });

  it('a target `timeout.streamIdleTimeout` cuts a response stream that goes quiet', async () => {
    const gw = await startMcpGateway({ targets: [{ name: 'tiny', mcp: { host: '127.0.0.1', port: tiny.port }, policies: { timeout: { streamIdleTimeout: '1s' } } }] });
    try {
      const r = await timedCall(gw, 'stall');
      assert.ok(r.error, `expected an error, got ${JSON.stringify(r.result)}`);
      assert.match(r.error.message, /target `tiny` .*sent nothing for 1s \(timeout\.streamIdleTimeout\)/);
      assert.ok(r.ms >= 900 && r.ms < 6000, `answered after ${r.ms} ms`);
      const call = tiny.calls.findLast((c) => c.name === 'stall')!;
      await waitFor(() => call.closed, 'the upstream stream to be closed', 5000);
    } finally {
      await gw.stop();
    }
  });

  it('the standalone GET stream is not cut while quiet (longer than the stream idle default)', async () => {
    const gw = await startMcpGateway(
      { targets: [{ name: 'tiny', mcp: { host: '127.0.0.1', port: tiny.port } }] },
      { staticConfig: { defaultTimeouts: { backendRequestTimeout: '1s', streamIdleTimeout: '500ms' } } },
    );
    const gets = tiny.gets;
    const { client } = await connectClient(gw.mcpUrl);
    try {
      const seen: string[] = [];
      client.fallbackNotificationHandler = async (n) => {
        if (n.method === 'notifications/message') seen.push(String((n.params as Json).data));
      };
      await client.listTools();
      await waitFor(() => seen.includes('tick 2'), 'both notifications of the GET stream', 8000);
      assert.deepEqual(seen, ['tick 1', 'tick 2']);
      assert.equal(tiny.gets - gets, 1, 'the GET stream was opened once, never cut and reopened');
    } finally {
      await client.close().catch(() => undefined);
      await gw.stop();
    }
  });
});

describe('mcp target deadlines: an OpenAPI target whose API never answers', () => {
  let api: Server;
  let port = 0;
  let dir: string;
  const seen: { closed: boolean }[] = [];
  before(async () => {
    api = createServer((req, res) => {
      if (req.url?.startsWith('/openapi.json')) return void res.writeHead(200, { 'content-type': 'application/json' }).end(readFileSync(join(dir, 'api.json')));
      const s = { closed: false };
      seen.push(s);
      res.on('close', () => (s.closed = !res.writableEnded));
      if (req.url?.startsWith('/late')) setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'), 1500);
    });
    await new Promise<void>((r) => api.listen(0, '127.0.0.1', r));
    port = (api.address() as AddressInfo).port;
    dir = testTempDir('sy-openapi-deadline-');
    const op = (id: string): Json => ({ get: { operationId: id, responses: { '200': { description: 'ok' } } } });
    writeFileSync(join(dir, 'api.json'), JSON.stringify({ openapi: '3.0.3', info: { title: 't', version: '1' }, paths: { '/hang': op('hang'), '/late': op('late') } }));
  });
  after(async () => {
    api.closeAllConnections();
    await new Promise<void>((r) => api.close(() => r()));
    rmSync(dir, { recursive: true, force: true });
  });
  const preset = fullPresetWith(...mcpPreset, openapi);
  const target = (policies?: Json): Json => ({ name: 'rest', openapi: { host: '127.0.0.1', port, schema: { file: join(dir, 'api.json') } }, ...(policies ? { policies } : {}) });

  it('the default response deadline fails tools/call with a JSON-RPC error naming the target, and aborts the API request', async () => {
    const gw = await startMcpGateway({ targets: [target()] }, { preset, staticConfig: { defaultTimeouts: { backendRequestTimeout: '1s' } } });
    try {
      const r = await timedCall(gw, 'hang');
      assert.ok(r.error, `expected an error, got ${JSON.stringify(r.result)}`);
      assert.match(r.error.message, /target `rest` \(openapi: .*\).*did not answer `tools\/call` within 1s \(config\.defaultTimeouts\.backendRequestTimeout\)/);
      assert.ok(r.ms >= 900 && r.ms < 6000, `answered after ${r.ms} ms`);
      await waitFor(() => seen.at(-1)!.closed, 'the API request to be aborted', 5000);
    } finally {
      await gw.stop();
    }
  });

  it('a document URL is named in errors without its query (a key may be in it)', async () => {
    const byUrl = { name: 'rest', openapi: { host: '127.0.0.1', port, schema: { url: `http://127.0.0.1:${port}/openapi.json?key=s3cret-doc` } } };
    const gw = await startMcpGateway({ targets: [byUrl] }, { preset, staticConfig: { defaultTimeouts: { backendRequestTimeout: '1s' } } });
    try {
      const r = await timedCall(gw, 'hang');
      assert.match(r.error?.message ?? '', /target `rest` \(openapi: http:\/\/127\.0\.0\.1:\d+ \(http:\/\/127\.0\.0\.1:\d+\/openapi\.json, 2 tools\)\)/);
      assert.ok(!JSON.stringify(r).includes('s3cret'), JSON.stringify(r));
    } finally {
      await gw.stop();
    }
  });

  it('a target `timeout.requestTimeout` replaces the default', async () => {
    const gw = await startMcpGateway({ targets: [target({ timeout: { requestTimeout: '5s' } })] }, { preset, staticConfig: { defaultTimeouts: { backendRequestTimeout: '1s' } } });
    try {
      const r = await timedCall(gw, 'late');
      assert.equal(r.error, undefined, r.error?.message);
      assert.deepEqual(r.result?.structuredContent, { ok: true });
    } finally {
      await gw.stop();
    }
  });
});

describe('mcp target deadlines: a legacy SSE target whose POST never answers', () => {
  let server: Server;
  let port = 0;
  let stream: ServerResponse | undefined;
  const hung: { closed: boolean }[] = [];
  before(async () => {
    server = createServer((req, res) => {
      if (req.method === 'GET') {
        stream = res;
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        res.write('event: endpoint\ndata: /messages?sessionId=s1\n\n');
        return;
      }
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const m = JSON.parse(Buffer.concat(chunks).toString()) as Json;
        if (m.method === 'tools/call') {
          const h = { closed: false };
          hung.push(h);
          res.on('close', () => (h.closed = !res.writableEnded));
          return;
        }
        res.writeHead(202).end('Accepted');
        if (m.id === undefined) return;
        const result = m.method === 'initialize'
          ? { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'legacy', version: '1' } }
          : m.method === 'tools/list' ? { tools: [{ name: 'hang', inputSchema: { type: 'object' } }] } : {};
        stream?.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: m.id, result })}\n\n`);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });

  it('the default response deadline fails tools/call naming the target and aborts the POST', async () => {
    const gw = await startMcpGateway({ targets: [{ name: 'old', sse: { host: '127.0.0.1', port } }] }, { staticConfig: { defaultTimeouts: { backendRequestTimeout: '1s' } } });
    try {
      const r = await timedCall(gw, 'hang');
      assert.ok(r.error, `expected an error, got ${JSON.stringify(r.result)}`);
      assert.match(r.error.message, /target `old` \(sse: .*\) did not answer `tools\/call` within 1s \(config\.defaultTimeouts\.backendRequestTimeout\)/);
      assert.ok(r.ms >= 900 && r.ms < 6000, `answered after ${r.ms} ms`);
      await waitFor(() => hung.at(-1)?.closed === true, 'the POST to be aborted', 5000);
    } finally {
      await gw.stop();
    }
  });
});
