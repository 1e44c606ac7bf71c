// The request id reaches `ai` and `mcp` upstreams too (issue 12 item 3, ADR 0025): an LLM call through an `ai`
// backend and an MCP `tools/call` to a streamable-HTTP target carry the `x-request-id` the access log shows, whether
// the client sent it or the gateway made it. `ai` already did (regression test); `mcp` sent only the headers of the
// request that opened the session, so a later call's id never reached the target: now each call passes its id down
// to the transport's `send` (UpstreamSendOptions.clientRequestId).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { INIT, mcpPreset, rawPost } from '../mcp/harness.ts';

type Line = Record<string, unknown>;


describe('request id forwarded by ai and mcp backends', () => {
  let gw: RunningGateway;
  let port: number;
  let llm: TestUpstream;
  let mcp: TestUpstream;

  async function lineFor(probe: string): Promise<Line> {
    for (let i = 0; i < 100; i++) {
      const line = gw.logs.map((l) => JSON.parse(l) as Line).find((l) => l.msg === 'request' && l.probe === probe);
      if (line) return line;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`no access-log line for ${probe}:\n${gw.logs.join('\n')}`);
  }

  before(async () => {
    // An OpenAI stand-in and a minimal streamable-HTTP MCP server (JSON answers), both recording headers.
    llm = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'c1', object: 'chat.completion', model: 'gpt-x', choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }], usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } }));
    });
    mcp = await startUpstream((_req, res, body) => {
      const m = JSON.parse(body.toString() || '{}') as { id?: number | string; method?: string };
      if (m.id === undefined) {
        res.writeHead(202).end();
        return;
      }
      const result =
        m.method === 'initialize'
          ? { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'rec', version: '1' } }
          : m.method === 'tools/list'
            ? { tools: [{ name: 'echo', inputSchema: { type: 'object' } }] }
            : { content: [{ type: 'text', text: 'ok' }] };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: m.id, result }));
    });
    port = await freePort();
    gw = await startGateway(
      {
        config: { logging: { format: 'json', fields: { add: { probe: "request.headers['x-probe']" } } } },
        binds: [
          {
            port,
            listeners: [
              {
                routes: [
                  { name: 'llm', matches: [{ path: { pathPrefix: '/v1' } }], backends: [{ ai: { name: 'openai', provider: { openAI: {} }, hostOverride: `127.0.0.1:${llm.port}` } }] },
                  { name: 'tools', matches: [{ path: { pathPrefix: '/mcp' } }], backends: [{ mcp: { targets: [{ name: 'rec', mcp: { host: `http://127.0.0.1:${mcp.port}/mcp` } }] } }] },
                ],
              },
            ],
          },
        ],
      },
      { preset: mcpPreset },
    );
  });

  after(async () => {
    await gw?.stop();
    await llm?.close();
    await mcp?.close();
  });

  async function chat(probe: string, headers: Record<string, string>): Promise<string> {
    const before = llm.received.length;
    const res = await request(`${gw.url(port)}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-probe': probe, ...headers },
      body: JSON.stringify({ model: 'gpt-x', messages: [{ role: 'user', content: 'hello' }] }),
    });
    assert.equal(res.statusCode, 200, await res.body.text());
    assert.equal(llm.received.length, before + 1);
    return llm.received.at(-1)!.headers['x-request-id'] as string;
  }

  it('ai: a client id reaches the LLM upstream as sent', async () => {
    assert.equal(await chat('ai-own', { 'x-request-id': 'llm-req.42' }), 'llm-req.42');
    assert.equal((await lineFor('ai-own'))['request.id'], 'llm-req.42');
  });

  it('ai: a gateway-made id reaches the LLM upstream and matches the access log', async () => {
    const sent = await chat('ai-gen', {});
    assert.ok(sent, 'the LLM upstream received an x-request-id');
    assert.equal((await lineFor('ai-gen'))['request.id'], sent);
  });

  async function toolCall(probe: string, headers: Record<string, string>): Promise<string> {
    const url = new URL(`${gw.url(port)}/mcp`);
    const init = await rawPost(url, INIT(1));
    assert.equal(init.status, 200, init.text);
    const session = init.headers.get('mcp-session-id');
    const h: Record<string, string> = { 'mcp-protocol-version': '2025-06-18', ...(session ? { 'mcp-session-id': session } : {}) };
    await rawPost(url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), h);
    const before = mcp.received.length;
    const res = await rawPost(url, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: {} } }), { ...h, 'x-probe': probe, ...headers });
    assert.equal(res.status, 200, res.text);
    const call = mcp.received.slice(before).find((r) => r.body.toString().includes('"tools/call"'));
    assert.ok(call, `the target received the tools/call:\n${mcp.received.map((r) => r.body.toString()).join('\n')}`);
    return call.headers['x-request-id'] as string;
  }

  it('mcp: a client id reaches the streamable-HTTP target as sent', async () => {
    assert.equal(await toolCall('mcp-own', { 'x-request-id': 'mcp-req.7' }), 'mcp-req.7');
    assert.equal((await lineFor('mcp-own'))['request.id'], 'mcp-req.7');
  });

  it('mcp: a gateway-made id reaches the target and matches the access log', async () => {
    const sent = await toolCall('mcp-gen', {});
    assert.ok(sent, 'the MCP target received an x-request-id');
    assert.equal((await lineFor('mcp-gen'))['request.id'], sent);
  });
});
