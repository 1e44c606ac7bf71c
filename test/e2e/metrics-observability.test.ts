import assert from 'node:assert/strict';
import { rename } from 'node:fs/promises';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import { request } from 'undici';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { startGatewayOnFreePorts } from './proxy-support.ts';
import OpenAI from 'openai';
import { accessRecords, aiRoute, startAiGateway, startMock } from '../ai/harness.ts';
import type { AiGateway, Mock } from '../ai/harness.ts';
import { connectClient, fixtureStdio, memoryStdio, startMcpGateway } from '../mcp/harness.ts';
import type { McpGateway } from '../mcp/harness.ts';
import { parseMetrics, scrape, value } from '../helpers/metrics.ts';

describe('metrics: upstreams, process, config', () => {
  let gw: RunningGateway;
  let up: TestUpstream;
  let port: number;
  let downPort: number;
  let config: Record<string, unknown>;
  let flaky = 0;

  before(async () => {
    up = await startUpstream((req, res) => {
      // /flaky answers 503 once, then 200: one retry.
      const status = req.url?.startsWith('/flaky') && flaky++ % 2 === 0 ? 503 : 200;
      res.writeHead(status, { 'content-type': 'text/plain' });
      res.end(String(status));
    });
    downPort = await freePort();
    ({ gw, ports: [port] } = await startGatewayOnFreePorts(1, ([port]) => {
      config = {
        binds: [
          {
            port,
            listeners: [
              {
                name: 'main',
                routes: [
                  { name: 'flaky', matches: [{ path: { pathPrefix: '/flaky' } }], policies: { retry: { attempts: 2, codes: [503] } }, backends: [{ host: `127.0.0.1:${up.port}` }] },
                  { name: 'api', matches: [{ path: { pathPrefix: '/api' } }], backends: [{ host: `127.0.0.1:${up.port}` }] },
                  { name: 'down', matches: [{ path: { pathPrefix: '/down' } }], backends: [{ host: `127.0.0.1:${downPort}` }] },
                ],
              },
            ],
          },
        ],
      };
      return config;
    }));
  });
  after(async () => {
    await gw?.stop();
    await up?.close();
  });

  it('observes each upstream attempt in a per-backend duration histogram', async () => {
    for (let i = 0; i < 5; i++) await (await request(`${gw.url(port)}/api/${i}`)).body.dump();
    const m = await scrape(gw);
    const backend = `http://127.0.0.1:${up.port}`;
    assert.equal(m.types.get('switchyard_upstream_request_duration_seconds'), 'histogram');
    const count = value(m, 'switchyard_upstream_request_duration_seconds_count', { backend });
    assert.ok(count !== undefined && count >= 5, `count ${count}`);
    assert.equal(value(m, 'switchyard_upstream_request_duration_seconds_bucket', { backend, le: '+Inf' }), count);
    assert.equal(value(m, 'switchyard_upstream_request_duration_seconds_bucket', { backend, le: '30' }), count);
    assert.ok(value(m, 'switchyard_upstream_request_duration_seconds_sum', { backend })! > 0);
    // Buckets are cumulative.
    const buckets = m.samples.filter((s) => s.name === 'switchyard_upstream_request_duration_seconds_bucket' && s.labels.backend === backend).map((s) => s.value);
    for (let i = 1; i < buckets.length; i++) assert.ok(buckets[i]! >= buckets[i - 1]!);
  });

  it('counts connect errors by backend and code after a refused upstream', async () => {
    for (let i = 0; i < 2; i++) {
      const res = await request(`${gw.url(port)}/down`);
      assert.equal(res.statusCode, 503);
      await res.body.dump();
    }
    const m = await scrape(gw);
    assert.equal(m.types.get('switchyard_upstream_connect_errors_total'), 'counter');
    assert.equal(value(m, 'switchyard_upstream_connect_errors_total', { backend: `http://127.0.0.1:${downPort}`, code: 'ECONNREFUSED' }), 2);
  });

  it('counts requests refused before they parsed (malformed, headers too large) under their bind, with no route', async () => {
    const send = (bytes: string): Promise<string> =>
      new Promise((resolve, reject) => {
        const socket = connect(port, '127.0.0.1', () => socket.end(bytes));
        let got = '';
        socket.on('data', (d: Buffer) => (got += d.toString('latin1')));
        socket.on('close', () => resolve(got));
        socket.on('error', reject);
      });
    const before = await scrape(gw);
    const refused = (m: ReturnType<typeof parseMetrics>, status: string): number => value(m, 'switchyard_requests_total', { bind: String(port), listener: '', route: '', status }) ?? 0;
    assert.match(await send('GET /api/x HTTP/1.1\r\nHost: a\r\nBad Header\r\n\r\n'), /^HTTP\/1\.1 400 /);
    assert.match(await send('NOT A REQUEST\r\n\r\n'), /^HTTP\/1\.1 400 /);
    assert.match(await send(`GET /api/x HTTP/1.1\r\nHost: a\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`), /^HTTP\/1\.1 431 /);
    const after = await scrape(gw);
    assert.equal(refused(after, '400') - refused(before, '400'), 2);
    assert.equal(refused(after, '431') - refused(before, '431'), 1);
    assert.equal(value(after, 'switchyard_request_duration_seconds_count', { bind: String(port), listener: '', route: '', status: '431' }), refused(after, '431'));
  });

  it('counts retries by backend', async () => {
    const res = await request(`${gw.url(port)}/flaky`);
    assert.equal(res.statusCode, 200);
    await res.body.dump();
    const m = await scrape(gw);
    assert.equal(m.types.get('switchyard_upstream_retries_total'), 'counter');
    assert.equal(value(m, 'switchyard_upstream_retries_total', { backend: `http://127.0.0.1:${up.port}` }), 1);
  });

  it('exposes process metrics read at scrape time', async () => {
    const m = await scrape(gw);
    assert.ok(value(m, 'process_resident_memory_bytes')! > 1e6);
    assert.ok(value(m, 'process_open_fds')! > 0);
    assert.ok(value(m, 'process_cpu_seconds_total')! > 0);
    assert.ok(value(m, 'nodejs_heap_size_used_bytes')! > 0);
    assert.ok(value(m, 'nodejs_heap_size_total_bytes')! >= value(m, 'nodejs_heap_size_used_bytes')!);
    const start = value(m, 'process_start_time_seconds')!;
    assert.ok(start > 1.6e9 && start <= Date.now() / 1000 + 1);
    assert.ok(value(m, 'nodejs_eventloop_delay_seconds', { quantile: '0.99' })! >= 0);
    // The sampler's 20 ms period is not delay: a loop that is mostly idle reads well under it at the median.
    assert.ok(value(m, 'nodejs_eventloop_delay_seconds', { quantile: '0.5' })! < 0.01, `median ${value(m, 'nodejs_eventloop_delay_seconds', { quantile: '0.5' })}`);
    assert.equal(m.types.get('nodejs_gc_duration_seconds'), 'histogram');
    const before = m.samples.filter((s) => s.name === 'nodejs_gc_duration_seconds_count').reduce((a, s) => a + s.value, 0);
    // Allocate until a GC happens (observer entries arrive asynchronously), then see it counted.
    const gcCount = async (): Promise<number> => (await scrape(gw)).samples.filter((s) => s.name === 'nodejs_gc_duration_seconds_count').reduce((a, s) => a + s.value, 0);
    let after = before;
    for (let round = 0; round < 50 && after <= before; round++) {
      let keep: unknown[] = [];
      for (let i = 0; i < 200_000; i++) keep.push({ i });
      keep = [];
      await new Promise((r) => setTimeout(r, 20));
      after = await gcCount();
      assert.equal(keep.length, 0);
    }
    assert.ok(after > before, `GC pauses counted (${before} -> ${after})`);
  });

  it('counts a failed reload and moves the generation gauge on a good one', async () => {
    const before = await scrape(gw);
    const generation = value(before, 'switchyard_config_generation')!;
    const invalid = value(before, 'switchyard_config_reloads_total', { result: 'invalid' }) ?? 0;
    const live = gw.gateway.snapshot!.config.config;
    assert.equal(await gw.gateway.reload(stringify({ ...config, config: live, binds: 'not a list' })), false);
    const failed = await scrape(gw);
    assert.equal(value(failed, 'switchyard_config_reloads_total', { result: 'invalid' }), invalid + 1);
    assert.equal(value(failed, 'switchyard_config_generation'), generation);
    const good = structuredClone(config) as { binds: { listeners: { routes: unknown[] }[] }[] };
    good.binds[0]!.listeners[0]!.routes.push({ name: 'extra', matches: [{ path: { exact: '/extra' } }], policies: { directResponse: { status: 200, body: 'x' } } });
    assert.equal(await gw.gateway.reload(stringify({ ...good, config: live })), true);
    const ok = await scrape(gw);
    // One more per applied reload: the refused one above did not count.
    assert.equal(value(ok, 'switchyard_config_generation'), generation + 1);
    assert.equal(((await (await fetch(`${gw.adminUrl}/config_dump`)).json()) as { generation: number }).generation, generation + 1);
    assert.equal(value(ok, 'switchyard_config_reloads_total', { result: 'applied' }), 1);
    // A config file that cannot be read is a failed reload too.
    await rename(gw.file, `${gw.file}.away`);
    try {
      assert.equal(await gw.gateway.reload(), false);
    } finally {
      await rename(`${gw.file}.away`, gw.file);
    }
    const unreadable = await scrape(gw);
    assert.equal(value(unreadable, 'switchyard_config_reloads_total', { result: 'unreadable' }), 1);
    assert.equal(value(unreadable, 'switchyard_config_generation'), value(ok, 'switchyard_config_generation'));
  });
});

