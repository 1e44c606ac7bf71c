// The 2026-07-28 revision through the gateway: the SDK v2 client (`@modelcontextprotocol/client`) in
// `auto` and pinned modes against a v2 target (SDK v2 server, test/mcp/fixtures/fixture-v2.ts) and server-everything
// (legacy, stdio) behind one route; the wire itself (server/discover, resultType and cache hints, the standard headers,
// removed methods, stateless requests); Mcp-Name rewritten for the upstream when the gateway removes its prefix;
// legacy targets' sampling/elicitation turned into input-required results; v1 and v2-legacy clients on the same route.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startV2Fixture } from './fixtures/fixture-v2.ts';
import type { V2Fixture } from './fixtures/fixture-v2.ts';
import { alive, connectClient, everythingStdio, messagesOf, rawPost, startMcpGateway, waitFor } from './harness.ts';
import type { McpGateway } from './harness.ts';

const REV = '2026-07-28';
const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': REV,
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

type Json = Record<string, unknown>;

/** A raw 2026-07-28 request: the envelope in `_meta`, the standard headers derived from the body unless overridden. */
function post20260728(url: URL, id: number | string, method: string, params: Json = {}, headers: Record<string, string> = {}): ReturnType<typeof rawPost> {
  const std: Record<string, string> = { 'mcp-protocol-version': REV, 'mcp-method': method };
  const name = method === 'resources/read' ? params.uri : method === 'tools/call' || method === 'prompts/get' ? params.name : undefined;
  if (typeof name === 'string') std['mcp-name'] = name;
  return rawPost(url, JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: { ...ENVELOPE, ...(params._meta as Json | undefined) } } }), {
    ...std,
    ...headers,
  });
}

function single(text: string): Json {
  const all = messagesOf(text);
  assert.equal(all.length, 1, text);
  return all[0]!;
}

function v2Client(mode: 'auto' | 'legacy' | { pin: string }, capabilities: Json = {}): Client {
  return new Client({ name: 'v2-2026-07-28-test', version: '1.0.0' }, { versionNegotiation: { mode }, capabilities: capabilities as never });
}

const v2Target = (fx: V2Fixture, name = 'v2'): Json => ({ name, mcp: { host: '127.0.0.1', port: fx.port, path: '/mcp' } });

