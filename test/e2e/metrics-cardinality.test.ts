// A client cannot grow /metrics by inventing names (ADR 0130): a model no provider answered for is `_OTHER` in every
// LLM series, and a provider that answers for anything is bounded by the models kept per backend; an MCP tool no
// target declared or answered is `_OTHER` too.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { aiRoute, startAiGateway, startMock } from '../ai/harness.ts';
import type { AiGateway, Mock } from '../ai/harness.ts';
import { parseMetrics, scrape, value } from '../helpers/metrics.ts';
import { connectClient, memoryStdio, startMcpGateway } from '../mcp/harness.ts';
import type { McpGateway } from '../mcp/harness.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';

const OTHER = '_OTHER';

/** A chat completion for `model` through the gateway, streamed every other time; the status. */
async function chat(gw: AiGateway, prefix: string, model: string, stream: boolean): Promise<number> {
  const res = await request(`${gw.base}${prefix}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test' },
    body: JSON.stringify({ model, stream, messages: [{ role: 'user', content: 'hello' }] }),
  });
  await res.body.text();
  return res.statusCode;
}

async function metricsText(gw: AiGateway): Promise<string> {
  return (await request(`${gw.statsUrl}/metrics`)).body.text();
}

/** The distinct values of `label` across the samples of the LLM families. */
function modelsIn(text: string): Set<string> {
  const models = new Set<string>();
  for (const s of parseMetrics(text).samples) {
    const m = s.labels.gen_ai_request_model ?? (s.name.startsWith('switchyard_llm_') ? s.labels.model : undefined);
    if (m !== undefined) models.add(m);
  }
  return models;
}

describe('metrics: client-invented model names', () => {
  let provider: TestUpstream;
  let mock: Mock;
  let gw: AiGateway;
  before(async () => {
    // As OpenAI answers: 404 `model_not_found` for a model it does not serve.
    provider = await startUpstream((_req, res, body) => {
      const model = (JSON.parse(body.toString()) as { model: string }).model;
      if (model !== 'gpt-4o') {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `The model \`${model}\` does not exist`, type: 'invalid_request_error', code: 'model_not_found' } }));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'c1', object: 'chat.completion', model: 'gpt-4o-2024-08-06', choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }], usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } }));
    });
    mock = await startMock();
    gw = await startAiGateway([
      aiRoute('/strict', { name: 'strict', provider: { openAI: {} }, hostOverride: `127.0.0.1:${provider.port}` }),
      aiRoute('/lenient', { name: 'lenient', provider: { openAI: {} }, hostOverride: mock.hostPort }),
    ]);
  });
  after(async () => {
    await gw?.stop();
    await provider?.close();
    await mock?.stop();
  });

  it('1,000 made-up models the provider refuses count under `_OTHER`; a model it serves is a label from its first call', async () => {
    const before = (await metricsText(gw)).length;
    assert.equal(await chat(gw, '/strict', 'gpt-4o', false), 200);
    for (let i = 0; i < 1000; i++) assert.equal(await chat(gw, '/strict', `made-up-${i}-${'x'.repeat(240)}`, false), 404);
    const text = await metricsText(gw);
    const m = parseMetrics(text);
    assert.deepEqual([...modelsIn(text)].sort(), ['_OTHER', 'gpt-4o']);
    assert.equal(value(m, 'switchyard_llm_requests_total', { provider: 'openai', model: OTHER, streaming: 'false' }), 1000);
    assert.equal(value(m, 'switchyard_llm_requests_total', { provider: 'openai', model: 'gpt-4o', streaming: 'false' }), 1);
    assert.equal(value(m, 'switchyard_llm_tokens_total', { provider: 'openai', model: 'gpt-4o', type: 'input' }), 3);
    assert.equal(value(m, 'gen_ai_server_request_duration_seconds_count', { gen_ai_request_model: 'gpt-4o' }), 1);
    assert.ok(text.length - before < 20_000, `/metrics grew by ${text.length - before} characters`);
  });

  it('a provider that answers any model: at most 100 models per backend are labels, the rest `_OTHER`', async () => {
    for (let i = 0; i < 300; i++) assert.equal(await chat(gw, '/lenient', `any-${i}-${'y'.repeat(240)}`, i % 2 === 0), 200);
    const text = await metricsText(gw);
    const m = parseMetrics(text);
    const lenient = new Set(m.samples.filter((s) => s.name === 'switchyard_llm_requests_total' && s.labels.model?.startsWith('any-')).map((s) => s.labels.model));
    assert.equal(lenient.size, 100);
    const other = m.samples.filter((s) => s.name === 'switchyard_llm_requests_total' && s.labels.model === OTHER).reduce((n, s) => n + s.value, 0);
    assert.equal(other, 1000 + 300 - 100);
    // About 36 kB per labelled model of 250 characters across the LLM families (the GenAI client histograms of ADR
    // 0129 and their deprecated server aliases among them): bounded by the 100, not by the client.
    assert.ok(text.length < 4_000_000, `/metrics is ${text.length} characters`);
  });
});

describe('metrics: client-invented MCP tool names', () => {
  let gw: McpGateway;
  before(async () => {
    gw = await startMcpGateway({ targets: [memoryStdio('mem')] });
  });
  after(() => gw?.stop());

  it('a tool the target answered is a label without a tools/list first; 300 made-up tools are `_OTHER`', async () => {
    const { client, transport } = await connectClient(gw.mcpUrl);
    try {
      assert.equal((await client.callTool({ name: 'read_graph', arguments: {} })).isError ?? false, false);
      for (let i = 0; i < 300; i++) {
        // The MCP SDK's server answers a tool it does not have with a result marked `isError`, not a JSON-RPC error.
        const answer = await client.callTool({ name: `made-up-${i}`, arguments: {} }).catch((err: Error) => ({ isError: true, err }));
        assert.equal(answer.isError, true);
      }
    } finally {
      await transport.terminateSession();
      await client.close();
    }
    const m = await scrape(gw);
    const tools = new Set(m.samples.filter((s) => s.name === 'mcp_client_operation_duration_seconds_count').map((s) => s.labels.gen_ai_tool_name));
    assert.deepEqual([...tools].sort(), [OTHER, 'read_graph']);
    const other = m.samples.filter((s) => s.name === 'mcp_client_operation_duration_seconds_count' && s.labels.gen_ai_tool_name === OTHER).reduce((n, s) => n + s.value, 0);
    assert.equal(other, 300);
    assert.equal(value(m, 'mcp_client_operation_duration_seconds_count', { target: 'mem', gen_ai_tool_name: 'read_graph', error_type: '' }), 1);
  });
});
