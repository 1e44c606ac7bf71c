// `config.tracing` with the OpenTelemetry environment variables (ADR 0046): precedence (the block's fields win, the
// environment fills in the rest, `OTEL_SDK_DISABLED` turns tracing off), the content-capture flag (default off),
// and the errors: a block with no endpoint anywhere, an environment value the gateway cannot use.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { resolveTracing } from '../../kernel/telemetry/tracing-config.ts';
import { runCli } from '../helpers/cli.ts';
import { startGateway } from '../helpers/gateway.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

const dir = testTempDir('switchyard-tracing-config-');
function configFile(name: string, tracing: string): string {
  const file = join(dir, name);
  writeFileSync(
    file,
    `config:\n  adminAddr: 127.0.0.1:0\n  statsAddr: 127.0.0.1:0\n  readinessAddr: 127.0.0.1:0\n  tracing:${tracing}\nbinds:\n- port: 18081\n  listeners:\n  - routes:\n    - policies: { directResponse: { body: ok, status: 200 } }\n`,
  );
  return file;
}

describe('config.tracing and OTEL_* variables', () => {
  it('no block: no tracing, whatever the environment says', () => {
    assert.equal(resolveTracing(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4317' }), null);
  });

  it('defaults: gRPC, no random sampling, client sampling on, service switchyard, content capture off', () => {
    const t = resolveTracing({ otlpEndpoint: 'c:4317' }, {})!;
    assert.equal(t.url, 'http://c:4317');
    assert.equal(t.protocol, 'grpc');
    assert.equal(t.randomRatio, 0);
    assert.equal(t.clientRatio, 1);
    assert.deepEqual(t.resource, { 'service.name': 'switchyard' });
    assert.equal(t.captureMessageContent, false);
    assert.equal(t.scheduleDelayMs, 1000);
  });

  it('the environment fills in what the block leaves out', () => {
    const env = {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=abc%3D,x-tenant=t1',
      OTEL_SERVICE_NAME: 'edge',
      OTEL_RESOURCE_ATTRIBUTES: 'service.name=ignored,deployment.environment.name=prod',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
      OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'span_and_event',
      OTEL_BSP_SCHEDULE_DELAY: '50',
    };
    const t = resolveTracing({}, env)!;
    assert.equal(t.url, 'http://collector:4318/v1/traces');
    assert.equal(t.protocol, 'http');
    assert.deepEqual(t.headers, { 'x-api-key': 'abc=', 'x-tenant': 't1' });
    assert.deepEqual(t.resource, { 'service.name': 'edge', 'deployment.environment.name': 'prod' });
    assert.equal(t.randomRatio, 0.25);
    assert.equal(t.captureMessageContent, true);
    assert.equal(t.scheduleDelayMs, 50);
    // The traces endpoint is taken as written (no path appended) and wins over the generic one.
    assert.equal(resolveTracing({}, { ...env, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://t.example/otlp/traces' })!.url, 'https://t.example/otlp/traces');
  });

  it("the block's fields win over the environment, key by key for maps", () => {
    const t = resolveTracing(
      { otlpEndpoint: 'http://mine:4317', otlpProtocol: 'grpc', headers: { 'x-api-key': 'cfg' }, serviceName: 'cfg', resourceAttributes: { team: 'a' }, randomSampling: false, captureMessageContent: false },
      {
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://env:4318',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
        OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=env,x-other=1',
        OTEL_SERVICE_NAME: 'env',
        OTEL_RESOURCE_ATTRIBUTES: 'team=b,region=eu',
        OTEL_TRACES_SAMPLER: 'always_on',
        OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true',
      },
    )!;
    assert.equal(t.url, 'http://mine:4317');
    assert.equal(t.protocol, 'grpc');
    assert.deepEqual(t.headers, { 'x-api-key': 'cfg', 'x-other': '1' });
    assert.deepEqual(t.resource, { 'service.name': 'cfg', team: 'a', region: 'eu' });
    assert.equal(t.randomRatio, 0);
    assert.equal(t.captureMessageContent, false);
  });

  it('TLS files: the block names them, the OTLP exporter variables fill in the rest (https only; ADR 0132)', () => {
    const env = {
      OTEL_EXPORTER_OTLP_CERTIFICATE: 'env/ca.pem',
      OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE: '/etc/otel/client.pem',
      OTEL_EXPORTER_OTLP_CLIENT_KEY: '/etc/otel/client.key',
    };
    const t = resolveTracing({ otlpEndpoint: 'https://c:4317' }, env)!;
    assert.equal(t.tls?.root?.file, join(process.cwd(), 'env/ca.pem'));
    assert.equal(t.tls?.root?.env, 'OTEL_EXPORTER_OTLP_CERTIFICATE');
    assert.equal(t.tls?.cert?.file, '/etc/otel/client.pem');
    assert.equal(t.tls?.key?.file, '/etc/otel/client.key');
    const own = resolveTracing({ otlpEndpoint: 'https://c:4317', tls: { root: 'mine.pem', hostname: 'collector.internal' } }, env)!;
    assert.deepEqual(own.tls?.root, { file: 'mine.pem', path: ['config', 'tracing', 'tls', 'root'] });
    assert.equal(own.tls?.servername, 'collector.internal');
    assert.equal(own.tls?.insecure, false);
    // Variables set for every exporter of a host do not apply to a cleartext endpoint.
    assert.equal(resolveTracing({ otlpEndpoint: 'http://c:4317' }, env)!.tls, undefined);
    assert.equal(resolveTracing({ otlpEndpoint: 'https://c:4317' }, {})!.tls, undefined);
  });

  it('OTEL_SDK_DISABLED=true turns a configured tracing block off', () => {
    assert.equal(resolveTracing({ otlpEndpoint: 'c:4317' }, { OTEL_SDK_DISABLED: 'TRUE' }), null);
    assert.notEqual(resolveTracing({ otlpEndpoint: 'c:4317' }, { OTEL_SDK_DISABLED: 'false' }), null);
  });

  it('captureMessageContent must be a boolean (schema), and a block without any endpoint is an error at its position', async () => {
    const bad = await runCli(['-f', configFile('bad-flag.yaml', '\n    otlpEndpoint: c:4317\n    captureMessageContent: yes please\n'), '--validate-only']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /bad-flag\.yaml:7:\d+[\s\S]*captureMessageContent/);
    const none = await runCli(['-f', configFile('none.yaml', ' {}\n'), '--validate-only'], { env: { OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '' } });
    assert.equal(none.code, 1);
    assert.match(none.stderr, /none\.yaml:5:\d+[\s\S]*needs `otlpEndpoint`/);
    const fromEnv = await runCli(['-f', configFile('env.yaml', ' {}\n'), '--validate-only'], { env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4317' } });
    assert.equal(fromEnv.code, 0, fromEnv.stderr);
  });

  it('an OTEL_* value the gateway cannot use is a config error naming the variable', async () => {
    for (const [name, value] of [
      ['OTEL_EXPORTER_OTLP_PROTOCOL', 'http/json'],
      ['OTEL_TRACES_SAMPLER', 'jaeger_remote'],
      ['OTEL_TRACES_SAMPLER_ARG', '2'],
      ['OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT', 'maybe'],
      ['OTEL_BSP_SCHEDULE_DELAY', '0'],
      ['OTEL_BSP_SCHEDULE_DELAY', '1.5'],
    ] as const) {
      const env: NodeJS.ProcessEnv = { [name]: value };
      if (name === 'OTEL_TRACES_SAMPLER_ARG') env.OTEL_TRACES_SAMPLER = 'traceidratio';
      const run = await runCli(['-f', configFile('env-bad.yaml', '\n    otlpEndpoint: c:4317\n'), '--validate-only'], { env });
      assert.equal(run.code, 1, `${name}=${value}`);
      assert.match(run.stderr, new RegExp(`\`${name}\` environment variable`), run.stderr);
    }
  });

  it('credentials stay secret: export headers never show in /config_dump; a user or password in the endpoint is refused', async () => {
    const gw = await startGateway({
      config: { tracing: { otlpEndpoint: '127.0.0.1:1', headers: { 'x-honeycomb-team': 'TraceTeamSecret42', authorization: 'Bearer TraceBearer42' } } },
      binds: [{ port: 0, listeners: [{ routes: [{ policies: { directResponse: { body: 'ok', status: 200 } } }] }] }],
    });
    try {
      const dump = await (await fetch(`${gw.adminUrl}/config_dump`)).text();
      assert.match(dump, /x-honeycomb-team/, 'the header name shows');
      assert.doesNotMatch(dump, /TraceTeamSecret42|TraceBearer42/);
    } finally {
      await gw.stop();
    }
    const inUrl = await runCli(['-f', configFile('userinfo.yaml', '\n    otlpEndpoint: http://tracer:UrlPassw0rd42@c:4317\n'), '--validate-only']);
    assert.equal(inUrl.code, 1);
    assert.match(inUrl.stderr, /userinfo\.yaml:6:\d+[\s\S]*credentials in the trace endpoint's URL are not supported; send them as `tracing.headers`/);
    const fromEnv = await runCli(['-f', configFile('userinfo-env.yaml', ' {}\n'), '--validate-only'], { env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://tracer:EnvPassw0rd42@c:4317' } });
    assert.equal(fromEnv.code, 1);
    assert.match(fromEnv.stderr, /from OTEL_EXPORTER_OTLP_ENDPOINT/);
    assert.doesNotMatch(fromEnv.stderr, /EnvPassw0rd42/);
  });
});
