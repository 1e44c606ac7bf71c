// Several targets behind one endpoint (DECIDED 14): server-everything and server-memory over stdio, plus a fixture
// that pages its tool list. Prefixed names, merged initialize, routing, resource URI prefixes, server-to-client
// requests (sampling, elicitation, roots) relayed with rewritten ids, and per-request authorization.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { definePolicy } from 'switchyard/sdk';
import { MCP_AUTHORIZER } from '../../plugins/lib/mcp/authorizer.ts';
import { join } from 'node:path';
import { MAX_LIST_BYTES } from '../../plugins/backends/mcp/target.ts';
import { INIT, NODE, ROOT, connectClient, everythingStdio, fixtureStdio, mcpPreset, memoryStdio, messagesOf, rawPost, startMcpGateway, waitFor } from './harness.ts';
import type { McpGateway } from './harness.ts';

/** A test-only policy standing in for `mcpAuthorization`: denies `<kind>:<target>:<name>` entries. */
const denyPolicy = definePolicy<{ deny: string[] }>({
  key: 'testMcpDeny',
  description: 'test only',
  schema: { type: 'object', properties: { deny: { type: 'array', items: { type: 'string' }, description: 'denied items' } }, additionalProperties: false },
  attach: ['routePolicies'],
  phase: 'authz',
  compile(config) {
    const deny = new Set(config.deny);
    return {
      onRequest(ex) {
        ex.set(MCP_AUTHORIZER, (item) => !deny.has(`${item.kind}:${item.target}:${item.name}`));
      },
    };
  },
});

