// Spans of the calls policies make outside the kernel's HTTP pools (issue 12 item 1, ADR 0037 / 0046): extAuthz and
// remoteRateLimit over gRPC (real grpc-js servers speaking Envoy's protos) and the token fetches of backendAuth's
// cloud SDKs (google-auth-library against a GCE metadata stand-in, @azure/identity against an IMDS stand-in, the AWS
// default chain from the environment). Each is a CLIENT span under the request's SERVER span, read back from a real
// Jaeger; the gRPC services get the span's traceparent as call metadata.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { startEnvoyServer } from '../helpers/envoy-grpc-servers.ts';
import type { TestEnvoyServer } from '../helpers/envoy-grpc-servers.ts';
import { startGceMetadata } from '../helpers/gce-metadata.ts';
import type { GceMetadata } from '../helpers/gce-metadata.ts';
import { locateJaeger, parentOf, startJaeger, tag } from '../helpers/jaeger.ts';
import type { JaegerSpan, JaegerTrace, RunningJaeger } from '../helpers/jaeger.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { AZURE_ENV_CLEAR, close, startManagedIdentity } from './backend-auth-azure-support.ts';
import type { ManagedIdentityStandIn } from './backend-auth-azure-support.ts';
import { awsChainEnv, config, gatewayOptions, withEnv } from './backend-auth-support.ts';

// Spans leave 50 ms after their batch's first, not a second (OTEL_BSP_SCHEDULE_DELAY): each test waits for its trace.
process.env.OTEL_BSP_SCHEDULE_DELAY = '50';

const found = locateJaeger();
const CLIENT_SPAN = '00f067aa0ba902b7';