describe('2026-07-28 clients, a 2026-07-28 and a legacy target', () => {
  let fx: V2Fixture;
  let gw: McpGateway;
  before(async () => {
    fx = await startV2Fixture();
    gw = await startMcpGateway({ targets: [v2Target(fx), everythingStdio()] });
  });
  after(async () => {
    await gw.stop();
    await fx.stop();
  });

  for (const mode of ['auto', { pin: REV }] as const) {
    const label = typeof mode === 'string' ? mode : `pin ${mode.pin}`;
    it(`versionNegotiation ${label}: 2026-07-28, tools, prompts and resources of both targets`, async () => {
      const client = v2Client(mode);
      await client.connect(new StreamableHTTPClientTransport(gw.mcpUrl));
      try {
        assert.equal(client.getProtocolEra(), 'modern');
        assert.equal(client.getNegotiatedProtocolVersion(), REV);
        assert.equal(client.getServerVersion()?.name, 'switchyard');
        assert.match(client.getInstructions() ?? '', /\[v2\]\nv2 fixture server\./);
        const tools = (await client.listTools()).tools.map((t) => t.name);
        assert.ok(tools.includes('v2_add') && tools.includes('v2_whoami') && tools.includes('everything_echo'), tools.join(','));
        assert.ok(tools.every((t) => /^(v2|everything)_/.test(t)));
        assert.deepEqual((await client.callTool({ name: 'v2_add', arguments: { a: 2, b: 3 } })).content, [{ type: 'text', text: '5' }]);
        assert.deepEqual((await client.callTool({ name: 'everything_echo', arguments: { message: label } })).content, [{ type: 'text', text: `Echo: ${label}` }]);

        const prompts = (await client.listPrompts()).prompts.map((p) => p.name);
        assert.ok(prompts.includes('v2_greet') && prompts.includes('everything_simple-prompt'), prompts.join(','));
        assert.match(JSON.stringify((await client.getPrompt({ name: 'v2_greet', arguments: { who: 'Ada' } })).messages), /Hello, Ada!/);
        assert.match(JSON.stringify((await client.getPrompt({ name: 'everything_simple-prompt' })).messages), /simple prompt/);

        const resources = (await client.listResources()).resources.map((r) => r.uri);
        assert.ok(resources.includes('v2+note://v2/hello'), resources.join(','));
        const everythingUri = resources.find((u) => u.startsWith('everything+'))!;
        const read = await client.readResource({ uri: 'v2+note://v2/hello' });
        assert.deepEqual(read.contents, [{ uri: 'v2+note://v2/hello', mimeType: 'text/plain', text: 'hello from v2' }]);
        assert.equal((await client.readResource({ uri: everythingUri })).contents[0]?.uri, everythingUri);
        const templates = (await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate);
        assert.ok(templates.some((t) => t.startsWith('everything+')), templates.join(','));
      } finally {
        await client.close();
      }
    });
  }

  it('a 2026-07-28 target is spoken to in 2026-07-28: no initialize, no session, unprefixed names in body and headers', () => {
    const toV2 = fx.seen.filter((s) => s.method !== undefined && s.method !== 'server/discover');
    assert.ok(toV2.length > 0);
    assert.ok(toV2.every((s) => s.protocolVersion === REV && s.sessionId === undefined && s.method !== 'initialize'), JSON.stringify(toV2));
    assert.ok(toV2.every((s) => s.mcpMethod === s.method));
    const calls = toV2.filter((s) => s.method === 'tools/call');
    assert.ok(calls.length > 0 && calls.every((s) => s.name === 'add' && s.mcpName === 'add'), JSON.stringify(calls));
    // server/discover was probed once (cached per target), by the gateway.
    assert.equal(fx.seen.filter((s) => s.method === 'server/discover').length, 1);
  });

  it('server/discover: the versions every target serves, merged capabilities, gateway identity, not cacheable', async () => {
    const r = await post20260728(gw.mcpUrl, 'd1', 'server/discover');
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('mcp-session-id'), null);
    const result = single(r.text).result as Json;
    assert.deepEqual(result.supportedVersions, [REV]);
    assert.equal(result.resultType, 'complete');
    assert.equal(result.ttlMs, 0);
    assert.equal(result.cacheScope, 'private');
    assert.deepEqual((result._meta as Json)['io.modelcontextprotocol/serverInfo'], { name: 'switchyard', version: '0.1.0' });
    const caps = result.capabilities as Json;
    assert.deepEqual(caps.tools, {}, 'no listChanged: change notifications need subscriptions/listen');
    assert.ok(caps.prompts && caps.resources);
  });

  it('results carry resultType; list results ttlMs and cacheScope', async () => {
    const list = single((await post20260728(gw.mcpUrl, 2, 'tools/list')).text).result as Json;
    assert.equal(list.resultType, 'complete');
    assert.equal(list.ttlMs, 0);
    assert.equal(list.cacheScope, 'private');
    const call = single((await post20260728(gw.mcpUrl, 3, 'tools/call', { name: 'everything_echo', arguments: { message: 'raw' } })).text);
    assert.equal(call.id, 3);
    assert.equal((call.result as Json).resultType, 'complete');
    assert.equal((call.result as Json).ttlMs, undefined, 'tools/call is not cacheable');
    assert.deepEqual((call.result as Json).content, [{ type: 'text', text: 'Echo: raw' }]);
  });

  it('Mcp-Name of a prefixed tool reaches the 2026-07-28 upstream unprefixed, in the header and the body', async () => {
    const before = fx.seen.length;
    const r = await post20260728(gw.mcpUrl, 4, 'tools/call', { name: 'v2_whoami', arguments: {} });
    assert.equal(r.status, 200);
    assert.match(r.text, /v2-fixture whoami/);
    const seen = fx.seen.slice(before).filter((s) => s.method === 'tools/call');
    assert.equal(seen.length, 1);
    assert.equal(seen[0]!.name, 'whoami');
    assert.equal(seen[0]!.mcpName, 'whoami');
    assert.equal(seen[0]!.mcpMethod, 'tools/call');
  });

  it('headers that disagree with the body: 400 with HeaderMismatch (-32020), nothing reaches a target', async () => {
    const before = fx.seen.length;
    const cases: [string, Record<string, string>, RegExp][] = [
      ['Mcp-Name names another tool', { 'mcp-name': 'v2_add' }, /Mcp-Name header names "v2_add"/],
      ['Mcp-Method names another method', { 'mcp-method': 'tools/list' }, /Mcp-Method header names tools\/list/],
      ['Mcp-Name missing', { 'mcp-name': '' }, /Mcp-Name/],
    ];
    for (const [what, headers, message] of cases) {
      const h = { ...headers };
      const res =
        h['mcp-name'] === ''
          ? await rawPost(
              gw.mcpUrl,
              JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'v2_whoami', arguments: {}, _meta: ENVELOPE } }),
              { 'mcp-protocol-version': REV, 'mcp-method': 'tools/call' },
            )
          : await post20260728(gw.mcpUrl, 5, 'tools/call', { name: 'v2_whoami', arguments: {} }, h);
      assert.equal(res.status, 400, what);
      const error = single(res.text).error as { code: number; message: string };
      assert.equal(single(res.text).id, 5, what);
      assert.equal(error.code, -32020, what);
      assert.match(error.message, message, what);
    }
    // A body version that disagrees with the header.
    const mismatch = await post20260728(gw.mcpUrl, 6, 'tools/list', {}, { 'mcp-protocol-version': '2025-11-25' });
    assert.equal(mismatch.status, 400);
    assert.equal((single(mismatch.text).error as { code: number }).code, -32020);
    assert.equal(fx.seen.length, before);
  });

  it('removed methods are method-not-found (404, -32601)', async () => {
    for (const method of ['initialize', 'ping', 'logging/setLevel', 'resources/subscribe', 'resources/unsubscribe']) {
      const params: Json = method === 'logging/setLevel' ? { level: 'info' } : method.startsWith('resources/') ? { uri: 'v2+note://v2/hello' } : {};
      const r = await post20260728(gw.mcpUrl, 7, method, params);
      assert.equal(r.status, 404, method);
      const m = single(r.text);
      assert.equal(m.id, 7);
      assert.equal((m.error as { code: number }).code, -32601, method);
    }
  });

  it('unknown protocol versions: 400 naming the supported ones', async () => {
    const future = await post20260728(gw.mcpUrl, 8, 'tools/list', { _meta: { 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } }, { 'mcp-protocol-version': '2099-01-01' });
    assert.equal(future.status, 400);
    const error = single(future.text).error as { code: number; data: { supported: string[]; requested: string } };
    assert.equal(error.code, -32022);
    assert.deepEqual(error.data, { supported: [REV], requested: '2099-01-01' });
    const legacy = await rawPost(gw.mcpUrl, JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }), { 'mcp-protocol-version': '2023-01-01' });
    assert.equal(legacy.status, 400);
    const e2 = single(legacy.text).error as { code: number; data: { supported: string[] } };
    assert.equal(e2.code, -32022);
    assert.ok(e2.data.supported.includes(REV) && e2.data.supported.includes('2025-11-25'));
  });

  it('stateless: a session header on a 2026-07-28 request, and GET/DELETE with the 2026-07-28 version, are 400', async () => {
    const withSession = await post20260728(gw.mcpUrl, 10, 'tools/list', {}, { 'mcp-session-id': 'abc' });
    assert.equal(withSession.status, 400);
    assert.equal(single(withSession.text).id, 10);
    const get = await fetch(gw.mcpUrl, { headers: { accept: 'text/event-stream', 'mcp-protocol-version': REV } });
    assert.equal(get.status, 400);
    await get.body?.cancel();
    const del = await fetch(gw.mcpUrl, { method: 'DELETE', headers: { 'mcp-protocol-version': REV } });
    assert.equal(del.status, 400);
    await del.body?.cancel();
    // A request without the envelope but with the 2026-07-28 header: the envelope is missing (-32602, 400).
    const bare = await rawPost(gw.mcpUrl, JSON.stringify({ jsonrpc: '2.0', id: 11, method: 'tools/list' }), { 'mcp-protocol-version': REV, 'mcp-method': 'tools/list' });
    assert.equal(bare.status, 400);
    assert.equal((single(bare.text).error as { code: number }).code, -32602);
  });

  it("a legacy target's elicitation and sampling become input-required results the v2 client answers", async () => {
    const client = v2Client('auto', { elicitation: {}, sampling: {} });
    const asked: string[] = [];
    client.setRequestHandler('elicitation/create', async (request) => {
      asked.push('elicitation');
      const content: Record<string, string | number | boolean> = /^Confirm/.test(request.params.message) ? { yes: true } : { color: 'green', number: 7 };
      return { action: 'accept' as const, content };
    });
    client.setRequestHandler('sampling/createMessage', async () => {
      asked.push('sampling');
      return { model: 'test-model', role: 'assistant', content: { type: 'text', text: 'sampled through the gateway' } };
    });
    await client.connect(new StreamableHTTPClientTransport(gw.mcpUrl));
    try {
      assert.equal(client.getProtocolEra(), 'modern');
      const elicited = await client.callTool({ name: 'everything_trigger-elicitation-request', arguments: {} });
      assert.match(JSON.stringify(elicited.content), /Favorite Color: green/);
      const sampled = await client.callTool({ name: 'everything_trigger-sampling-request', arguments: { prompt: 'hi', maxTokens: 10 } });
      assert.match(JSON.stringify(sampled.content), /sampled through the gateway/);
      assert.deepEqual(asked, ['elicitation', 'sampling']);
      // A 2026-07-28 target's own input-required result passes through (its state is its own).
      const confirmed = await client.callTool({ name: 'v2_confirm', arguments: { what: 'deploy' } });
      assert.deepEqual(confirmed.content, [{ type: 'text', text: 'confirmed deploy: true' }]);
      assert.deepEqual(asked, ['elicitation', 'sampling', 'elicitation']);
    } finally {
      await client.close();
    }
  });

  it('the input-required wire: requestState minted by the gateway, the retry brings the answer, unknown states refused', async () => {
    const caps = { elicitation: {} };
    const meta = { ...ENVELOPE, 'io.modelcontextprotocol/clientInfo': { name: 'raw-elicit', version: '1' }, 'io.modelcontextprotocol/clientCapabilities': caps };
    const params = { name: 'everything_trigger-elicitation-request', arguments: {}, _meta: meta };
    const first = single((await post20260728(gw.mcpUrl, 20, 'tools/call', params)).text);
    const result = first.result as { resultType: string; requestState: string; inputRequests: Record<string, { method: string }> };
    assert.equal(result.resultType, 'input_required');
    assert.match(result.requestState, /^swy1\./);
    const keys = Object.keys(result.inputRequests);
    assert.equal(keys.length, 1);
    assert.equal(result.inputRequests[keys[0]!]!.method, 'elicitation/create');
    const retry = await post20260728(gw.mcpUrl, 21, 'tools/call', {
      ...params,
      inputResponses: { [keys[0]!]: { action: 'decline' } },
      requestState: result.requestState,
    });
    const done = single(retry.text);
    assert.equal(done.id, 21);
    assert.equal((done.result as Json).resultType, 'complete');
    assert.match(JSON.stringify(done.result), /decline/i);
    const stale = await post20260728(gw.mcpUrl, 22, 'tools/call', { ...params, inputResponses: {}, requestState: result.requestState });
    assert.equal(stale.status, 400);
    assert.equal((single(stale.text).error as { code: number }).code, -32602);
  });

  it('a client that did not declare elicitation gets no input request: the target is told no', async () => {
    const r = await post20260728(gw.mcpUrl, 23, 'tools/call', { name: 'everything_trigger-elicitation-request', arguments: {} });
    const m = single(r.text);
    assert.notEqual((m.result as Json | undefined)?.resultType, 'input_required');
  });

  it('the v1 client and the v2 client in legacy mode keep working on the same route', async () => {
    const { client, transport } = await connectClient(gw.mcpUrl);
    try {
      assert.equal(transport.protocolVersion, '2025-11-25');
      assert.ok(transport.sessionId);
      assert.deepEqual((await client.callTool({ name: 'v2_add', arguments: { a: 1, b: 1 } })).content, [{ type: 'text', text: '2' }]);
      assert.deepEqual((await client.callTool({ name: 'everything_echo', arguments: { message: 'v1' } })).content, [{ type: 'text', text: 'Echo: v1' }]);
    } finally {
      await transport.terminateSession();
      await client.close();
    }
    const legacy = v2Client('legacy');
    await legacy.connect(new StreamableHTTPClientTransport(gw.mcpUrl));
    try {
      assert.equal(legacy.getProtocolEra(), 'legacy');
      assert.equal(legacy.getNegotiatedProtocolVersion(), '2025-11-25');
      assert.deepEqual((await legacy.callTool({ name: 'v2_add', arguments: { a: 4, b: 4 } })).content, [{ type: 'text', text: '8' }]);
    } finally {
      await legacy.close();
    }
  });

  it("progress of a legacy target's long call reaches the 2026-07-28 client under its own token", async () => {
    const client = v2Client('auto');
    await client.connect(new StreamableHTTPClientTransport(gw.mcpUrl));
    try {
      const progress: number[] = [];
      const r = await client.callTool(
        { name: 'everything_trigger-long-running-operation', arguments: { duration: 0.3, steps: 3 } },
        { onprogress: (p) => progress.push(p.progress) },
      );
      assert.match(JSON.stringify(r.content), /completed/i);
      assert.deepEqual(progress, [1, 2, 3]);
    } finally {
      await client.close();
    }
  });

  it('target connections are kept per 2026-07-28 client identity: one stdio process for many requests', async () => {
    const before = new Set(gw.stdioPids());
    const meta = { ...ENVELOPE, 'io.modelcontextprotocol/clientInfo': { name: 'pool-test', version: '1' } };
    for (let i = 0; i < 4; i++) {
      const r = await post20260728(gw.mcpUrl, 30 + i, 'tools/call', { name: 'everything_echo', arguments: { message: String(i) }, _meta: meta });
      assert.match(r.text, new RegExp(`Echo: ${i}`));
    }
    const started = gw.stdioPids().filter((p) => !before.has(p));
    assert.equal(started.length, 1, 'one process for this client identity');
    assert.ok(alive(started[0]!));
  });
});

