// Spans of paths added in session 25, read back from a real Jaeger (ADR 0171): an h2c client's SERVER span names
// its protocol as OTel does (`2`), attempts refused by a backend are one CLIENT span each with their resend count,
// a gRPC call's status is in the access log and on the span as `grpc.status` (BEHAVIOUR 6.1), whether it came in
// trailers or a trailers-only answer, and an LLM call's span carries the reasoning and cache token counts the provider reported (OTel GenAI usage).
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { connect as h2connect } from 'node:http2';
import { connect as tcpConnect } from 'node:net';
import { request as httpRequest } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { locateJaeger, parentOf, startJaeger, tag } from '../helpers/jaeger.ts';
import type { JaegerSpan, RunningJaeger } from '../helpers/jaeger.ts';
import { freePort } from '../helpers/ports.ts';
import { scrape, value } from '../helpers/metrics.ts';
import { startUpstream } from '../helpers/upstream.ts';
import { echoClient, startEchoServer, unary } from '../helpers/grpc-echo.ts';
import type { EchoClient } from '../helpers/grpc-echo.ts';
import type { TestUpstream } from '../helpers/upstream.ts';

// Spans leave 50 ms after their batch's first, not a second (OTEL_BSP_SCHEDULE_DELAY): each test waits for its trace.
process.env.OTEL_BSP_SCHEDULE_DELAY = '50';

const found = locateJaeger();
const CLIENT_SPAN = '00f067aa0ba902b7';
const traceparent = (trace: string): string => `00-${trace}-${CLIENT_SPAN}-01`;

