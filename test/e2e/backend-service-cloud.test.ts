// `service` backends (a platform service reference, resolved by DNS) and `cloudBackend.agentRuntime` (AWS Bedrock
// AgentCore; AWS names `aws.agentCore`): what the upstream receives. The AgentCore endpoint is pointed at a loopback
// server with AWS_ENDPOINT_URL_BEDROCK_AGENTCORE, as the AWS SDKs allow; its signatures are checked with the
// independent SigV4 verifier (test/helpers/sigv4.ts).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { oneListenerConfig, startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { verifySigV4 } from '../helpers/sigv4.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { ReceivedRequest, TestUpstream } from '../helpers/upstream.ts';
import { awsChainEnv } from './backend-auth-support.ts';

const ARN = 'arn:aws:bedrock-agentcore:eu-west-1:123456789012:runtime/echo_agent-Ab12Cd34';
const ENV_ACCESS_KEY = 'AKIDFROMENVIRONMENT';
const ENV_SECRET_KEY = 'environment/secret+key/for/agentcore';
const EXPLICIT_KEY = 'AKIDEXPLICITKEYS';
const EXPLICIT_SECRET = 'explicit/secret/key/for/agentcore/tests0';

function route(name: string, backend: Record<string, unknown>, policies?: Record<string, unknown>): Record<string, unknown> {
  return { name, matches: [{ path: { pathPrefix: `/${name}` } }], ...(policies ? { policies } : {}), backends: [backend] };
}

function check(r: ReceivedRequest, secret: string): ReturnType<typeof verifySigV4> {
  return verifySigV4({ method: r.method, url: r.url, headers: r.headers as Record<string, string | string[] | undefined>, body: r.body }, secret);
}

describe('service and cloudBackend backends', () => {
  let gw: RunningGateway;
  let port: number;
  let upstream: TestUpstream;
  let env: { restore(): void };

  before(async () => {
    upstream = await startUpstream(undefined, { bufferBody: true });
    env = awsChainEnv(ENV_ACCESS_KEY, ENV_SECRET_KEY, { AWS_ENDPOINT_URL_BEDROCK_AGENTCORE: upstream.url, AWS_ENDPOINT_URL: undefined });
    port = await freePort();
    gw = await startGateway(oneListenerConfig(port, [
      route('svc-object', { service: { name: { namespace: 'default', hostname: 'localhost' }, port: upstream.port } }),
      route('svc-string', { service: { name: 'default/127.0.0.1', port: upstream.port } }),
      route('agent', { cloudBackend: { agentRuntime: { agentRuntimeArn: ARN, qualifier: 'DEFAULT' } } }),
      route('agentcore-alias', { aws: { agentCore: { agentRuntimeArn: ARN } } }),
      route('agent-explicit', { cloudBackend: { agentRuntime: { agentRuntimeArn: ARN } } }, {
        backendAuth: { aws: { accessKeyId: EXPLICIT_KEY, secretAccessKey: EXPLICIT_SECRET, region: 'eu-west-1', serviceName: 'bedrock-agentcore' } },
      }),
    ]));
  });
  after(async () => {
    await gw?.stop();
    await upstream?.close();
    env.restore();
  });

  it('service {namespace, hostname}: forwards to <hostname>:<port> with that Host', async () => {
    const res = await request(`http://127.0.0.1:${port}/svc-object/items?x=1`);
    assert.equal(res.statusCode, 200);
    await res.body.dump();
    const got = upstream.received.at(-1)!;
    assert.equal(got.url, '/svc-object/items?x=1');
    assert.equal(got.headers.host, `localhost:${upstream.port}`);
  });

  it('service "namespace/hostname": the string form', async () => {
    const res = await request(`http://127.0.0.1:${port}/svc-string/a`, { method: 'POST', body: 'payload' });
    assert.equal(res.statusCode, 200);
    await res.body.dump();
    const got = upstream.received.at(-1)!;
    assert.equal(got.method, 'POST');
    assert.equal(got.body.toString(), 'payload');
  });

  it('agentRuntime: the path becomes /runtimes/<ARN>/invocations?qualifier=…, signed with the default credential chain', async () => {
    const body = JSON.stringify({ prompt: 'hello agent' });
    const res = await request(`http://127.0.0.1:${port}/agent/whatever?ignored=1`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
    assert.equal(res.statusCode, 200);
    await res.body.dump();
    const got = upstream.received.at(-1)!;
    assert.equal(got.method, 'POST');
    assert.equal(got.url, `/runtimes/${encodeURIComponent(ARN)}/invocations?qualifier=DEFAULT`);
    assert.equal(got.body.toString(), body);
    const sig = check(got, ENV_SECRET_KEY);
    assert.ok(sig.ok, sig.problem);
    assert.equal(sig.accessKeyId, ENV_ACCESS_KEY);
    assert.equal(sig.service, 'bedrock-agentcore');
    assert.equal(sig.region, 'eu-west-1');
  });

  it('aws.agentCore is the same backend; no qualifier means no query', async () => {
    const res = await request(`http://127.0.0.1:${port}/agentcore-alias`, { method: 'POST', body: '{}' });
    assert.equal(res.statusCode, 200);
    await res.body.dump();
    const got = upstream.received.at(-1)!;
    assert.equal(got.url, `/runtimes/${encodeURIComponent(ARN)}/invocations`);
    assert.ok(check(got, ENV_SECRET_KEY).ok);
  });

  it('a backendAuth policy signs instead of the implicit chain', async () => {
    const res = await request(`http://127.0.0.1:${port}/agent-explicit`, { method: 'POST', body: '{"a":1}' });
    assert.equal(res.statusCode, 200);
    await res.body.dump();
    const got = upstream.received.at(-1)!;
    const sig = check(got, EXPLICIT_SECRET);
    assert.ok(sig.ok, sig.problem);
    assert.equal(sig.accessKeyId, EXPLICIT_KEY);
    assert.equal(String(got.headers.authorization).split('Credential=').length, 2, 'signed once, not twice');
  });

  it('config errors name the field: a bad ARN, a bad service name', async () => {
    const bad = (backend: Record<string, unknown>) =>
      startGateway({ binds: [{ port, listeners: [{ routes: [{ backends: [backend] }] }] }] });
    await assert.rejects(bad({ cloudBackend: { agentRuntime: { agentRuntimeArn: 'arn:aws:lambda:us-east-1:123456789012:function:x' } } }), /not an AgentCore runtime ARN[\s\S]*cloudBackend\.agentRuntime\.agentRuntimeArn/);
    await assert.rejects(bad({ service: { name: 'no-slash', port: 80 } }), /exactly one `\/`[\s\S]*backends\[0\]\.service\.name/);
    await assert.rejects(bad({ cloudBackend: { agentRuntime: { agentRuntimeArn: ARN }, agentCore: { agentRuntimeArn: ARN } } }), /only one of `agentRuntime`, `agentCore` may be set/);
  });
});
