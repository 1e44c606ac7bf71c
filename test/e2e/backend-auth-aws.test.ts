// backendAuth `aws` (SigV4): what a real upstream receives verifies under an independent SigV4 implementation
// (test/helpers/sigv4.ts, itself checked against AWS's published vectors), with the body hash, on every attempt.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { verifySigV4 } from '../helpers/sigv4.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { ReceivedRequest, TestUpstream } from '../helpers/upstream.ts';
import { awsChainEnv, config, gatewayOptions } from './backend-auth-support.ts';

const ACCESS_KEY = 'AKIDSWITCHYARDTEST';
const SECRET_KEY = 'sEcReT/ForSwitchyard+SigV4TestsOnly0000';
const ENV_ACCESS_KEY = 'AKIDFROMENVIRONMENT';
const ENV_SECRET_KEY = 'environment/secret+key/for/default/chain';
const sha256 = (b: Uint8Array | string): string => createHash('sha256').update(b).digest('hex');

function check(r: ReceivedRequest, secret = SECRET_KEY): ReturnType<typeof verifySigV4> {
  return verifySigV4({ method: r.method, url: r.url, headers: r.headers as Record<string, string | string[] | undefined>, body: r.body }, secret);
}

describe('backendAuth: aws (SigV4)', () => {
  let gw: RunningGateway;
  let port: number;
  let upstream: TestUpstream;
  const attempts = new Map<string, number>();
  let env: { restore(): void };

  before(async () => {
    // The default credential chain reads the environment first; keep everything else of it from finding anything.
    env = awsChainEnv(ENV_ACCESS_KEY, ENV_SECRET_KEY);
    port = await freePort();
    upstream = await startUpstream((req, res, body) => {
      const path = req.url!.split('?')[0]!;
      const n = (attempts.get(path) ?? 0) + 1;
      attempts.set(path, n);
      // The flaky route fails its first attempt so the gateway retries.
      res.writeHead(path === '/flaky' && n === 1 ? 503 : 200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ len: body.length }));
    });
    const explicit = { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY, region: 'us-east-1', serviceName: 'bedrock' };
    gw = await startGateway(
      config(port, upstream.port, [
        { name: 'signed', policies: { backendAuth: { aws: explicit } } },
        { name: 'flaky', policies: { backendAuth: { aws: explicit }, retry: { attempts: 1, codes: [503] } } },
        { name: 'session', policies: { backendAuth: { aws: { ...explicit, sessionToken: 'FwoGZXIvYXdzEXAMPLESESSION' } } } },
        { name: 'mutated', policies: { requestHeaderModifier: { set: { 'x-added-by-policy': 'yes' } }, backendAuth: { cloudAuthB: explicit } } },
        { name: 'implicit', policies: { backendAuth: { aws: { region: 'eu-west-1', serviceName: 'execute-api' } } } },
        // Exactly the SPEC's fields (SPEC 5.x `cloudAuthB`): no `serviceName`, a plain host upstream.
        { name: 'spec-only', policies: { backendAuth: { cloudAuthB: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY, region: 'us-west-2', sessionToken: 'SPECSESSION' } } } },
      ]),
      gatewayOptions,
    );
  });
  after(async () => {
    await gw?.stop();
    await upstream?.close();
    env.restore();
  });

  it('signs a POST: the signature verifies, the body hash header is the hash of the bytes received', async () => {
    const body = JSON.stringify({ messages: [{ role: 'user', content: [{ text: 'hello' }] }] });
    const res = await request(`${gw.url(port)}/signed/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse?b=2&a=1`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', authorization: 'Bearer client-credential', 'x-amz-date': '20000101T000000Z' },
    });
    assert.equal(res.statusCode, 200);
    await res.body.text();
    const got = upstream.received.at(-1)!;
    assert.equal(got.body.toString(), body);
    assert.equal(got.headers['x-amz-content-sha256'], sha256(body));
    const c = check(got);
    assert.ok(c.ok, `${c.problem}\n${c.canonicalRequest}`);
    assert.equal(c.accessKeyId, ACCESS_KEY);
    assert.equal(c.region, 'us-east-1');
    assert.equal(c.service, 'bedrock');
    assert.ok(c.signedHeaders!.includes('x-amz-content-sha256') && c.signedHeaders!.includes('content-type'));
    assert.ok(!c.signedHeaders!.includes('x-forwarded-for'), 'forwarding headers are left unsigned');
    assert.match(String(got.headers['x-amz-date']), /^\d{8}T\d{6}Z$/);
    assert.notEqual(got.headers['x-amz-date'], '20000101T000000Z', 'client-sent x-amz-date replaced');
  });

  it('a client x-request-id the gateway replaces (ADR 0025) does not break the signature: it is left unsigned', async () => {
    const res = await request(`${gw.url(port)}/signed/items`, { headers: { 'x-request-id': 'not a "plain" id' } });
    await res.body.text();
    const got = upstream.received.at(-1)!;
    assert.notEqual(got.headers['x-request-id'], 'not a "plain" id');
    const c = check(got);
    assert.ok(c.ok, `${c.problem}\n${c.canonicalRequest}`);
    assert.ok(!c.signedHeaders!.includes('x-request-id'));
  });

  it('signs a GET with the empty-body hash', async () => {
    const res = await request(`${gw.url(port)}/signed/items`);
    await res.body.text();
    const got = upstream.received.at(-1)!;
    assert.equal(got.headers['x-amz-content-sha256'], sha256(''));
    assert.ok(check(got).ok);
  });

  it('a retry is signed again: two attempts, two different valid signatures', async () => {
    const body = 'x'.repeat(1000);
    const before = upstream.received.length;
    const res = await request(`${gw.url(port)}/flaky`, { method: 'PUT', body });
    assert.equal(res.statusCode, 200);
    await res.body.text();
    const tries = upstream.received.slice(before);
    assert.equal(tries.length, 2);
    for (const t of tries) {
      assert.equal(t.body.toString(), body);
      assert.equal(t.headers['x-amz-content-sha256'], sha256(body));
      const c = check(t);
      assert.ok(c.ok, c.problem);
    }
    assert.equal(tries[1]!.headers['x-retry-attempt'], '1');
    assert.ok(check(tries[1]!).signedHeaders!.includes('x-retry-attempt'), 'the second attempt signs its own headers');
    assert.notEqual(tries[0]!.headers.authorization, tries[1]!.headers.authorization);
  });

  it('signs after the other request policies changed the request', async () => {
    await (await request(`${gw.url(port)}/mutated`)).body.text();
    const got = upstream.received.at(-1)!;
    assert.equal(got.headers['x-added-by-policy'], 'yes');
    const c = check(got);
    assert.ok(c.ok, c.problem);
    assert.ok(c.signedHeaders!.includes('x-added-by-policy'));
  });

  it('a chunked body larger than the 64 KiB retry buffer is read whole and hashed', async () => {
    const chunk = Buffer.alloc(64 * 1024, 'a');
    const stream = Readable.from([chunk, chunk, Buffer.from('tail')]);
    const res = await request(`${gw.url(port)}/signed/upload`, { method: 'POST', body: stream });
    assert.equal(res.statusCode, 200);
    await res.body.text();
    const got = upstream.received.at(-1)!;
    assert.equal(got.body.length, 2 * 64 * 1024 + 4);
    assert.equal(got.headers['x-amz-content-sha256'], sha256(got.body));
    assert.ok(check(got).ok);
  });

  it('a body over the 2 MiB signing limit is refused with 413', async () => {
    const res = await request(`${gw.url(port)}/signed/upload`, { method: 'POST', body: Buffer.alloc(2 * 1024 * 1024 + 1, 'b') });
    assert.equal(res.statusCode, 413);
    await res.body.text();
  });

  it('temporary credentials send and sign x-amz-security-token', async () => {
    await (await request(`${gw.url(port)}/session`)).body.text();
    const got = upstream.received.at(-1)!;
    assert.equal(got.headers['x-amz-security-token'], 'FwoGZXIvYXdzEXAMPLESESSION');
    const c = check(got);
    assert.ok(c.ok && c.signedHeaders!.includes('x-amz-security-token'));
  });

  it('without keys the default credential chain is used (here: the environment)', async () => {
    await (await request(`${gw.url(port)}/implicit`)).body.text();
    const c = check(upstream.received.at(-1)!, ENV_SECRET_KEY);
    assert.ok(c.ok, c.problem);
    assert.equal(c.accessKeyId, ENV_ACCESS_KEY);
    assert.equal(c.region, 'eu-west-1');
    assert.equal(c.service, 'execute-api');
  });

  it('SPEC-only fields on a plain host: signed for `bedrock` (the reference default), with a warning at load', async () => {
    const body = JSON.stringify({ hello: 'world' });
    const res = await request(`${gw.url(port)}/spec-only/model/m/converse`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
    assert.equal(res.statusCode, 200);
    await res.body.text();
    const got = upstream.received.at(-1)!;
    const c = check(got);
    assert.ok(c.ok, `${c.problem}\n${c.canonicalRequest}`);
    assert.equal(c.service, 'bedrock');
    assert.equal(c.region, 'us-west-2');
    assert.equal(c.accessKeyId, ACCESS_KEY);
    assert.equal(got.headers['x-amz-security-token'], 'SPECSESSION');
    assert.ok(
      gw.logs.some((l) => l.includes('`serviceName` is not set') && l.includes('`bedrock`')),
      'one load-time warning names the default service',
    );
  });

  it('/config_dump shows `aws` (not the alias) and no secret; the logs never show it', async () => {
    const text = await (await request(`${gw.adminUrl}/config_dump`)).body.text();
    assert.doesNotMatch(text, /cloudAuthB/);
    assert.doesNotMatch(text, new RegExp(SECRET_KEY.replace(/[+/]/g, '\\$&')));
    assert.doesNotMatch(text, /FwoGZXIvYXdzEXAMPLESESSION/);
    assert.doesNotMatch(text, new RegExp(ACCESS_KEY));
    assert.ok(!gw.logs.some((l) => l.includes(SECRET_KEY) || l.includes('FwoGZXIvYXdzEXAMPLESESSION')));
  });
});

describe('backendAuth: aws credential failure', () => {
  it('no credentials anywhere in the default chain: 500 `backend authentication failed`', async () => {
    // The chain's environment with no keys either.
    const env = awsChainEnv('', '', { AWS_ACCESS_KEY_ID: undefined, AWS_SECRET_ACCESS_KEY: undefined });
    const upstream = await startUpstream();
    const port = await freePort();
    const gw = await startGateway(config(port, upstream.port, [{ name: 'r', policies: { backendAuth: { aws: { region: 'us-east-1', serviceName: 'bedrock' } } } }]), gatewayOptions);
    try {
      const res = await request(`${gw.url(port)}/r`);
      assert.equal(res.statusCode, 500);
      const body = (await res.body.json()) as { error: { type: string; message: string } };
      assert.equal(body.error.type, 'backend_auth_failed');
      assert.match(body.error.message, /^backend authentication failed: .*credentials/i);
      assert.equal(upstream.received.length, 0);
    } finally {
      await gw.stop();
      await upstream.close();
      env.restore();
    }
  });
});