describe('mcp backend, several targets', () => {
  let gw: McpGateway;
  before(async () => {
    gw = await startMcpGateway({ targets: [everythingStdio(), memoryStdio(), fixtureStdio()] });
  });
  after(() => gw.stop());

  it('answers initialize itself: merged capabilities, per-target instructions, gateway serverInfo', async () => {
    const { client, transport } = await connectClient(gw.mcpUrl);
    try {
      assert.equal(client.getServerVersion()?.name, 'switchyard');
      const caps = client.getServerCapabilities()!;
      assert.deepEqual(caps.tools, { listChanged: true });
      assert.ok(caps.prompts && caps.resources && caps.logging);
      const instructions = client.getInstructions() ?? '';
      assert.match(instructions, /\[everything\]\n/);
      assert.match(instructions, /\[fixture\]\nFixture server\./);
      assert.equal(transport.protocolVersion, '2025-11-25');
    } finally {
      await transport.terminateSession();
      await client.close();
    }
  });

  it('prefixes tool and prompt names with the target, follows every page, and routes calls back', async () => {
    const { client, transport } = await connectClient(gw.mcpUrl);
    try {
      const tools = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(tools.includes('everything_echo'));
      assert.ok(tools.includes('memory_create_entities'), 'the target name is split at the first `_` only');
      // The fixture answers tools/list in three pages; all six tools arrive in one list, without a cursor.
      assert.deepEqual(
        tools.filter((t) => t.startsWith('fixture_')),
        ['fixture_wait', 'fixture_crash', 'fixture_pid', 'fixture_page1-tool', 'fixture_page2-tool', 'fixture_page3-tool'],
      );
      assert.ok(tools.every((t) => /^(everything|memory|fixture)_/.test(t)));

      const echo = await client.callTool({ name: 'everything_echo', arguments: { message: 'routed' } });
      assert.deepEqual(echo.content, [{ type: 'text', text: 'Echo: routed' }]);
      await client.callTool({ name: 'memory_create_entities', arguments: { entities: [{ name: 'gw', entityType: 'thing', observations: ['o'] }] } });
      const graph = await client.callTool({ name: 'memory_read_graph', arguments: {} });
      assert.match(JSON.stringify(graph), /"gw"/);
      assert.match(JSON.stringify(await client.callTool({ name: 'fixture_page3-tool', arguments: {} })), /called page3-tool/);

      const prompts = (await client.listPrompts()).prompts.map((p) => p.name);
      assert.ok(prompts.includes('everything_simple-prompt'), prompts.join(','));
      const prompt = await client.getPrompt({ name: 'everything_simple-prompt' });
      assert.match(JSON.stringify(prompt.messages), /simple prompt/);
    } finally {
      await transport.terminateSession();
      await client.close();
    }
  });

  it('prefixes resource URIs with `<target>+` and routes reads back by them', async () => {
    const { client, transport } = await connectClient(gw.mcpUrl);
    try {
      const resources = (await client.listResources()).resources;
      assert.ok(resources.length > 0);
      assert.ok(resources.every((r) => /^(everything|memory)\+/.test(r.uri)), resources.map((r) => r.uri).join(','));
      const read = await client.readResource({ uri: resources[0]!.uri });
      assert.equal(read.contents[0]!.uri, resources[0]!.uri);
      const graph = await client.readResource({ uri: 'memory+memory://knowledge-graph' });
      assert.equal(graph.contents[0]!.uri, 'memory+memory://knowledge-graph');
      const templates = (await client.listResourceTemplates()).resourceTemplates;
      assert.ok(templates.every((t) => t.uriTemplate.startsWith('everything+demo://')));
      const dynamic = await client.readResource({ uri: 'everything+demo://resource/dynamic/text/1' });
      assert.equal(dynamic.contents[0]!.uri, 'everything+demo://resource/dynamic/text/1');
      // Resource links inside a tool result route back too.
      const links = await client.callTool({ name: 'everything_get-resource-links', arguments: { count: 2 } });
      const uris = (links.content as { type: string; uri?: string }[]).filter((c) => c.type === 'resource_link').map((c) => c.uri!);
      assert.ok(uris.length > 0 && uris.every((u) => u.startsWith('everything+')), JSON.stringify(links.content));
    } finally {
      await transport.terminateSession();
      await client.close();
    }
  });

  it('relays sampling and elicitation requests to the client and the answers back', async () => {
    const { client, transport } = await connectClient(gw.mcpUrl, { capabilities: { sampling: {}, elicitation: {} } });
    const asked: { method: string; id?: unknown }[] = [];
    client.setRequestHandler(CreateMessageRequestSchema, async (req, extra) => {
      asked.push({ method: req.method, id: extra.requestId });
      return { model: 'test-model', role: 'assistant', content: { type: 'text', text: 'sampled by the client' } };
    });
    client.setRequestHandler(ElicitRequestSchema, async (req, extra) => {
      asked.push({ method: req.method, id: extra.requestId });
      return { action: 'accept', content: { name: 'Ada', check: true, email: 'ada@example.com' } };
    });
    try {
      await waitFor(async () => (await client.listTools()).tools.some((t) => t.name === 'everything_trigger-elicitation-request'), 'conditional tools');
      const sampled = await client.callTool({ name: 'everything_trigger-sampling-request', arguments: { prompt: 'hi', maxTokens: 5 } });
      assert.match(JSON.stringify(sampled.content), /sampled by the client/);
      const elicited = await client.callTool({ name: 'everything_trigger-elicitation-request', arguments: {} });
      assert.match(JSON.stringify(elicited.content), /Ada/);
      assert.deepEqual(
        asked.map((a) => a.method),
        ['sampling/createMessage', 'elicitation/create'],
      );
      // The ids the client saw name the target that asked, so the answers route back.
      for (const a of asked) assert.match(String(a.id), /^swy:everything:n:\d+$/);
    } finally {
      await transport.terminateSession();
      await client.close();
    }
  });

  it('relays a roots/list request sent outside any call (GET stream) and its answer', async () => {
    const { client, transport } = await connectClient(gw.mcpUrl, { capabilities: { roots: { listChanged: true } } });
    let asked = 0;
    client.setRequestHandler(ListRootsRequestSchema, async () => {
      asked++;
      return { roots: [{ uri: 'file:///switchyard/test', name: 'test root' }] };
    });
    try {
      await waitFor(() => asked > 0, 'roots/list from server-everything');
      await waitFor(async () => JSON.stringify(await client.callTool({ name: 'everything_get-roots-list', arguments: {} })).includes('file:///switchyard/test'), 'roots in the tool');
    } finally {
      await transport.terminateSession();
      await client.close();
    }
  });

  it('rejects names of unknown targets and unprefixed names with -32602 and HTTP 400', async () => {
    const { client, transport } = await connectClient(gw.mcpUrl);
    try {
      for (const name of ['nosuch_echo', 'echo']) {
        await assert.rejects(client.callTool({ name, arguments: {} }), (err: Error) => {
          assert.match(err.message, /HTTP error: Error POSTing to endpoint/);
          assert.match(err.message, new RegExp(`"code":-32602,"message":"Unknown tool: ${name}"`));
          return true;
        });
      }
      await assert.rejects(client.readResource({ uri: 'demo://resource/static/document/architecture.md' }), /Unknown resource/);
    } finally {
      await transport.terminateSession();
      await client.close();
    }
  });

  it('logging/setLevel to several targets: a level MCP does not define is a 400 -32602, not an empty success (ADR 0186)', async () => {
    const sid = (await rawPost(gw.mcpUrl, INIT())).headers.get('mcp-session-id')!;
    const h = { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' };
    for (const level of ['loud', 'INFO', 7, undefined]) {
      const res = await rawPost(gw.mcpUrl, JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'logging/setLevel', params: { level } }), h);
      assert.equal(res.status, 400, `${String(level)}: ${res.text.slice(0, 200)}`);
      const body = JSON.parse(res.text);
      assert.equal(body.id, 4);
      assert.equal(body.error.code, -32602);
      assert.match(body.error.message, /^Invalid params: `level` must be one of debug, info, notice/);
    }
    const ok = await rawPost(gw.mcpUrl, JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'logging/setLevel', params: { level: 'warning' } }), h);
    assert.equal(ok.status, 200);
    assert.deepEqual(messagesOf(ok.text), [{ jsonrpc: '2.0', id: 5, result: {} }]);
    await fetch(gw.mcpUrl, { method: 'DELETE', headers: h });
  });
});

