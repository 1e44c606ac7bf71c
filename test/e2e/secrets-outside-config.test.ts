// Credentials the config file does not hold are as secret as those it does (inline or from `${VAR}`): a key the
// config names by file (`backendAuth: {key: {file}}`) and the trace exporter's headers from
// OTEL_EXPORTER_OTLP_HEADERS. A service that echoes one in an error answer (a guard service's 401 naming the key it
// got, as some OpenAI-compatible servers do; a collector's grpc-message) must not put it in the process log: the
// guard's failure line and the exporter's `trace export failed` quote those messages.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { aiPreset, startMock } from '../ai/harness.ts';
import type { Mock } from '../ai/harness.ts';
import { logRecords, startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { testTempDir } from '../helpers/temp-dir.ts';
import { startGrpcCollector } from '../helpers/grpc-collector.ts';
import type { GrpcCollector } from '../helpers/grpc-collector.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';

const GUARD_KEY = 'gk-from-file-5f1c2a9e7d';

describe('secrets read from files stay out of the process log', () => {
  let mock: Mock;
  let guard: TestUpstream;
  let gw: RunningGateway;
  let port: number;

  before(async () => {
    mock = await startMock();
    // A moderation service that refuses the key and names it in its message.
    guard = await startUpstream((req, res) => {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `Incorrect API key provided: ${String(req.headers.authorization)}` } }));
    });
    const dir = testTempDir('switchyard-secret-files-');
    const keyFile = join(dir, 'moderation.key');
    writeFileSync(keyFile, `${GUARD_KEY}\n`);
    port = await freePort();
    const guardConfig = { openAIModeration: { host: `127.0.0.1:${guard.port}`, policies: { backendAuth: { key: { file: keyFile } } } } };
    gw = await startGateway(
      {
        config: { adminAddr: '127.0.0.1:0', statsAddr: '127.0.0.1:0', readinessAddr: '127.0.0.1:0', logging: { format: 'json', level: 'debug' }, drainTimeout: '200ms' },
        binds: [{ port, listeners: [{ routes: [{ name: 'llm', policies: { ai: { routes: { '*': 'completions' }, promptGuard: { request: [guardConfig] } } }, backends: [{ ai: { name: 'oa', provider: { openAI: {} }, hostOverride: mock.hostPort } }] }] }] }],
      },
      { preset: aiPreset },
    );
  });
  after(async () => {
    await gw?.stop();
    await guard?.close();
    await mock?.stop();
  });

  it("a guard service's answer echoing the key read from a file is logged with the key redacted", async () => {
    const res = await request(`http://127.0.0.1:${port}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }] }),
    });
    assert.equal(res.statusCode, 503);
    await res.body.text();
    assert.equal(guard.received.at(-1)?.headers.authorization, `Bearer ${GUARD_KEY}`, 'the file key was sent');
    const failure = logRecords(gw).find((r) => r.msg === 'prompt guard failed');
    assert.ok(failure, 'the failure is logged');
    assert.match(String(failure.error), /answered 401: Incorrect API key provided: Bearer <redacted>/);
    assert.ok(!gw.logs.some((l) => l.includes(GUARD_KEY)), 'no log line holds the key');
  });
});

describe('trace exporter headers from the environment stay out of the process log', () => {
  const TOKEN = 'otlp-env-token-8c3e1b7a';
  let collector: GrpcCollector;
  before(async () => {
    // A collector refusing the token and naming it, as grpc-message (percent-encoded on the wire).
    collector = await startGrpcCollector({ 'grpc-status': '16', 'grpc-message': encodeURIComponent(`invalid token: Bearer ${TOKEN}`) });
  });
  after(() => collector.close());

  it("the collector's refusal quoting an OTEL_EXPORTER_OTLP_HEADERS value is logged with it redacted", async () => {
    const port = await freePort();
    const gw = await startGateway(
      {
        config: { logging: { format: 'json' }, tracing: { otlpEndpoint: collector.url, randomSampling: true } },
        binds: [{ port, listeners: [{ routes: [{ name: 'ok', policies: { directResponse: { status: 200, body: 'ok' } } }] }] }],
      },
      { env: { ...process.env, OTEL_EXPORTER_OTLP_HEADERS: `authorization=Bearer ${TOKEN}` } },
    );
    try {
      assert.equal((await request(`http://127.0.0.1:${port}/`)).statusCode, 200);
      const deadline = Date.now() + 15_000;
      let failure: Record<string, unknown> | undefined;
      while (!(failure = logRecords(gw).find((r) => r.msg === 'trace export failed')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      assert.ok(failure, 'the failed export is logged');
      assert.match(String(failure.error), /invalid token: (?:Bearer )?<redacted>\)/);
      assert.ok(!gw.logs.some((l) => l.includes(TOKEN)), 'no log line holds the token');
    } finally {
      await gw.stop();
    }
  });
});
