// HTTP targets and the legacy client transport: server-everything in `streamableHttp` and `sse` modes behind the
// `mcp` and `sse` transports, and an SDK client speaking the legacy HTTP+SSE transport to the gateway.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { connectClient, connectSseClient, everythingStdio, startEverything, startMcpGateway, waitFor } from './harness.ts';
import type { McpGateway, UpstreamServer } from './harness.ts';

describe('mcp backend, HTTP targets', () => {
  let http: UpstreamServer;
  let legacy: UpstreamServer;
  let gw: McpGateway;
  before(async () => {
    [http, legacy] = await Promise.all([startEverything('streamableHttp'), startEverything('sse')]);
    gw = await startMcpGateway({
      targets: [
        { name: 'http', mcp: { host: '127.0.0.1', port: http.port, path: '/mcp' } },
        { name: 'legacy', sse: { host: `http://127.0.0.1:${legacy.port}/sse` } },
      ],
    });
  });
  after(async () => {
    await gw.stop();
    await Promise.all([http.stop(), legacy.stop()]);
  });

  it('lists and calls through a streamable-HTTP target and a legacy SSE target', async () => {
    const { client, transport } = await connectClient(gw.mcpUrl);
    try {
      const tools = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(tools.includes('http_echo') && tools.includes('legacy_echo'), tools.join(','));
      for (const name of ['http_echo', 'legacy_echo']) {
        const r = await client.callTool({ name, arguments: { message: name } });
        assert.deepEqual(r.content, [{ type: 'text', text: `Echo: ${name}` }]);
      }
      const uris = (await client.listResources()).resources.map((r) => r.uri);
      assert.ok(uris.some((u) => u.startsWith('http+demo://')) && uris.some((u) => u.startsWith('legacy+demo://')));
      const read = await client.readResource({ uri: uris.find((u) => u.startsWith('legacy+'))! });
      assert.match(read.contents[0]!.uri, /^legacy\+demo:\/\//);
    } finally {
      await transport.terminateSession();
      await client.close();
    }
  });

  it('relays sampling from both kinds of target, and progress from the streamable one', async () => {
    const { client, transport } = await connectClient(gw.mcpUrl, { capabilities: { sampling: {} } });
    client.setRequestHandler(CreateMessageRequestSchema, async () => ({ model: 'm', role: 'assistant', content: { type: 'text', text: 'from the client' } }));
    try {
      for (const name of ['http_trigger-sampling-request', 'legacy_trigger-sampling-request']) {
        const r = await client.callTool({ name, arguments: { prompt: 'p' } });
        assert.match(JSON.stringify(r.content), /from the client/, name);
      }
      const progress: number[] = [];
      await client.callTool({ name: 'http_trigger-long-running-operation', arguments: { duration: 0.3, steps: 3 } }, undefined, {
        onprogress: (p) => progress.push(p.progress),
      });
      assert.deepEqual(progress, [1, 2, 3]);
    } finally {
      await transport.terminateSession();
      await client.close();
    }
  });

  it('keeps one upstream session per client session and deletes it on DELETE', async () => {
    const own = await startEverything('streamableHttp');
    const gw2 = await startMcpGateway({ targets: [{ name: 'own', mcp: { host: `http://127.0.0.1:${own.port}/mcp` } }] });
    const count = (re: RegExp): number => own.output.join('').match(re)?.length ?? 0;
    try {
      const a = await connectClient(gw2.mcpUrl);
      const b = await connectClient(gw2.mcpUrl);
      await a.client.callTool({ name: 'echo', arguments: { message: 'a' } });
      await b.client.callTool({ name: 'echo', arguments: { message: 'b' } });
      await waitFor(() => count(/Session initialized with ID/g) >= 2, 'two upstream sessions');
      await a.transport.terminateSession();
      await b.transport.terminateSession();
      await a.client.close();
      await b.client.close();
      await waitFor(() => count(/Received session termination request/g) === 2, 'two upstream DELETEs');
      assert.equal(count(/Session initialized with ID/g), 2);
    } finally {
      await gw2.stop();
      await own.stop();
    }
  });
});

describe('mcp backend, a streamable-HTTP target that restarts', () => {
  it('re-initializes a new upstream session transparently when the target forgot the old one', async () => {
    let upstream = await startEverything('streamableHttp');
    const gw = await startMcpGateway({ targets: [{ name: 'e', mcp: { host: '127.0.0.1', port: upstream.port } }] });
    try {
      const { client, transport } = await connectClient(gw.mcpUrl);
      await client.callTool({ name: 'echo', arguments: { message: 'before' } });
      await upstream.stop();
      upstream = await startEverything('streamableHttp', upstream.port);
      const r = await client.callTool({ name: 'echo', arguments: { message: 'after' } });
      assert.deepEqual(r.content, [{ type: 'text', text: 'Echo: after' }]);
      assert.ok(gw.logs.some((l) => l.includes('MCP target session expired upstream')));
      await transport.terminateSession();
      await client.close();
    } finally {
      await gw.stop();
      await upstream.stop();
    }
  });
});

describe('mcp backend, legacy SSE clients', () => {
  let gw: McpGateway;
  before(async () => {
    gw = await startMcpGateway({ targets: [everythingStdio()] });
  });
  after(() => gw.stop());

  it('serves GET /sse + POST endpoint: initialize, list and call', async () => {
    const { client } = await connectSseClient(gw.sseUrl);
    try {
      assert.equal(client.getServerVersion()?.name, 'mcp-servers/everything');
      const tools = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(tools.includes('echo'));
      const r = await client.callTool({ name: 'echo', arguments: { message: 'over sse' } });
      assert.deepEqual(r.content, [{ type: 'text', text: 'Echo: over sse' }]);
    } finally {
      await client.close();
    }
  });

  it('a client spelling the path with escapes is served, and told to POST to its own spelling (ADR 0185)', async () => {
    // `%73se` routes as `/sse` (the front is chosen on the normalised path); the endpoint event echoes the client's
    // spelling, which routes the same way, so the POSTs reach the session.
    const { client } = await connectSseClient(new URL('/%73se', gw.sseUrl));
    try {
      const r = await client.callTool({ name: 'echo', arguments: { message: 'escaped' } });
      assert.deepEqual(r.content, [{ type: 'text', text: 'Echo: escaped' }]);
    } finally {
      await client.close();
    }
  });

  it('announces the endpoint with the session id, and refuses unknown or missing ids', async () => {
    const controller = new AbortController();
    const res = await fetch(gw.sseUrl, { headers: { accept: 'text/event-stream' }, signal: controller.signal });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/);
    const reader = res.body!.getReader();
    let text = '';
    while (!text.includes('\n\n')) text += new TextDecoder().decode((await reader.read()).value);
    assert.match(text, /^event: endpoint\ndata: \/sse\?sessionId=[0-9a-f-]{36}\n\n/);
    controller.abort();
    const unknown = await fetch(new URL('/sse?sessionId=00000000-0000-0000-0000-000000000000', gw.sseUrl), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    assert.equal(unknown.status, 404);
    const missing = await fetch(gw.sseUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assert.equal(missing.status, 422);
  });
});
