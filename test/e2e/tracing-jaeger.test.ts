// Traces end to end (issue 12 item 1, ADR 0037): the gateway exports over OTLP to a real Jaeger started here, and
// the assertions read the stored traces back through Jaeger's query API: the client's trace continued, one SERVER
// span per request, one CLIENT span per upstream attempt (a retry is a second one), the upstream joined through
// `traceparent`, a policy's own call (extAuthz over HTTP) as a child, the ids in the JSON access log.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { locateJaeger, parentOf, startJaeger, tag } from '../helpers/jaeger.ts';
import type { JaegerSpan, RunningJaeger } from '../helpers/jaeger.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import { connectClient, fixtureStdio, memoryStdio, startMcpGateway } from '../mcp/harness.ts';
import { z } from 'zod';
import type { TestUpstream } from '../helpers/upstream.ts';

// Spans leave 50 ms after their batch's first, not a second (OTEL_BSP_SCHEDULE_DELAY): each test waits for its trace.
process.env.OTEL_BSP_SCHEDULE_DELAY = '50';

const found = locateJaeger();

const CLIENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';

describe('tracing to Jaeger', { skip: 'skip' in found ? found.skip : false }, () => {
  let jaeger: RunningJaeger;
  let upstream: TestUpstream;
  let authz: Server;
  const authzSeen: IncomingHttpHeaders[] = [];
  let gw: RunningGateway;
  let base: string;
  let flaky = 0;

  const start = async (tracing: Record<string, unknown>): Promise<{ gw: RunningGateway; base: string }> => {
    const port = await freePort();
    const authzPort = (authz.address() as AddressInfo).port;
    const backends = [{ host: `127.0.0.1:${upstream.port}` }];
    const g = await startGateway({
      config: { logging: { format: 'json' }, tracing },
      binds: [
        {
          port,
          listeners: [
            {
              name: 'main',
              routes: [
                { name: 'flaky', matches: [{ path: { pathPrefix: '/flaky' } }], policies: { retry: { attempts: 1, codes: [503] } }, backends },
                { name: 'guarded', matches: [{ path: { pathPrefix: '/guarded' } }], policies: { extAuthz: { host: `127.0.0.1:${authzPort}`, protocol: { http: {} } } }, backends },
                { name: 'api', matches: [{ path: { pathPrefix: '/api' } }], backends },
                { name: 'agent', matches: [{ path: { pathPrefix: '/agent' } }], policies: { a2a: {} }, backends },
                { name: 'llm', matches: [{ path: { pathPrefix: '/v1' } }], policies: { backendAuth: { key: 'sk-test' } }, backends: [{ ai: { name: 'openai', provider: { openAI: {} }, hostOverride: `127.0.0.1:${upstream.port}` } }] },
              ],
            },
          ],
        },
      ],
    });
    return { gw: g, base: `http://127.0.0.1:${port}` };
  };

  before(async () => {
    jaeger = await startJaeger(found as { bin: string });
    upstream = await startUpstream((req, res) => {
      if (req.url === '/agent') {
        const task = { jsonrpc: '2.0', id: 1, result: { kind: 'task', id: 't1', contextId: 'ctx-42', status: { state: 'completed' } } };
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(task));
        return;
      }
      if (req.url === '/v1/chat/completions' && req.headers['x-cut-stream']) {
        // One chunk of a streamed answer, then the provider's connection breaks.
        const chunk = { id: 'c2', object: 'chat.completion.chunk', model: 'gpt-4o-2024-08-06', choices: [{ index: 0, delta: { content: 'hel' } }] };
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(`data: ${JSON.stringify(chunk)}\n\n`);
        setTimeout(() => res.socket?.destroy(), 50);
        return;
      }
      if (req.url === '/v1/chat/completions') {
        const completion = { id: 'c1', object: 'chat.completion', model: 'gpt-4o-2024-08-06', choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }], usage: { prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 } };
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(completion));
        return;
      }
      if (req.url?.startsWith('/flaky') && flaky++ === 0) {
        res.writeHead(503).end('busy');
        return;
      }
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
    authz = createServer((req, res) => {
      authzSeen.push(req.headers);
      res.writeHead(200).end();
    });
    await new Promise<void>((resolve) => authz.listen(0, '127.0.0.1', resolve));
    ({ gw, base } = await start({ otlpEndpoint: jaeger.otlpHttp, otlpProtocol: 'http', serviceName: 'switchyard-test', resourceAttributes: { 'deployment.environment.name': 'test' } }));
  });

  after(async () => {
    await gw?.stop();
    await upstream?.close();
    await new Promise((resolve) => authz?.close(resolve));
    await jaeger?.stop();
  });

  const received = (path: string): IncomingHttpHeaders[] => upstream.received.filter((r) => r.url.startsWith(path)).map((r) => r.headers);
  const spanOf = (spans: JaegerSpan[], id: string): JaegerSpan => spans.find((s) => s.spanID === id) ?? assert.fail(`no span ${id}`);

  it("continues the client's trace: a SERVER span under the client's span, one CLIENT span per attempt, the upstream in the trace", async () => {
    const r = await fetch(`${base}/flaky/items?id=1`, {
      headers: { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`, baggage: 'tenant=acme', 'user-agent': 'trace-test' },
    });
    assert.equal(r.status, 200);
    assert.equal(await r.text(), 'ok');

    // Both attempts reached the upstream, each with its own span id in the client's trace.
    const sent = received('/flaky').map((h) => String(h.traceparent));
    assert.equal(sent.length, 2);
    const ids = sent.map((tp) => {
      const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(tp);
      assert.ok(m, `traceparent ${tp}`);
      assert.equal(m[1], CLIENT_TRACE);
      return m[2]!;
    });
    assert.notEqual(ids[0], ids[1]);
    assert.equal(received('/flaky')[1]!.baggage, 'tenant=acme');

    const trace = await jaeger.waitForTrace(CLIENT_TRACE, 3);
    const server = trace.spans.find((s) => tag(s, 'span.kind') === 'server') ?? assert.fail('no server span');
    assert.equal(server.operationName, 'GET /flaky/*');
    assert.equal(parentOf(server), CLIENT_SPAN);
    assert.equal(tag(server, 'http.request.method'), 'GET');
    assert.equal(tag(server, 'http.route'), '/flaky/*');
    assert.equal(tag(server, 'url.path'), '/flaky/items');
    assert.equal(tag(server, 'http.response.status_code'), 200);
    assert.equal(tag(server, 'client.address'), '127.0.0.1');
    assert.equal(tag(server, 'route'), 'flaky');
    assert.equal(tag(server, 'listener'), 'main');
    assert.equal(tag(server, 'user_agent.original'), 'trace-test');
    // OTel HTTP: the Host header's name and port as two attributes.
    assert.equal(tag(server, 'server.address'), '127.0.0.1');
    assert.equal(tag(server, 'server.port'), Number(new URL(base).port));

    const [first, second] = ids.map((id) => spanOf(trace.spans, id));
    for (const attempt of [first!, second!]) {
      assert.equal(tag(attempt, 'span.kind'), 'client');
      assert.equal(parentOf(attempt), server.spanID);
      assert.equal(tag(attempt, 'server.address'), '127.0.0.1');
      assert.equal(tag(attempt, 'server.port'), upstream.port);
      assert.equal(tag(attempt, 'url.full'), `http://127.0.0.1:${upstream.port}/flaky/items`);
    }
    assert.equal(tag(first!, 'http.response.status_code'), 503);
    assert.equal(tag(first!, 'otel.status_code'), 'ERROR');
    assert.equal(tag(second!, 'http.response.status_code'), 200);
    assert.equal(tag(second!, 'http.request.resend_count'), 1);

    const process = trace.processes[server.processID]!;
    assert.equal(process.serviceName, 'switchyard-test');
    assert.equal(process.tags.find((t) => t.key === 'deployment.environment.name')?.value, 'test');

    // The access log line carries the ids of the SERVER span.
    const line = gw.logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === 'request' && l['http.path'] === '/flaky/items?id=1');
    assert.equal(line?.trace_id, CLIENT_TRACE);
    assert.equal(line?.span_id, server.spanID);
  });

  it("a policy's own call (extAuthz over HTTP) is a CLIENT span under the request's, and the service gets its traceparent", async () => {
    const trace = '5bf92f3577b34da6a3ce929d0e0e4737';
    const r = await fetch(`${base}/guarded/x`, { headers: { traceparent: `00-${trace}-${CLIENT_SPAN}-01` } });
    assert.equal(r.status, 200);
    const stored = await jaeger.waitForTrace(trace, 3);
    const server = stored.spans.find((s) => tag(s, 'span.kind') === 'server')!;
    const check = String(authzSeen.at(-1)!.traceparent);
    const checkSpan = spanOf(stored.spans, check.split('-')[2]!);
    assert.equal(tag(checkSpan, 'span.kind'), 'client');
    assert.equal(parentOf(checkSpan), server.spanID);
    assert.equal(tag(checkSpan, 'server.port'), (authz.address() as AddressInfo).port);
    const forwarded = spanOf(stored.spans, String(received('/guarded').at(-1)!.traceparent).split('-')[2]!);
    assert.equal(parentOf(forwarded), server.spanID);
  });

  it("a route where only the kernel runs (its span passed explicitly, ADR 0062): each attempt under its own request's span, mixed with a policy's route, baggage and tracestate upstream", async () => {
    const traces = Array.from({ length: 12 }, (_, i) => `6bf92f3577b34da6a3ce929d0e0e47${(i + 16).toString(16)}`);
    const path = (i: number): string => `/${i % 2 ? 'guarded' : 'api'}/mixed-${i}`;
    // Concurrent, on the same upstream connections as requests that run inside their span's async context.
    const statuses = await Promise.all(
      traces.map(async (t, i) => {
        const r = await fetch(`${base}${path(i)}`, { headers: { traceparent: `00-${t}-${CLIENT_SPAN}-01`, baggage: `req=${i}`, tracestate: `vendor=v${i}` } });
        await r.text();
        return r.status;
      }),
    );
    assert.deepEqual(statuses, traces.map(() => 200));
    const attempts: string[] = [];
    for (let i = 0; i < traces.length; i++) {
      const h = received(path(i))[0] ?? assert.fail(`upstream did not get ${path(i)}`);
      const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(String(h.traceparent));
      assert.ok(m, String(h.traceparent));
      assert.equal(m[1], traces[i], `${path(i)} went upstream in its own trace`);
      assert.equal(h.baggage, `req=${i}`);
      assert.equal(h.tracestate, `vendor=v${i}`);
      attempts.push(m[2]!);
    }
    for (let i = 0; i < traces.length; i += 2) {
      const stored = await jaeger.waitForTrace(traces[i]!, 2);
      const server = stored.spans.find((s) => tag(s, 'span.kind') === 'server') ?? assert.fail('no server span');
      assert.equal(parentOf(server), CLIENT_SPAN);
      assert.equal(tag(server, 'route'), 'api');
      assert.equal(tag(server, 'url.path'), path(i));
      const attempt = spanOf(stored.spans, attempts[i]!);
      assert.equal(tag(attempt, 'span.kind'), 'client');
      assert.equal(parentOf(attempt), server.spanID);
      assert.equal(tag(attempt, 'http.response.status_code'), 200);
    }
  });

  it('without a client trace and without randomSampling nothing is recorded, but the upstream still gets a (not sampled) traceparent', async () => {
    const r = await fetch(`${base}/api/unsampled`);
    assert.equal(r.status, 200);
    const tp = String(received('/api/unsampled')[0]!.traceparent);
    const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-00$/.exec(tp);
    assert.ok(m, tp);
    // A sampled request after it: batches are exported one at a time, oldest first, so once its trace is in Jaeger
    // a span recorded for the unsampled request would be there too.
    const later = randomBytes(16).toString('hex');
    const next = await fetch(`${base}/api/after-unsampled`, { headers: { traceparent: `00-${later}-${randomBytes(8).toString('hex')}-01` } });
    assert.equal(next.status, 200);
    await jaeger.waitForTrace(later, 1);
    assert.equal(await jaeger.trace(m[1]!), undefined);
  });

  it("a client's tracestate without a traceparent, or beside one that does not parse, is not sent upstream with the gateway's new trace (W3C: it is discarded)", async () => {
    const cases: [string, Record<string, string>][] = [
      ['/api/state-alone', { tracestate: 'vendor=stale' }],
      ['/guarded/state-alone', { tracestate: 'vendor=stale' }],
      ['/api/state-bad-parent', { traceparent: '00-zzzz-00f067aa0ba902b7-01', tracestate: 'vendor=stale' }],
      ['/guarded/state-bad-parent', { traceparent: `00-${'0'.repeat(32)}-${CLIENT_SPAN}-01`, tracestate: 'vendor=stale', baggage: 'tenant=acme' }],
      // A valid parent whose tracestate has no valid member: nothing to pass on (not an empty header).
      ['/api/state-none-valid', { traceparent: `00-d0f92f3577b34da6a3ce929d0e0e4701-${CLIENT_SPAN}-01`, tracestate: '!!!invalid' }],
      ['/guarded/state-none-valid', { traceparent: `00-d0f92f3577b34da6a3ce929d0e0e4702-${CLIENT_SPAN}-01`, tracestate: '!!!invalid' }],
    ];
    for (const [path, headers] of cases) {
      const r = await fetch(`${base}${path}`, { headers });
      assert.equal(r.status, 200, path);
      const h = received(path)[0] ?? assert.fail(`upstream did not get ${path}`);
      assert.match(String(h.traceparent), /^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/, path);
      assert.notEqual(String(h.traceparent).split('-')[1], '0'.repeat(32), path);
      assert.equal(h.tracestate, undefined, `${path}: tracestate ${String(h.tracestate)}`);
      // Baggage is not tied to the trace: it still goes through.
      if (headers.baggage) assert.equal(h.baggage, headers.baggage, path);
    }
  });

  it("a request the gateway refused with a 4xx is not an ERROR span (OTel HTTP: a SERVER span's 4xx leaves the status unset); the reason is on the span", async () => {
    const cases: [string, string, number, RegExp][] = [
      ['/nowhere', 'c0f92f3577b34da6a3ce929d0e0e4701', 404, /no route matches GET \/nowhere/],
      ['/api/a%2Fb', 'c0f92f3577b34da6a3ce929d0e0e4702', 400, /encoded slash/],
    ];
    for (const [path, traceId, status, reason] of cases) {
      const r = await fetch(`${base}${path}`, { headers: { traceparent: `00-${traceId}-${CLIENT_SPAN}-01` } });
      assert.equal(r.status, status, path);
      const stored = await jaeger.waitForTrace(traceId, 1);
      const server = stored.spans.find((s) => tag(s, 'span.kind') === 'server') ?? assert.fail('no server span');
      assert.equal(tag(server, 'http.response.status_code'), status);
      assert.equal(tag(server, 'otel.status_code'), undefined, `${path}: status ${String(tag(server, 'otel.status_code'))}`);
      assert.equal(tag(server, 'error'), undefined, path);
      assert.equal(tag(server, 'error.type'), undefined, path);
      assert.match(String(tag(server, 'switchyard.error')), reason);
    }
  });

  it('a method OTel does not know (WebDAV PROPFIND) is _OTHER on the spans, its name in http.request.method_original (OTel HTTP)', async () => {
    const traceId = 'c0f92f3577b34da6a3ce929d0e0e4710';
    const r = await fetch(`${base}/api/dav`, { method: 'PROPFIND', headers: { traceparent: `00-${traceId}-${CLIENT_SPAN}-01` } });
    assert.equal(r.status, 200);
    assert.equal(upstream.received.at(-1)!.method, 'PROPFIND', 'the upstream still gets the method as sent');
    const stored = await jaeger.waitForTrace(traceId, 2);
    const server = stored.spans.find((s) => tag(s, 'span.kind') === 'server') ?? assert.fail('no server span');
    const client = stored.spans.find((s) => tag(s, 'span.kind') === 'client') ?? assert.fail('no client span');
    assert.equal(server.operationName, 'HTTP /api/*');
    assert.equal(client.operationName, 'HTTP');
    for (const span of [server, client]) {
      assert.equal(tag(span, 'http.request.method'), '_OTHER');
      assert.equal(tag(span, 'http.request.method_original'), 'PROPFIND');
    }
  });

  it('randomSampling starts traces; OTLP over gRPC (the default protocol) reaches Jaeger too', async () => {
    const other = await start({ otlpEndpoint: jaeger.otlpGrpc, randomSampling: true, serviceName: 'switchyard-grpc' });
    try {
      const r = await fetch(`${other.base}/api/sampled`);
      assert.equal(r.status, 200);
      const tp = String(received('/api/sampled')[0]!.traceparent);
      const [, traceId, spanId, flags] = tp.split('-');
      assert.equal(flags, '01');
      const trace = await jaeger.waitForTrace(traceId!, 2);
      const server = trace.spans.find((s) => tag(s, 'span.kind') === 'server')!;
      assert.equal(parentOf(server), undefined);
      assert.equal(parentOf(spanOf(trace.spans, spanId!)), server.spanID);
      assert.equal(trace.processes[server.processID]!.serviceName, 'switchyard-grpc');
    } finally {
      await other.gw.stop();
    }
  });

  it('MCP: a span per JSON-RPC method (mcp.method.name, gen_ai.tool.name), a CLIENT span per target request, trace context in params._meta', async () => {
    const trace = '7bf92f3577b34da6a3ce929d0e0e4739';
    const mcp = await startMcpGateway({ targets: [fixtureStdio('fixture')] }, { staticConfig: { tracing: { otlpEndpoint: jaeger.otlpHttp, otlpProtocol: 'http' } } });
    try {
      const { client } = await connectClient(mcp.mcpUrl, { headers: { traceparent: `00-${trace}-${CLIENT_SPAN}-01` } });
      const result = (await client.callTool({ name: 'meta', arguments: {} })) as { content: { text: string }[] };
      const meta = JSON.parse(result.content[0]!.text) as { traceparent?: string };
      await client.close();
      assert.match(String(meta.traceparent), new RegExp(`^00-${trace}-[0-9a-f]{16}-01$`));
      const targetSpanId = meta.traceparent!.split('-')[2]!;
      // The HTTP request's span ends last (after the response): wait for the whole chain.
      const chain = (t: { spans: JaegerSpan[] }): boolean => {
        const target = t.spans.find((x) => x.spanID === targetSpanId);
        const method = target && t.spans.find((x) => x.spanID === parentOf(target));
        return method !== undefined && t.spans.some((x) => x.spanID === parentOf(method));
      };
      const stored = await jaeger.waitForTrace(trace, chain);
      const toTarget = spanOf(stored.spans, targetSpanId);
      assert.equal(toTarget.operationName, 'tools/call');
      assert.equal(tag(toTarget, 'span.kind'), 'client');
      assert.equal(tag(toTarget, 'mcp.target'), 'fixture');
      assert.equal(tag(toTarget, 'gen_ai.tool.name'), 'meta');
      const method = spanOf(stored.spans, parentOf(toTarget)!);
      assert.equal(method.operationName, 'tools/call meta');
      assert.equal(tag(method, 'mcp.method.name'), 'tools/call');
      assert.equal(tag(method, 'gen_ai.tool.name'), 'meta');
      assert.equal(tag(method, 'gen_ai.operation.name'), 'execute_tool');
      // The gateway session's identity (not the sealed Mcp-Session-Id token, which resumes the session).
      assert.match(String(tag(method, 'mcp.session.id')), /^[0-9a-f-]{16,}$/i);
      // The protocol version the session negotiated (OTel MCP conventions, ADR 0171).
      assert.match(String(tag(method, 'mcp.protocol.version')), /^\d{4}-\d{2}-\d{2}$/);
      const http = spanOf(stored.spans, parentOf(method)!);
      assert.equal(tag(http, 'span.kind'), 'server');
      assert.equal(tag(http, 'http.request.method'), 'POST');
    } finally {
      await mcp.stop();
    }
  });

  it('MCP: a made-up tool or method names no span (ADR 0130): `tools/call` alone, `_OTHER` with rpc.method_original', async () => {
    // The memory server refuses a tool it does not have (as most servers do; the fixture answers any name).
    const mcp = await startMcpGateway({ targets: [memoryStdio('mem')] }, { staticConfig: { tracing: { otlpEndpoint: jaeger.otlpHttp, otlpProtocol: 'http' } } });
    try {
      const toolTrace = '7bf92f3577b34da6a3ce929d0e0e4801';
      const tool = await connectClient(mcp.mcpUrl, { headers: { traceparent: `00-${toolTrace}-${CLIENT_SPAN}-01` } });
      await tool.client.callTool({ name: 'made-up-tool', arguments: {} }).catch(() => undefined);
      await tool.client.close();
      const methodTrace = '7bf92f3577b34da6a3ce929d0e0e4802';
      const method = await connectClient(mcp.mcpUrl, { headers: { traceparent: `00-${methodTrace}-${CLIENT_SPAN}-01` } });
      await method.client.request({ method: 'made/up', params: {} }, z.object({}).passthrough()).catch(() => undefined);
      await method.client.close();

      const tools = await jaeger.waitForTrace(toolTrace, (t) => t.spans.some((x) => tag(x, 'mcp.method.name') === 'tools/call' && tag(x, 'span.kind') === 'server'));
      const toolSpan = tools.spans.find((x) => tag(x, 'mcp.method.name') === 'tools/call' && tag(x, 'span.kind') === 'server')!;
      assert.equal(toolSpan.operationName, 'tools/call', 'a tool no target declared is not in the span name');
      assert.equal(tag(toolSpan, 'gen_ai.tool.name'), 'made-up-tool');

      const methods = await jaeger.waitForTrace(methodTrace, (t) => t.spans.filter((x) => x.operationName === '_OTHER').length === 2);
      const others = methods.spans.filter((x) => x.operationName === '_OTHER');
      for (const span of others) {
        assert.equal(tag(span, 'mcp.method.name'), '_OTHER');
        assert.equal(tag(span, 'rpc.method_original'), 'made/up');
      }
      assert.deepEqual(others.map((x) => tag(x, 'span.kind')).sort(), ['client', 'server'], 'the method span and the target request span');
      assert.ok(!methods.spans.some((x) => x.operationName.includes('made/up')));
    } finally {
      await mcp.stop();
    }
  });

  it('LLM: a GenAI CLIENT span (operation, provider, request and response model, token usage) with the provider call below it', async () => {
    const trace = '8bf92f3577b34da6a3ce929d0e0e473a';
    const r = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', traceparent: `00-${trace}-${CLIENT_SPAN}-01` },
      body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }] }),
    });
    assert.equal(r.status, 200);
    await r.text();
    const stored = await jaeger.waitForTrace(trace, 3);
    const server = stored.spans.find((s) => tag(s, 'span.kind') === 'server')!;
    const llm = stored.spans.find((s) => s.operationName === 'chat gpt-4o') ?? assert.fail('no GenAI span');
    assert.equal(parentOf(llm), server.spanID);
    assert.equal(tag(llm, 'span.kind'), 'client');
    assert.equal(tag(llm, 'gen_ai.operation.name'), 'chat');
    assert.equal(tag(llm, 'gen_ai.provider.name'), 'openai');
    assert.equal(tag(llm, 'gen_ai.request.model'), 'gpt-4o');
    assert.equal(tag(llm, 'gen_ai.response.model'), 'gpt-4o-2024-08-06');
    assert.equal(tag(llm, 'gen_ai.usage.input_tokens'), 11);
    assert.equal(tag(llm, 'gen_ai.usage.output_tokens'), 3);
    assert.equal(tag(llm, 'gen_ai.request.stream'), false);
    const sent = String(received('/v1/chat/completions').at(-1)!.traceparent);
    assert.equal(parentOf(spanOf(stored.spans, sent.split('-')[2]!)), llm.spanID);
  });

  it('LLM: a stream the provider cuts short still ends its GenAI span, marked as an error', async () => {
    const trace = 'abf92f3577b34da6a3ce929d0e0e473c';
    const r = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', traceparent: `00-${trace}-${CLIENT_SPAN}-01`, 'x-cut-stream': '1' },
      body: JSON.stringify({ model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'hello' }] }),
    });
    assert.equal(r.status, 200);
    await assert.rejects(r.text(), 'the client sees the cut, not a complete answer');
    const stored = await jaeger.waitForTrace(trace, (t) => t.spans.some((s) => s.operationName === 'chat gpt-4o'));
    const llm = stored.spans.find((s) => s.operationName === 'chat gpt-4o')!;
    assert.equal(tag(llm, 'gen_ai.request.stream'), true);
    assert.equal(tag(llm, 'otel.status_code'), 'ERROR');
  });

  it('A2A: the request span carries the A2A method, context id and task state, a method span is under it, and the agent gets the traceparent', async () => {
    const trace = '9bf92f3577b34da6a3ce929d0e0e473b';
    const message = { jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: { kind: 'message', messageId: 'm1', role: 'user', parts: [{ kind: 'text', text: 'hi' }] } } };
    const r = await fetch(`${base}/agent`, { method: 'POST', headers: { 'content-type': 'application/json', traceparent: `00-${trace}-${CLIENT_SPAN}-01` }, body: JSON.stringify(message) });
    assert.equal(r.status, 200);
    await r.text();
    const stored = await jaeger.waitForTrace(trace, 3);
    const server = stored.spans.find((s) => tag(s, 'span.kind') === 'server')!;
    assert.equal(server.operationName, 'POST /agent/*');
    assert.equal(tag(server, 'route'), 'agent');
    assert.equal(tag(server, 'a2a.method'), 'message/send');
    assert.equal(tag(server, 'a2a.context.id'), 'ctx-42');
    assert.equal(tag(server, 'a2a.task.state'), 'completed');
    // The A2A method span (ADR 0055) sits between the request span and the attempt.
    const method = stored.spans.find((s) => s.operationName === 'message/send')!;
    assert.equal(parentOf(method), server.spanID);
    assert.equal(tag(method, 'gen_ai.conversation.id'), 'ctx-42');
    const sent = String(received('/agent').at(-1)!.traceparent);
    assert.equal(parentOf(spanOf(stored.spans, sent.split('-')[2]!)), method.spanID);
  });

  it('clientSampling: false ignores a sampled traceparent from the client', async () => {
    const other = await start({ otlpEndpoint: jaeger.otlpHttp, otlpProtocol: 'http', clientSampling: false });
    try {
      const trace = '6bf92f3577b34da6a3ce929d0e0e4738';
      const r = await fetch(`${other.base}/api/ignored`, { headers: { traceparent: `00-${trace}-${CLIENT_SPAN}-01` } });
      assert.equal(r.status, 200);
      assert.match(String(received('/api/ignored')[0]!.traceparent), /-00$/);
    } finally {
      await other.gw.stop();
    }
    assert.equal(await jaeger.trace('6bf92f3577b34da6a3ce929d0e0e4738'), undefined);
  });
});