describe('metrics: GenAI histograms (OTel semantic conventions)', () => {
  let mock: Mock;
  let gw: AiGateway;
  let limited: TestUpstream;
  before(async () => {
    mock = await startMock();
    // A provider that rate-limits every call.
    limited = await startUpstream((_req, res) => {
      res.writeHead(429, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'slow down', type: 'rate_limit_error' } }));
    });
    gw = await startAiGateway([
      aiRoute('/oa', { name: 'oa', provider: { openAI: {} }, hostOverride: mock.hostPort }),
      aiRoute('/rl', { name: 'rl', provider: { openAI: {} }, hostOverride: `127.0.0.1:${limited.port}` }),
    ]);
  });
  after(async () => {
    await gw?.stop();
    await mock?.stop();
    await limited?.close();
  });

  it('observes token usage, time to first token and request duration of a streamed completion', async () => {
    const client = new OpenAI({ baseURL: `${gw.base}/oa/v1`, apiKey: 'sk-test', maxRetries: 0 });
    const stream = await client.chat.completions.create({ model: 'gpt-4.1', stream: true, messages: [{ role: 'user', content: 'hello' }] });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    assert.equal(text, 'Hello from the mock!');
    await accessRecords(gw, '/oa/v1/chat/completions');
    const m = await scrape(gw);
    const call = { gen_ai_operation_name: 'chat', gen_ai_provider_name: 'openai', gen_ai_request_model: 'gpt-4.1' };
    assert.equal(m.types.get('gen_ai_client_token_usage'), 'histogram');
    assert.equal(value(m, 'gen_ai_client_token_usage_count', { ...call, gen_ai_token_type: 'input' }), 1);
    assert.equal(value(m, 'gen_ai_client_token_usage_sum', { ...call, gen_ai_token_type: 'input' }), 11);
    assert.equal(value(m, 'gen_ai_client_token_usage_sum', { ...call, gen_ai_token_type: 'output' }), 5);
    // 5 output tokens fall in the le="16" bucket, not in le="4".
    assert.equal(value(m, 'gen_ai_client_token_usage_bucket', { ...call, gen_ai_token_type: 'output', le: '4' }), 0);
    assert.equal(value(m, 'gen_ai_client_token_usage_bucket', { ...call, gen_ai_token_type: 'output', le: '16' }), 1);
    assert.equal(m.types.get('gen_ai_server_time_to_first_token_seconds'), 'histogram');
    assert.equal(value(m, 'gen_ai_server_time_to_first_token_seconds_count', call), 1);
    assert.equal(value(m, 'gen_ai_server_request_duration_seconds_count', call), 1);
    const ttft = value(m, 'gen_ai_server_time_to_first_token_seconds_sum', call)!;
    const total = value(m, 'gen_ai_server_request_duration_seconds_sum', call)!;
    assert.ok(ttft > 0 && ttft <= total, `ttft ${ttft} <= duration ${total}`);
    // The gateway is the provider's client: the OTel client metrics (ADR 0129), the server names above kept as aliases.
    assert.equal(m.types.get('gen_ai_client_operation_duration_seconds'), 'histogram');
    assert.equal(value(m, 'gen_ai_client_operation_duration_seconds_count', { ...call, error_type: '' }), 1);
    assert.equal(value(m, 'gen_ai_client_operation_duration_seconds_sum', { ...call, error_type: '' }), total);
    assert.equal(m.types.get('gen_ai_client_operation_time_to_first_chunk_seconds'), 'histogram');
    assert.equal(value(m, 'gen_ai_client_operation_time_to_first_chunk_seconds_count', call), 1);
    assert.equal(value(m, 'gen_ai_client_operation_time_to_first_chunk_seconds_sum', call), ttft);
    assert.equal(value(m, 'gen_ai_client_operation_time_to_first_chunk_seconds_bucket', { ...call, le: '81.92' }), 1);
  });

  it('observes a failed call by its error type: the provider\'s status', async () => {
    const client = new OpenAI({ baseURL: `${gw.base}/rl/v1`, apiKey: 'sk-test', maxRetries: 0 });
    await assert.rejects(client.chat.completions.create({ model: 'gpt-limited', messages: [{ role: 'user', content: 'hello' }] }), OpenAI.RateLimitError);
    await accessRecords(gw, '/rl/v1/chat/completions');
    const m = await scrape(gw);
    // A model the provider has not yet served is no label of its own (ADR 0130): a client could invent any number.
    const call = { gen_ai_operation_name: 'chat', gen_ai_provider_name: 'openai', gen_ai_request_model: '_OTHER' };
    assert.equal(value(m, 'gen_ai_client_operation_duration_seconds_count', { ...call, error_type: '429' }), 1);
    assert.equal(value(m, 'gen_ai_client_operation_duration_seconds_count', { ...call, error_type: '' }), undefined);
    assert.equal(value(m, 'gen_ai_server_request_duration_seconds_count', call), undefined);
  });

  it('observes a non-streamed completion without a time to first token', async () => {
    const client = new OpenAI({ baseURL: `${gw.base}/oa/v1`, apiKey: 'sk-test', maxRetries: 0 });
    const res = await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(res.choices[0]!.message.content, 'Hello from the mock!');
    await accessRecords(gw, '/oa/v1/chat/completions', 2);
    const m = await scrape(gw);
    const call = { gen_ai_operation_name: 'chat', gen_ai_provider_name: 'openai', gen_ai_request_model: 'gpt-4o' };
    assert.equal(value(m, 'gen_ai_client_token_usage_sum', { ...call, gen_ai_token_type: 'input' }), 11);
    assert.equal(value(m, 'gen_ai_server_request_duration_seconds_count', call), 1);
    assert.equal(value(m, 'gen_ai_server_time_to_first_token_seconds_count', call), undefined);
    assert.equal(value(m, 'gen_ai_client_operation_duration_seconds_count', { ...call, error_type: '' }), 1);
    assert.equal(value(m, 'gen_ai_client_operation_time_to_first_chunk_seconds_count', call), undefined);
  });

  it('/metrics declares its charset: a label value that is not ASCII (a model name) reads back as sent', async () => {
    const model = 'mod\u00e8le-\u65e5\u672c';
    const client = new OpenAI({ baseURL: `${gw.base}/oa/v1`, apiKey: 'sk-test', maxRetries: 0 });
    await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hello' }] });
    const res = await request(`${gw.statsUrl}/metrics`);
    const type = String(res.headers['content-type']);
    assert.match(type, /^text\/plain; version=0\.0\.4; charset=utf-8$/);
    // Decoded as HTTP says (text/* without a charset is ISO-8859-1), the label is the model's name.
    const charset = /charset=([^;]+)/.exec(type)?.[1] ?? 'latin1';
    const text = new TextDecoder(charset).decode(await res.body.arrayBuffer());
    assert.equal(value(parseMetrics(text), 'switchyard_llm_requests_total', { model }), 1);
  });
});

