// A2A spans (issue 12 item 1 "A2A: task/message method, agent, context id"; ADR 0055): the a2a-js client calls the
// a2a-js echo agent through the gateway, which exports to a real Jaeger started here. Each A2A call gets a span of its
// own, named for its method, under the request's SERVER span and above the upstream attempt, with the agent's name
// (from its card), the context id (gen_ai.conversation.id), the task id and state read back from Jaeger.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Task } from '@a2a-js/sdk';
import { echoText, factory, sendParams, startEchoAgent } from '../helpers/a2a-agent.ts';
import type { EchoAgent } from '../helpers/a2a-agent.ts';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { locateJaeger, parentOf, startJaeger, tag } from '../helpers/jaeger.ts';
import type { JaegerSpan, JaegerTrace, RunningJaeger } from '../helpers/jaeger.ts';
import { freePort } from '../helpers/ports.ts';

// Spans leave 50 ms after their batch's first, not a second (OTEL_BSP_SCHEDULE_DELAY): each test waits for its trace.
process.env.OTEL_BSP_SCHEDULE_DELAY = '50';

const found = locateJaeger();
const SERVICE = 'switchyard-a2a';

describe('tracing: A2A method spans', { skip: 'skip' in found ? found.skip : false }, () => {
  let jaeger: RunningJaeger;
  let agent: EchoAgent;
  let gw: RunningGateway;
  let base: string;

  before(async () => {
    jaeger = await startJaeger(found as { bin: string });
    agent = await startEchoAgent();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    gw = await startGateway({
      config: { tracing: { otlpEndpoint: jaeger.otlpHttp, otlpProtocol: 'http', randomSampling: true, serviceName: SERVICE } },
      binds: [{ port, listeners: [{ routes: [{ name: 'agent', policies: { a2a: {} }, backends: [{ host: `127.0.0.1:${agent.port}` }] }] }] }],
    });
  });

  after(async () => {
    await gw?.stop();
    await agent?.close();
    await jaeger?.stop();
  });

  /** The one trace holding a span named `name` with `check`, once Jaeger has it whole (server, method, attempt). */
  async function traceWith(name: string, check: (s: JaegerSpan) => boolean = () => true): Promise<{ trace: JaegerTrace; span: JaegerSpan }> {
    const deadline = Date.now() + 15_000;
    for (;;) {
      for (const trace of await jaeger.traces(SERVICE)) {
        const span = trace.spans.find((s) => s.operationName === name && check(s));
        if (span && trace.spans.length >= 3) return { trace, span };
      }
      if (Date.now() > deadline) assert.fail(`no trace with a ${name} span in Jaeger`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** The upstream attempt below `span`, and the traceparent the agent received for it. */
  function attemptUnder(trace: JaegerTrace, span: JaegerSpan): JaegerSpan {
    const attempts = trace.spans.filter((s) => parentOf(s) === span.spanID && tag(s, 'span.kind') === 'client');
    assert.equal(attempts.length, 1, 'one upstream attempt under the A2A span');
    return attempts[0]!;
  }

  it('a message: a CLIENT span SendMessage (invoke_agent, agent name, conversation id, task) between the request span and the attempt', async () => {
    const client = await factory('JSONRPC').createFromUrl(base);
    const result = (await client.sendMessage(sendParams('trace me'))) as Task;
    assert.equal(echoText(result), 'echo: trace me');

    const { trace, span } = await traceWith('SendMessage');
    assert.equal(tag(span, 'span.kind'), 'client');
    assert.equal(tag(span, 'a2a.method'), 'SendMessage');
    assert.equal(tag(span, 'gen_ai.operation.name'), 'invoke_agent');
    assert.equal(tag(span, 'gen_ai.agent.name'), 'Echo Agent', 'the name from the card the client fetched through the gateway');
    assert.equal(tag(span, 'gen_ai.conversation.id'), result.contextId);
    assert.equal(tag(span, 'a2a.context.id'), result.contextId);
    assert.equal(tag(span, 'a2a.task.id'), result.id);
    assert.equal(tag(span, 'a2a.task.state'), 'TASK_STATE_COMPLETED');
    assert.equal(tag(span, 'a2a.response.outcome'), 'success');
    assert.equal(tag(span, 'http.response.status_code'), 200);
    assert.ok(tag(span, 'jsonrpc.request.id') !== undefined);

    const server = trace.spans.find((s) => s.spanID === parentOf(span)) ?? assert.fail('the A2A span has its parent in the trace');
    assert.equal(tag(server, 'span.kind'), 'server');
    assert.equal(tag(server, 'a2a.method'), 'SendMessage');
    const attempt = attemptUnder(trace, span);
    assert.equal(tag(attempt, 'http.response.status_code'), 200);
    const received = agent.received.filter((r) => r.method === 'POST').at(-1)!;
    assert.equal(String(received.headers.traceparent).split('-')[2], attempt.spanID, 'the agent got the attempt span as parent');
  });

  it('a task read: GetTask with the task id, no invoke_agent; a streamed message ends its span with the stream', async () => {
    const client = await factory('JSONRPC').createFromUrl(base);
    const sent = (await client.sendMessage(sendParams('first'))) as Task;
    const task = await client.getTask({ tenant: '', id: sent.id });
    assert.equal(task.id, sent.id);

    const { trace, span } = await traceWith('GetTask', (s) => tag(s, 'a2a.task.id') === sent.id);
    assert.equal(tag(span, 'a2a.method'), 'GetTask');
    assert.equal(tag(span, 'gen_ai.operation.name'), undefined);
    assert.equal(tag(span, 'gen_ai.conversation.id'), sent.contextId);
    attemptUnder(trace, span);

    let last: unknown;
    for await (const event of client.sendMessageStream(sendParams('streamed'))) last = event;
    assert.ok(last);
    const streamed = await traceWith('SendStreamingMessage', (s) => tag(s, 'a2a.task.state') === 'TASK_STATE_COMPLETED');
    assert.equal(tag(streamed.span, 'gen_ai.operation.name'), 'invoke_agent');
    assert.ok(tag(streamed.span, 'gen_ai.conversation.id'));
    attemptUnder(streamed.trace, streamed.span);
  });

  it('a JSON-RPC error marks the method span as an error with the code; a method A2A does not define is `_OTHER` (ADR 0130)', async () => {
    const r = await fetch(`${base}/a2a/jsonrpc`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 'e1', method: 'NoSuchMethod', params: {} }) });
    const body = (await r.json()) as { error?: { code: number } };
    assert.ok(body.error, 'the agent answers with a JSON-RPC error');
    const { span } = await traceWith('_OTHER', (s) => tag(s, 'jsonrpc.request.id') === 'e1');
    assert.equal(tag(span, 'a2a.method'), '_OTHER');
    assert.equal(tag(span, 'rpc.method_original'), 'NoSuchMethod');
    assert.equal(tag(span, 'jsonrpc.request.id'), 'e1');
    assert.equal(tag(span, 'a2a.response.outcome'), 'error');
    assert.equal(tag(span, 'a2a.response.error_code'), body.error.code);
    assert.equal(tag(span, 'otel.status_code'), 'ERROR');
    assert.equal(tag(span, 'error.type'), String(body.error.code));
  });
});
