// GenAI message content on spans only when allowed (`tracing.captureMessageContent`, issue 12 item 1; ADR 0046), and
// the OpenTelemetry environment variables filling in the `tracing` block. Spans are read back from a real Jaeger.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { locateJaeger, startJaeger, tag } from '../helpers/jaeger.ts';
import type { JaegerSpan, JaegerTrace, RunningJaeger } from '../helpers/jaeger.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';

// Spans leave 50 ms after their batch's first, not a second (OTEL_BSP_SCHEDULE_DELAY): each test waits for its trace.
process.env.OTEL_BSP_SCHEDULE_DELAY = '50';

const found = locateJaeger();
const CLIENT_SPAN = '00f067aa0ba902b7';

describe('tracing: message content and OTEL_* environment', { skip: 'skip' in found ? found.skip : false }, () => {
  let jaeger: RunningJaeger;
  let upstream: TestUpstream;
  const running: RunningGateway[] = [];

  before(async () => {
    jaeger = await startJaeger(found as { bin: string });
    upstream = await startUpstream((req, res) => {
      if (req.url === '/v1/chat/completions' && req.headers['x-stream']) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for (const piece of ['hello', ' world']) {
          const chunk = { id: 'c2', object: 'chat.completion.chunk', model: 'gpt-4o-2024-08-06', choices: [{ index: 0, delta: { role: 'assistant', content: piece } }] };
          res.write(`data: ${JSON.stringify(chunk)}\n\n`);
        }
        const last = { id: 'c2', object: 'chat.completion.chunk', model: 'gpt-4o-2024-08-06', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } };
        res.end(`data: ${JSON.stringify(last)}\n\ndata: [DONE]\n\n`);
        return;
      }
      if (req.url === '/v1/chat/completions') {
        const completion = { id: 'c1', object: 'chat.completion', model: 'gpt-4o-2024-08-06', choices: [{ index: 0, message: { role: 'assistant', content: 'the answer is 42' }, finish_reason: 'stop' }], usage: { prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 } };
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(completion));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
  });

  after(async () => {
    for (const g of running) await g.stop();
    await upstream?.close();
    await jaeger?.stop();
  });

  /** A gateway with an `api` route and an `ai` route (`/v1`), `tracing` as given, the environment as given. */
  const start = async (tracing: Record<string, unknown>, env: NodeJS.ProcessEnv = {}): Promise<string> => {
    const port = await freePort();
    const g = await startGateway(
      {
        config: { tracing },
        binds: [
          {
            port,
            listeners: [
              {
                routes: [
                  { name: 'api', matches: [{ path: { pathPrefix: '/api' } }], backends: [{ host: `127.0.0.1:${upstream.port}` }] },
                  { name: 'llm', matches: [{ path: { pathPrefix: '/v1' } }], policies: { backendAuth: { key: 'sk-test' } }, backends: [{ ai: { name: 'openai', provider: { openAI: {} }, hostOverride: `127.0.0.1:${upstream.port}` } }] },
                ],
              },
            ],
          },
        ],
      },
      { env: { ...process.env, ...env } },
    );
    running.push(g);
    return `http://127.0.0.1:${port}`;
  };

  /** One chat call under `trace`; its GenAI span once Jaeger has it. */
  const chat = async (base: string, trace: string, stream = false): Promise<{ span: JaegerSpan; stored: JaegerTrace }> => {
    const r = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', traceparent: `00-${trace}-${CLIENT_SPAN}-01`, ...(stream ? { 'x-stream': '1' } : {}) },
      body: JSON.stringify({ model: 'gpt-4o', stream, messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'what is the answer?' }] }),
    });
    assert.equal(r.status, 200);
    await r.text();
    const stored = await jaeger.waitForTrace(trace, (t) => t.spans.some((s) => s.operationName === 'chat gpt-4o') && t.spans.length >= 3);
    return { span: stored.spans.find((s) => s.operationName === 'chat gpt-4o')!, stored };
  };

  it('by default no prompt or completion content is on the GenAI span', async () => {
    const base = await start({ otlpEndpoint: jaeger.otlpHttp, otlpProtocol: 'http' });
    const { span } = await chat(base, 'd1f92f3577b34da6a3ce929d0e0e4701');
    assert.equal(tag(span, 'gen_ai.usage.input_tokens'), 11);
    // The built-in catalog's gpt-4o: $2.5 in, $10 out per million tokens.
    assert.ok(Math.abs(Number(tag(span, 'gen_ai.usage.cost')) - (11 * 2.5 + 3 * 10) / 1_000_000) < 1e-12, 'the call\'s cost in USD on the GenAI span');
    assert.equal(tag(span, 'gen_ai.input.messages'), undefined);
    assert.equal(tag(span, 'gen_ai.output.messages'), undefined);
    for (const s of (await jaeger.trace('d1f92f3577b34da6a3ce929d0e0e4701'))!.spans) {
      for (const t of s.tags) assert.ok(!String(t.value).includes('what is the answer'), `content leaked in ${s.operationName} ${t.key}`);
    }
  });

  it('captureMessageContent: true records gen_ai.input.messages and gen_ai.output.messages (OTel GenAI message shape)', async () => {
    const base = await start({ otlpEndpoint: jaeger.otlpHttp, otlpProtocol: 'http', captureMessageContent: true });
    const { span } = await chat(base, 'd1f92f3577b34da6a3ce929d0e0e4702');
    assert.deepEqual(JSON.parse(String(tag(span, 'gen_ai.input.messages'))), [
      { role: 'system', parts: [{ type: 'text', content: 'be brief' }] },
      { role: 'user', parts: [{ type: 'text', content: 'what is the answer?' }] },
    ]);
    assert.deepEqual(JSON.parse(String(tag(span, 'gen_ai.output.messages'))), [{ role: 'assistant', parts: [{ type: 'text', content: 'the answer is 42' }] }]);

    // A streamed answer is put together from its events when it ends.
    const streamed = await chat(base, 'd1f92f3577b34da6a3ce929d0e0e4703', true);
    assert.equal(tag(streamed.span, 'gen_ai.request.stream'), true);
    assert.deepEqual(JSON.parse(String(tag(streamed.span, 'gen_ai.output.messages'))), [{ role: 'assistant', parts: [{ type: 'text', content: 'hello world' }] }]);
    assert.match(String(tag(streamed.span, 'gen_ai.input.messages')), /what is the answer\?/);
  });

  it('OTEL_* variables fill in a `tracing: {}` block: endpoint, protocol, service name, resource attributes, sampler, content capture', async () => {
    const base = await start(
      {},
      {
        OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpHttp,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
        OTEL_SERVICE_NAME: 'from-env',
        OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=staging,team=platform%20ops',
        OTEL_TRACES_SAMPLER: 'parentbased_always_on',
        OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'SPAN_ONLY',
      },
    );
    // No traceparent: the sampler from the environment starts a trace.
    const r = await fetch(`${base}/api/env`);
    assert.equal(r.status, 200);
    const sent = String(upstream.received.filter((x) => x.url === '/api/env').at(-1)!.headers.traceparent);
    const [, traceId, , flags] = sent.split('-');
    assert.equal(flags, '01');
    const stored = await jaeger.waitForTrace(traceId!, 2);
    const server = stored.spans.find((s) => tag(s, 'span.kind') === 'server')!;
    const proc = stored.processes[server.processID]!;
    assert.equal(proc.serviceName, 'from-env');
    assert.equal(proc.tags.find((t) => t.key === 'deployment.environment.name')?.value, 'staging');
    assert.equal(proc.tags.find((t) => t.key === 'team')?.value, 'platform ops');
    const { span } = await chat(base, 'd1f92f3577b34da6a3ce929d0e0e4704');
    assert.match(String(tag(span, 'gen_ai.input.messages')), /what is the answer\?/);
  });

  it('fields set in the block win over the environment', async () => {
    const base = await start(
      { otlpEndpoint: jaeger.otlpHttp, otlpProtocol: 'http', serviceName: 'from-config', captureMessageContent: false },
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_SERVICE_NAME: 'from-env', OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true' },
    );
    const { span, stored } = await chat(base, 'd1f92f3577b34da6a3ce929d0e0e4705');
    assert.equal(stored.processes[span.processID]!.serviceName, 'from-config');
    assert.equal(tag(span, 'gen_ai.input.messages'), undefined);
  });

  it('OTEL_SDK_DISABLED=true turns tracing off: the upstream gets no traceparent from the gateway', async () => {
    const base = await start({ otlpEndpoint: jaeger.otlpHttp, otlpProtocol: 'http', randomSampling: true }, { OTEL_SDK_DISABLED: 'true' });
    const r = await fetch(`${base}/api/disabled`);
    assert.equal(r.status, 200);
    assert.equal(upstream.received.filter((x) => x.url === '/api/disabled').at(-1)!.headers.traceparent, undefined);
  });
});