describe('tracing: calls policies make over gRPC and cloud token fetches', { skip: 'skip' in found ? found.skip : false }, () => {
  let jaeger: RunningJaeger;
  let upstream: TestUpstream;
  let envoy: TestEnvoyServer;
  let gce: GceMetadata;
  let mi: ManagedIdentityStandIn;
  let envs: { restore(): void }[] = [];
  let gw: RunningGateway;
  let base: string;

  before(async () => {
    jaeger = await startJaeger(found as { bin: string });
    upstream = await startUpstream();
    envoy = await startEnvoyServer({
      Check: () => ({ status: { code: 0 }, ok_response: { headers: [], headers_to_remove: [], response_headers_to_add: [], query_parameters_to_set: [], query_parameters_to_remove: [] } }),
      ShouldRateLimit: () => ({ overall_code: 1, statuses: [], response_headers_to_add: [], request_headers_to_add: [], raw_body: Buffer.alloc(0) }),
    });
    gce = await startGceMetadata('gce-token');
    mi = await startManagedIdentity('unused');
    envs = [withEnv({ ...AZURE_ENV_CLEAR, AZURE_POD_IDENTITY_AUTHORITY_HOST: `http://127.0.0.1:${mi.port}` }), awsChainEnv('AKIDEXAMPLE', 'secret')];
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    gw = await startGateway(
      config(
        port,
        upstream.port,
        [
          { name: 'authz', policies: { extAuthz: { host: envoy.address } } },
          { name: 'limited', policies: { remoteRateLimit: { host: envoy.address, domain: 'd', descriptors: [{ entries: [{ key: 'route', value: '"limited"' }] }] } } },
          { name: 'gcp', policies: { backendAuth: { gcp: {} } } },
          { name: 'azure', policies: { backendAuth: { azure: { explicitConfig: { managedIdentity: {} } } } } },
          { name: 'aws', policies: { backendAuth: { aws: { region: 'us-east-1', serviceName: 'bedrock' } } } },
        ],
        { config: { tracing: { otlpEndpoint: jaeger.otlpHttp, otlpProtocol: 'http' } } },
      ),
      gatewayOptions,
    );
  });

  after(async () => {
    await gw?.stop();
    await upstream?.close();
    await envoy?.stop();
    await gce?.close();
    if (mi) await close(mi.server);
    for (const e of envs.reverse()) e.restore();
    await jaeger?.stop();
  });

  /** Send one traced request; the stored trace once it holds the SERVER span and a span named `name`. */
  const traced = async (path: string, trace: string, name: string): Promise<{ trace: JaegerTrace; server: JaegerSpan; span: JaegerSpan }> => {
    const r = await fetch(`${base}${path}`, { headers: { traceparent: `00-${trace}-${CLIENT_SPAN}-01` } });
    assert.equal(r.status, 200, await r.text());
    const stored = await jaeger.waitForTrace(trace, (t) => t.spans.some((s) => s.operationName === name) && t.spans.some((s) => tag(s, 'span.kind') === 'server'));
    const server = stored.spans.find((s) => tag(s, 'span.kind') === 'server')!;
    const span = stored.spans.find((s) => s.operationName === name)!;
    return { trace: stored, server, span };
  };

  it('extAuthz over gRPC: a CLIENT span envoy.service.auth.v3.Authorization/Check (rpc.* attributes), its traceparent sent as metadata', async () => {
    const trace = 'c1f92f3577b34da6a3ce929d0e0e4701';
    const { server, span } = await traced('/authz/x', trace, 'envoy.service.auth.v3.Authorization/Check');
    assert.equal(parentOf(span), server.spanID);
    assert.equal(tag(span, 'span.kind'), 'client');
    // OTel's stable RPC conventions (ADR 0171): the system, the fully qualified method, the status by name.
    assert.equal(tag(span, 'rpc.system.name'), 'grpc');
    assert.equal(tag(span, 'rpc.method'), 'envoy.service.auth.v3.Authorization/Check');
    assert.equal(tag(span, 'rpc.status_code'), 'OK');
    // The older names, kept beside them for queries built on them.
    assert.equal(tag(span, 'rpc.system'), 'grpc');
    assert.equal(tag(span, 'rpc.service'), 'envoy.service.auth.v3.Authorization');
    assert.equal(tag(span, 'rpc.grpc.status_code'), 0);
    assert.equal(tag(span, 'server.address'), '127.0.0.1');
    assert.equal(tag(span, 'server.port'), envoy.port);
    const call = envoy.calls.filter((c) => c.method === 'Check').at(-1)!;
    assert.equal(call.metadata.traceparent, `00-${trace}-${span.spanID}-01`);
  });

  it('remoteRateLimit over gRPC: a CLIENT span envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit', async () => {
    const trace = 'c1f92f3577b34da6a3ce929d0e0e4702';
    const { server, span } = await traced('/limited/x', trace, 'envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit');
    assert.equal(parentOf(span), server.spanID);
    assert.equal(tag(span, 'rpc.system.name'), 'grpc');
    assert.equal(tag(span, 'rpc.method'), 'envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit');
    assert.equal(tag(span, 'rpc.service'), 'envoy.service.ratelimit.v3.RateLimitService');
    assert.equal(tag(span, 'rpc.status_code'), 'OK');
    assert.equal(tag(span, 'server.port'), envoy.port);
    const call = envoy.calls.filter((c) => c.method === 'ShouldRateLimit').at(-1)!;
    assert.equal(call.metadata.traceparent, `00-${trace}-${span.spanID}-01`);
  });

  it('a gRPC service that fails: the span ends in ERROR with the status name as error.type', async () => {
    const failing = await startEnvoyServer({ Check: () => Promise.reject({ code: 14, details: 'down' }) });
    const port = await freePort();
    const other = await startGateway(
      config(port, upstream.port, [{ name: 'authz', policies: { extAuthz: { host: failing.address, failureMode: 'allow' } } }], {
        config: { tracing: { otlpEndpoint: jaeger.otlpHttp, otlpProtocol: 'http' } },
      }),
      gatewayOptions,
    );
    try {
      const trace = 'c1f92f3577b34da6a3ce929d0e0e4703';
      const r = await fetch(`http://127.0.0.1:${port}/authz/x`, { headers: { traceparent: `00-${trace}-${CLIENT_SPAN}-01` } });
      assert.equal(r.status, 200);
      const stored = await jaeger.waitForTrace(trace, (t) => t.spans.some((s) => s.operationName.endsWith('/Check')));
      const span = stored.spans.find((s) => s.operationName.endsWith('/Check'))!;
      assert.equal(tag(span, 'otel.status_code'), 'ERROR');
      assert.equal(tag(span, 'error.type'), 'UNAVAILABLE');
      assert.equal(tag(span, 'rpc.grpc.status_code'), 14);
      assert.equal(tag(span, 'rpc.status_code'), 'UNAVAILABLE');
    } finally {
      await other.stop();
      await failing.stop();
    }
  });

  for (const [route, provider, token, trace] of [
    ['gcp', 'gcp', 'access', 'c1f92f3577b34da6a3ce929d0e0e4711'],
    ['azure', 'azure', 'access', 'c1f92f3577b34da6a3ce929d0e0e4712'],
    ['aws', 'aws', 'credentials', 'c1f92f3577b34da6a3ce929d0e0e4713'],
  ] as const) {
    it(`backendAuth ${provider}: the SDK's token fetch is a CLIENT span (cloud.provider ${provider}) under the request, once per token`, async () => {
      const name = `backendAuth ${provider} token`;
      const { server, span } = await traced(`/${route}/x`, trace, name);
      assert.equal(parentOf(span), server.spanID);
      assert.equal(tag(span, 'span.kind'), 'client');
      assert.equal(tag(span, 'cloud.provider'), provider);
      assert.equal(tag(span, 'switchyard.backend_auth.token'), token);
      assert.notEqual(tag(span, 'otel.status_code'), 'ERROR');
      assert.match(String(upstream.received.at(-1)!.headers.authorization), provider === 'aws' ? /^AWS4-HMAC-SHA256 / : /^Bearer /);
      // The token is cached: a second request makes no fetch, so no span.
      const again = `${trace.slice(0, -4)}99${trace.slice(-2)}`;
      const r = await fetch(`${base}/${route}/y`, { headers: { traceparent: `00-${again}-${CLIENT_SPAN}-01` } });
      assert.equal(r.status, 200);
      const second = await jaeger.waitForTrace(again, 2);
      assert.equal(second.spans.filter((s) => s.operationName === name).length, 0);
    });
  }
});