describe('2026-07-28 clients, one target', () => {
  it('a 2026-07-28 target: server/discover and names pass through, subscriptions/listen streams', async () => {
    const fx = await startV2Fixture();
    const gw = await startMcpGateway({ targets: [v2Target(fx)] });
    try {
      const client = v2Client({ pin: REV });
      await client.connect(new StreamableHTTPClientTransport(gw.mcpUrl));
      try {
        assert.equal(client.getServerVersion()?.name, 'v2-fixture');
        assert.deepEqual((await client.callTool({ name: 'add', arguments: { a: 20, b: 22 } })).content, [{ type: 'text', text: '42' }]);
      } finally {
        await client.close();
      }
      const discover = single((await post20260728(gw.mcpUrl, 1, 'server/discover')).text).result as Json;
      assert.deepEqual((discover.capabilities as Json).tools, { listChanged: true }, "the target's own answer");

      const ac = new AbortController();
      const res = await fetch(gw.mcpUrl, {
        method: 'POST',
        signal: ac.signal,
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': REV, 'mcp-method': 'subscriptions/listen' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 'listen-1', method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true }, _meta: ENVELOPE } }),
      });
      assert.equal(res.status, 200);
      const reader = res.body!.getReader();
      let text = '';
      while (!text.includes('\n\n')) {
        const { value, done } = await reader.read();
        if (done) break;
        text += Buffer.from(value).toString();
      }
      ac.abort();
      const ack = messagesOf(text)[0]!;
      assert.equal(ack.method, 'notifications/subscriptions/acknowledged');
      assert.equal(((ack.params as Json)._meta as Json)['io.modelcontextprotocol/subscriptionId'], 'listen-1');
    } finally {
      await gw.stop();
      await fx.stop();
    }
  });

  it('a legacy target: server/discover made from its initialize answer, unprefixed names', async () => {
    const gw = await startMcpGateway({ targets: [everythingStdio()] });
    try {
      const r = single((await post20260728(gw.mcpUrl, 1, 'server/discover')).text).result as Json;
      assert.deepEqual(r.supportedVersions, [REV]);
      assert.equal(((r._meta as Json)['io.modelcontextprotocol/serverInfo'] as Json).name, 'mcp-servers/everything');
      assert.deepEqual((r.capabilities as Json).tools, {});
      assert.equal((r.capabilities as Json).resources && Object.hasOwn(r.capabilities as Json, 'resources'), true);
      const client = v2Client('auto');
      await client.connect(new StreamableHTTPClientTransport(gw.mcpUrl));
      try {
        assert.equal(client.getProtocolEra(), 'modern');
        assert.equal(client.getServerVersion()?.name, 'mcp-servers/everything');
        assert.deepEqual((await client.callTool({ name: 'echo', arguments: { message: 'one' } })).content, [{ type: 'text', text: 'Echo: one' }]);
        const listen = await post20260728(gw.mcpUrl, 2, 'subscriptions/listen', { notifications: { toolsListChanged: true } });
        assert.equal(listen.status, 404);
        assert.equal((single(listen.text).error as { code: number }).code, -32601);
      } finally {
        await client.close();
      }
    } finally {
      await gw.stop();
    }
  });

  it("an idle 2026-07-28 client's target connections end after sessionIdleTimeout", async () => {
    const gw = await startMcpGateway({ targets: [everythingStdio()], sessionIdleTimeout: '1s' });
    try {
      const r = await post20260728(gw.mcpUrl, 1, 'tools/call', { name: 'echo', arguments: { message: 'idle' } });
      assert.match(r.text, /Echo: idle/);
      const pids = gw.stdioPids();
      assert.equal(pids.length, 1);
      await waitFor(() => !alive(pids[0]!), 'the idle pooled process to stop', 15_000);
    } finally {
      await gw.stop();
    }
  });

  it('statefulMode stateless: fresh target connections per 2026-07-28 request, stopped once answered', async () => {
    const gw = await startMcpGateway({ targets: [everythingStdio()], statefulMode: 'stateless' });
    try {
      for (let i = 0; i < 2; i++) {
        const r = await post20260728(gw.mcpUrl, i, 'tools/call', { name: 'echo', arguments: { message: `s${i}` } });
        assert.match(r.text, new RegExp(`Echo: s${i}`));
      }
      const pids = gw.stdioPids();
      assert.equal(pids.length, 2, 'one process per request');
      await waitFor(() => pids.every((p) => !alive(p)), 'every per-request process to stop');
    } finally {
      await gw.stop();
    }
  });
});