describe('mcp backend, per-request authorization hook (MCP_AUTHORIZER)', () => {
  let gw: McpGateway;
  before(async () => {
    gw = await startMcpGateway(
      { targets: [everythingStdio(), memoryStdio()] },
      {
        preset: [...mcpPreset, denyPolicy],
        policies: { testMcpDeny: { deny: ['tool:everything:echo', 'prompt:everything:simple-prompt', 'resource:everything:demo://resource/static/document/features.md'] } },
      },
    );
  });
  after(() => gw.stop());

  it('hides refused items from lists and answers calls to them as unknown', async () => {
    const { client, transport } = await connectClient(gw.mcpUrl);
    try {
      const tools = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(!tools.includes('everything_echo'));
      assert.ok(tools.includes('everything_get-sum') && tools.includes('memory_read_graph'));
      const prompts = (await client.listPrompts()).prompts.map((p) => p.name);
      assert.ok(!prompts.includes('everything_simple-prompt') && prompts.includes('everything_args-prompt'));
      const uris = (await client.listResources()).resources.map((r) => r.uri);
      assert.ok(!uris.includes('everything+demo://resource/static/document/features.md'));
      assert.ok(uris.includes('everything+demo://resource/static/document/architecture.md'));

      await assert.rejects(client.callTool({ name: 'everything_echo', arguments: { message: 'x' } }), /"code":-32602,"message":"Unknown tool: everything_echo"/);
      await assert.rejects(client.getPrompt({ name: 'everything_simple-prompt' }), /Unknown prompt: everything_simple-prompt/);
      await assert.rejects(
        client.readResource({ uri: 'everything+demo://resource/static/document/features.md' }),
        /Unknown resource: everything\+demo:\/\/resource\/static\/document\/features.md/,
      );
      assert.match(JSON.stringify(await client.callTool({ name: 'everything_get-sum', arguments: { a: 1, b: 2 } })), /3/);
    } finally {
      await transport.terminateSession();
      await client.close();
    }
  });

  it('answers a refused call with HTTP 400 and a JSON-RPC error body', async () => {
    const { client, transport } = await connectClient(gw.mcpUrl);
    try {
      const res = await fetch(gw.mcpUrl, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-session-id': transport.sessionId!,
          'mcp-protocol-version': '2025-11-25',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 'x1', method: 'tools/call', params: { name: 'everything_echo', arguments: { message: 'no' } } }),
      });
      assert.equal(res.status, 400);
      assert.deepEqual(await res.json(), { jsonrpc: '2.0', id: 'x1', error: { code: -32602, message: 'Unknown tool: everything_echo' } });
    } finally {
      await transport.terminateSession();
      await client.close();
    }
  });
});

describe('mcp backend, several targets, one of them paging without end', () => {
  it('stops following a target list past MAX_LIST_BYTES of items, and the list still answers with every target', async () => {
    const gw = await startMcpGateway({ targets: [fixtureStdio(), { name: 'endless', stdio: { cmd: NODE, args: [join(ROOT, 'test/mcp/fixtures/endless-pages-server.ts')] } }] });
    const { client, transport } = await connectClient(gw.mcpUrl);
    try {
      const tools = (await client.listTools()).tools.map((t) => t.name);
      const endless = tools.filter((n) => n.startsWith('endless_'));
      // Pages of 1 MiB each: the list stops at about MAX_LIST_BYTES (32 MiB), not at MAX_PAGES (100).
      assert.ok(endless.length >= MAX_LIST_BYTES / 2 ** 20 - 1 && endless.length <= MAX_LIST_BYTES / 2 ** 20 + 1, `${endless.length} pages followed`);
      assert.ok(tools.includes('fixture_page3-tool'));
      assert.ok(gw.logs.some((l) => l.includes('its items passed the size limit') && l.includes('"target":"endless"')));
    } finally {
      await transport.terminateSession();
      await client.close();
      await gw.stop();
    }
  });
});


describe('mcp backend, several targets, one of them paging in a loop and repeating names', () => {
  it('stops at a cursor it has followed already and lists each name of a target once (its first)', async () => {
    const gw = await startMcpGateway({ targets: [fixtureStdio(), { name: 'loop', stdio: { cmd: NODE, args: [join(ROOT, 'test/mcp/fixtures/looping-pages-server.ts')] } }] });
    const { client, transport } = await connectClient(gw.mcpUrl);
    try {
      const tools = (await client.listTools()).tools.filter((t) => t.name.startsWith('loop_'));
      assert.deepEqual(
        tools.map((t) => [t.name, t.description]),
        [
          ['loop_x', 'first x'],
          ['loop_y', 'first y'],
          ['loop_z', 'first z'],
        ],
      );
      assert.ok(gw.logs.some((l) => l.includes('repeated a cursor') && l.includes('"target":"loop"')));
      const pagesAsked = gw.logs.filter((l) => l.includes('looping: list page')).length;
      assert.equal(pagesAsked, 3, 'pages asked of the looping target');
    } finally {
      await transport.terminateSession();
      await client.close();
      await gw.stop();
    }
  });
});