describe('metrics: MCP tools/call and list fan-out', () => {
  let gw: McpGateway;
  before(async () => {
    gw = await startMcpGateway({ targets: [fixtureStdio('fx'), memoryStdio('mem')] });
  });
  after(() => gw?.stop());

  it('observes tools/call by target and tool, and the list fan-out, after calls through the MCP SDK client', async () => {
    const { client, transport } = await connectClient(gw.mcpUrl);
    try {
      const tools = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(tools.includes('fx_pid') && tools.includes('mem_read_graph'));
      for (let i = 0; i < 2; i++) assert.equal((await client.callTool({ name: 'fx_pid', arguments: {} })).isError ?? false, false);
      await client.callTool({ name: 'mem_read_graph', arguments: {} });
    } finally {
      await transport.terminateSession();
      await client.close();
    }
    const m = await scrape(gw);
    assert.equal(m.types.get('mcp_client_operation_duration_seconds'), 'histogram');
    const pid = { mcp_method_name: 'tools/call', target: 'fx', gen_ai_tool_name: 'pid', error_type: '' };
    assert.equal(value(m, 'mcp_client_operation_duration_seconds_count', pid), 2);
    assert.equal(value(m, 'mcp_client_operation_duration_seconds_bucket', { ...pid, le: '+Inf' }), 2);
    assert.ok(value(m, 'mcp_client_operation_duration_seconds_sum', pid)! > 0);
    assert.equal(value(m, 'mcp_client_operation_duration_seconds_count', { target: 'mem', gen_ai_tool_name: 'read_graph' }), 1);
    assert.equal(m.types.get('switchyard_mcp_list_fanout_duration_seconds'), 'histogram');
    assert.ok(value(m, 'switchyard_mcp_list_fanout_duration_seconds_count', { mcp_method_name: 'tools/list' })! >= 1);
  });
});