describe('spans of recent paths, in Jaeger', { skip: 'skip' in found ? found.skip : false }, () => {
  let jaeger: RunningJaeger;
  let upstream: TestUpstream;
  let gw: RunningGateway;
  let base: string;
  let refused: number;
  let echo: { server: grpc.Server; port: number };
  let client: EchoClient;

  before(async () => {
    jaeger = await startJaeger(found as { bin: string });
    upstream = await startUpstream((req, res) => {
      if (req.url === '/v1/chat/completions') {
        const completion = {
          id: 'c1',
          object: 'chat.completion',
          model: 'o3-mini',
          choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 40, completion_tokens: 30, total_tokens: 70, prompt_tokens_details: { cached_tokens: 32 }, completion_tokens_details: { reasoning_tokens: 24 } },
        };
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(completion));
        return;
      }
      if (req.url === '/v1/messages') {
        const usage = { input_tokens: 5, output_tokens: 7, cache_read_input_tokens: 100, cache_creation_input_tokens: 20 };
        const message = { id: 'm1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: 'hi' }], stop_reason: 'end_turn', usage };
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(message));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
    echo = await startEchoServer(grpc.ServerCredentials.createInsecure());
    refused = await freePort();
    const port = await freePort();
    const ai = (name: string, provider: object): object => ({ ai: { name, provider, hostOverride: `127.0.0.1:${upstream.port}` } });
    gw = await startGateway({
      config: { logging: { format: 'json' }, tracing: { otlpEndpoint: jaeger.otlpHttp, otlpProtocol: 'http', serviceName: 'switchyard-recent' } },
      binds: [
        {
          port,
          listeners: [
            {
              name: 'main',
              routes: [
                { name: 'refused', matches: [{ path: { pathPrefix: '/refused' } }], policies: { retry: { attempts: 2, codes: [503] } }, backends: [{ host: `127.0.0.1:${refused}` }] },
                { name: 'failover', matches: [{ path: { pathPrefix: '/failover' } }], policies: { retry: { attempts: 1, codes: [503] } }, backends: [{ host: `127.0.0.1:${refused}` }, { host: `127.0.0.1:${upstream.port}` }] },
                { name: 'llm', matches: [{ path: { pathPrefix: '/v1/chat' } }], policies: { backendAuth: { key: 'sk-test' } }, backends: [ai('openai', { openAI: {} })] },
                { name: 'claude', matches: [{ path: { pathPrefix: '/v1/messages' } }], policies: { backendAuth: { key: 'sk-test' } }, backends: [ai('anthropic', { anthropic: {} })] },
                { name: 'grpc', matches: [{ path: { pathPrefix: '/test.Echo/' } }], backends: [{ host: `127.0.0.1:${echo.port}`, policies: { http: { version: 'HTTP/2.0' } } }] },
                { name: 'grpc-locked', matches: [{ path: { pathPrefix: '/locked.Echo/' } }], policies: { authorization: { rules: ['false'] } }, backends: [{ host: `127.0.0.1:${echo.port}`, policies: { http: { version: 'HTTP/2.0' } } }] },
                { name: 'api', matches: [{ path: { pathPrefix: '/api' } }], backends: [{ host: `127.0.0.1:${upstream.port}` }] },
              ],
            },
          ],
        },
      ],
    });
    base = `http://127.0.0.1:${port}`;
    client = echoClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  });

  after(async () => {
    client?.close();
    echo?.server.forceShutdown();
    await gw?.stop();
    await upstream?.close();
    await jaeger?.stop();
  });

  const server = (spans: JaegerSpan[]): JaegerSpan => spans.find((s) => tag(s, 'span.kind') === 'server') ?? assert.fail('no server span');
  /** A request in the client's trace `trace`: its status once its body is read. */
  const fetchTraced = async (path: string, trace: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<number> => {
    const r = await fetch(`${base}${path}`, { ...init, headers: { ...init.headers, traceparent: traceparent(trace) } });
    await r.arrayBuffer();
    return r.status;
  };
  /** One request over a fresh h2c connection: its status once the stream closed. */
  const h2Status = async (headers: Record<string, string>): Promise<number> => {
    const session = h2connect(base);
    try {
      return await new Promise<number>((resolve, reject) => {
        const s = session.request(headers);
        let code = 0;
        s.on('response', (h) => (code = Number(h[':status'])));
        s.on('error', reject);
        s.resume();
        s.on('close', () => resolve(code));
      });
    } finally {
      session.close();
    }
  };

  it("an h2c client's request: network.protocol.version is 2, as OTel writes HTTP/2", async () => {
    const trace = '7bf92f3577b34da6a3ce929d0e0e4701';
    assert.equal(await h2Status({ ':method': 'GET', ':path': '/api/h2', traceparent: traceparent(trace) }), 200);
    const stored = await jaeger.waitForTrace(trace, 2);
    assert.equal(tag(server(stored.spans), 'network.protocol.version'), '2');
    const line = gw.logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === 'request' && l.trace_id === trace);
    assert.equal(line?.['http.version'], 'HTTP/2');
  });

  it("a gRPC call's status: grpc.status in the access log and on the SERVER span, from trailers and from a trailers-only answer", async () => {
    const cases = [
      { method: 'Echo', trace: '7bf92f3577b34da6a3ce929d0e0e4706', status: 0 },
      { method: 'Fail', trace: '7bf92f3577b34da6a3ce929d0e0e4707', status: grpc.status.NOT_FOUND },
    ];
    for (const c of cases) {
      const metadata = new grpc.Metadata();
      metadata.set('traceparent', traceparent(c.trace));
      const answer = await unary(client, c.method, { hello: 'grpc' }, metadata);
      assert.equal(answer.error?.code ?? 0, c.status);
      const stored = await jaeger.waitForTrace(c.trace, 2);
      const root = server(stored.spans);
      assert.equal(tag(root, 'http.response.status_code'), 200);
      assert.equal(tag(root, 'grpc.status'), c.status, c.method);
      let line: Record<string, unknown> | undefined;
      for (let i = 0; i < 50 && !line; i++) {
        line = gw.logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === 'request' && l.trace_id === c.trace);
        if (!line) await new Promise((r) => setTimeout(r, 20));
      }
      assert.equal(line?.['grpc.status'], c.status, c.method);
    }
    // The h2c upstream's attempts are counted as any backend's (ADR 0151).
    const m = await scrape(gw);
    assert.equal(value(m, 'switchyard_upstream_request_duration_seconds_count', { backend: `http://127.0.0.1:${echo.port}` }), 2);
    assert.equal(value(m, 'switchyard_requests_total', { bind: String(new URL(base).port), listener: 'main', route: 'grpc', status: '200' }), 2);
  });

  it("a gateway-made gRPC answer (ADR 0178): grpc.status on the span, whose status follows OTel's gRPC rules, not HTTP 200", async () => {
    const cases = [
      // A refusal is the client's (PERMISSION_DENIED): no ERROR, as a 4xx on an HTTP span.
      { service: 'locked.Echo', trace: '7bf92f3577b34da6a3ce929d0e0e4720', status: grpc.status.PERMISSION_DENIED, error: false },
      // No route: UNIMPLEMENTED, which OTel counts as the server's failure.
      { service: 'nowhere.Echo', trace: '7bf92f3577b34da6a3ce929d0e0e4721', status: grpc.status.UNIMPLEMENTED, error: true },
    ];
    for (const c of cases) {
      const other = echoClient(new URL(base).host, grpc.credentials.createInsecure(), c.service);
      const metadata = new grpc.Metadata();
      metadata.set('traceparent', traceparent(c.trace));
      const answer = await unary(other, 'Echo', {}, metadata);
      other.close();
      assert.equal(answer.error?.code, c.status);
      const root = server((await jaeger.waitForTrace(c.trace, 1)).spans);
      assert.equal(tag(root, 'http.response.status_code'), 200);
      assert.equal(tag(root, 'grpc.status'), c.status, c.service);
      assert.equal(tag(root, 'otel.status_code') === 'ERROR', c.error, c.service);
      assert.equal(tag(root, 'error.type'), c.error ? 'UNIMPLEMENTED' : undefined, c.service);
    }
    // An upstream's own status follows the same rules: NOT_FOUND (the Fail call above) is no ERROR.
    const fail = server((await jaeger.waitForTrace('7bf92f3577b34da6a3ce929d0e0e4707', 2)).spans);
    assert.notEqual(tag(fail, 'otel.status_code'), 'ERROR');
  });

  it('a CONNECT refused over h2c (405): its SERVER span, not an ERROR, the authority as the access log has it', async () => {
    const trace = '7bf92f3577b34da6a3ce929d0e0e4708';
    assert.equal(await h2Status({ ':method': 'CONNECT', ':authority': 'tunnel.example:443', traceparent: traceparent(trace) }), 405);
    const stored = await jaeger.waitForTrace(trace, 1);
    const root = server(stored.spans);
    assert.equal(tag(root, 'http.request.method'), 'CONNECT');
    // A CONNECT's target is an authority, not a path (RFC 9110 9.3.6): on the span as server.address and port only.
    assert.equal(tag(root, 'url.path'), undefined);
    assert.equal(tag(root, 'server.address'), 'tunnel.example');
    assert.equal(tag(root, 'server.port'), 443);
    assert.equal(tag(root, 'http.response.status_code'), 405);
    assert.notEqual(tag(root, 'otel.status_code'), 'ERROR');
  });

  it('refusals before a route over HTTP/1.1: a CONNECT and an upgrade nothing matches each have their SERVER span', async () => {
    const raw = (head: string): Promise<string> =>
      new Promise((resolve, reject) => {
        const socket = tcpConnect(Number(new URL(base).port), '127.0.0.1', () => socket.write(head));
        let got = '';
        socket.on('data', (d) => {
          got += d.toString('latin1');
          if (got.includes('\r\n\r\n')) socket.destroy();
        });
        socket.on('close', () => resolve(got));
        socket.on('error', reject);
      });
    const connectTrace = '7bf92f3577b34da6a3ce929d0e0e4709';
    const connect = await raw(`CONNECT tunnel.example:443 HTTP/1.1\r\nHost: tunnel.example:443\r\ntraceparent: ${traceparent(connectTrace)}\r\n\r\n`);
    assert.match(connect, /^HTTP\/1\.1 405/);
    const upgradeTrace = '7bf92f3577b34da6a3ce929d0e0e4710';
    const upgrade = await raw(`GET /nowhere HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\ntraceparent: ${traceparent(upgradeTrace)}\r\n\r\n`);
    assert.match(upgrade, /^HTTP\/1\.1 404/);
    for (const [trace, status] of [[connectTrace, 405], [upgradeTrace, 404]] as const) {
      const stored = await jaeger.waitForTrace(trace, 1);
      const root = server(stored.spans);
      assert.equal(tag(root, 'http.response.status_code'), status);
    }
  });

  it('an HTTP/1.1 request keeps 1.1', async () => {
    const trace = '7bf92f3577b34da6a3ce929d0e0e4702';
    assert.equal(await fetchTraced('/api/h1', trace), 200);
    const stored = await jaeger.waitForTrace(trace, 2);
    assert.equal(tag(server(stored.spans), 'network.protocol.version'), '1.1');
  });

  it('a backend that refuses connections: one CLIENT span per attempt, the retries counted in resend_count, ERROR with the code', async () => {
    const trace = '7bf92f3577b34da6a3ce929d0e0e4703';
    assert.equal(await fetchTraced('/refused/x', trace), 503);
    const stored = await jaeger.waitForTrace(trace, 4);
    const root = server(stored.spans);
    assert.equal(tag(root, 'http.response.status_code'), 503);
    assert.equal(tag(root, 'otel.status_code'), 'ERROR');
    const attempts = stored.spans.filter((s) => tag(s, 'span.kind') === 'client').sort((a, b) => a.startTime - b.startTime);
    assert.equal(attempts.length, 3);
    attempts.forEach((a, i) => {
      assert.equal(parentOf(a), root.spanID);
      assert.equal(tag(a, 'error.type'), 'ECONNREFUSED');
      assert.equal(tag(a, 'otel.status_code'), 'ERROR');
      assert.equal(tag(a, 'server.port'), refused);
      assert.equal(tag(a, 'http.request.resend_count'), i === 0 ? undefined : i);
    });
    // /metrics agrees: three attempts that could not connect, two of them retries.
    const m = await scrape(gw);
    const backend = `http://127.0.0.1:${refused}`;
    assert.equal(value(m, 'switchyard_upstream_connect_errors_total', { backend, code: 'ECONNREFUSED' }), 3);
    assert.equal(value(m, 'switchyard_upstream_retries_total', { backend }), 2);
    assert.equal(value(m, 'switchyard_upstream_request_duration_seconds_count', { backend }), 3);
    const line = gw.logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === 'request' && l.trace_id === trace);
    assert.equal(line?.['retry.attempt'], 2);
  });

  it('a slow chunked upload whose first backend refused (ADR 0156): the retry to the other backend is the second attempt span, with the whole body', async () => {
    const upload = (trace: string): Promise<number> =>
      new Promise<number>((resolve, reject) => {
        const req = httpRequest(`${base}/failover/upload`, { method: 'POST', headers: { traceparent: traceparent(trace), 'content-type': 'text/plain' } }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode!));
        });
        req.on('error', reject);
        req.write('part one, ');
        setTimeout(() => req.end('part two'), 100);
      });
    // The backend is picked at random: upload until one went to the refusing backend first.
    let retried: JaegerSpan[] | undefined;
    for (let i = 0; i < 12 && retried === undefined; i++) {
      const trace = `7bf92f3577b34da6a3ce929d0e0e48${(16 + i).toString(16)}`;
      assert.equal(await upload(trace), 200);
      assert.equal(upstream.received.filter((r) => r.url === '/failover/upload').at(-1)?.body.toString(), 'part one, part two');
      const stored = await jaeger.waitForTrace(trace, 2);
      const attempts = stored.spans.filter((s) => tag(s, 'span.kind') === 'client').sort((a, b) => a.startTime - b.startTime);
      for (const a of attempts) assert.equal(parentOf(a), server(stored.spans).spanID);
      if (attempts.length === 2) retried = attempts;
    }
    assert.ok(retried, 'no upload went to the refusing backend first');
    const [first, second] = retried;
    assert.equal(tag(first!, 'error.type'), 'ECONNREFUSED');
    assert.equal(tag(first!, 'server.port'), refused);
    assert.equal(tag(second!, 'http.response.status_code'), 200);
    assert.equal(tag(second!, 'server.port'), upstream.port);
    assert.equal(tag(second!, 'http.request.resend_count'), 1);
  });

  it("an OpenAI call's span: reasoning and cached input tokens as OTel GenAI names them", async () => {
    const trace = '7bf92f3577b34da6a3ce929d0e0e4704';
    const body = JSON.stringify({ model: 'o3-mini', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(await fetchTraced('/v1/chat/completions', trace, { method: 'POST', headers: { 'content-type': 'application/json' }, body }), 200);
    const stored = await jaeger.waitForTrace(trace, (t) => t.spans.some((s) => tag(s, 'gen_ai.operation.name') === 'chat' && tag(s, 'gen_ai.usage.output_tokens') !== undefined));
    const call = stored.spans.find((s) => tag(s, 'gen_ai.operation.name') === 'chat')!;
    assert.equal(tag(call, 'gen_ai.usage.input_tokens'), 40);
    assert.equal(tag(call, 'gen_ai.usage.output_tokens'), 30);
    assert.equal(tag(call, 'gen_ai.usage.reasoning.output_tokens'), 24);
    assert.equal(tag(call, 'gen_ai.usage.cache_read.input_tokens'), 32);
    assert.equal(tag(call, 'gen_ai.usage.cache_creation.input_tokens'), undefined);
  });

  it("an Anthropic call's span: cache reads and writes, within the input count", async () => {
    const trace = '7bf92f3577b34da6a3ce929d0e0e4705';
    const body = JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(await fetchTraced('/v1/messages', trace, { method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, body }), 200);
    const stored = await jaeger.waitForTrace(trace, (t) => t.spans.some((s) => tag(s, 'gen_ai.operation.name') === 'chat' && tag(s, 'gen_ai.usage.output_tokens') !== undefined));
    const call = stored.spans.find((s) => tag(s, 'gen_ai.operation.name') === 'chat')!;
    assert.equal(tag(call, 'gen_ai.provider.name'), 'anthropic');
    assert.equal(tag(call, 'gen_ai.usage.input_tokens'), 125);
    assert.equal(tag(call, 'gen_ai.usage.cache_read.input_tokens'), 100);
    assert.equal(tag(call, 'gen_ai.usage.cache_creation.input_tokens'), 20);
    assert.equal(tag(call, 'gen_ai.usage.reasoning.output_tokens'), undefined);
  });
});
