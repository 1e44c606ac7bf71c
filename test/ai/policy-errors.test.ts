// More gateway-made errors on LLM routes, through the real SDKs (DECIDED 4, issue 14 item 9): basicAuth 401s, an
// external authorization service's denial (HTTP and gRPC), a remote rate-limit service's body, a prompt guard whose
// service fails (503 `prompt guard failed`, request and response phase), and Google's shape for a Gemini client.
// A guard's *rejection* is the user's configured answer and stays as configured.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startEnvoyServer } from '../helpers/envoy-grpc-servers.ts';
import type { TestEnvoyServer } from '../helpers/envoy-grpc-servers.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { aiRoute, rejection, sdkClients, startAiGateway, startMock } from './harness.ts';
import type { AiGateway, Mock } from './harness.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

const ROUTES = { '/v1/messages': 'messages', ':generateContent': 'generateContent', '*': 'completions' };
const STUB = { testAi: { routes: ROUTES } };
const GUARD_FAILED = 'failed to process LLM request: prompt guard failed';
const basic = (user: string, password: string): string => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

describe('policy and guard errors on LLM routes take the client API\'s shape', () => {
  let mock: Mock;
  let gw: AiGateway;
  let dir: string;
  let authz: TestUpstream;
  let hook: TestUpstream;
  let envoy: TestEnvoyServer;

  before(async () => {
    mock = await startMock();
    dir = testTempDir('switchyard-llm-policy-errors-');
    // {SHA} is one of the htpasswd formats basicAuth reads (base64 of the password's SHA-1).
    writeFileSync(join(dir, 'users'), `alice:{SHA}${createHash('sha1').update('alice-pw').digest('base64')}\n`);
    // The external authorization service: the bearer token says what to answer.
    authz = await startUpstream((req, res) => {
      const auth = String(req.headers.authorization ?? '');
      if (auth === 'Bearer allow-me') return void res.writeHead(200).end();
      if (auth === 'Bearer unknown') {
        res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer realm="authz"' });
        return void res.end(JSON.stringify({ error: 'token unknown to the directory' }));
      }
      res.writeHead(403, { 'content-type': 'text/plain', 'x-authz-reason': 'blocked' });
      res.end('tenant acme is blocked\n');
    });
    // The guard webhook: fails on /request for ERR500, on /response always; passes everything else.
    hook = await startUpstream((req, res, raw) => {
      if (req.url === '/response' || raw.toString('utf8').includes('ERR500')) {
        res.writeHead(500, { 'content-type': 'application/json' });
        return void res.end('{"error":"boom"}');
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"action":{"reason":"fine"}}');
    });
    envoy = await startEnvoyServer({
      Check: () => ({ status: { code: 7, message: 'no' }, denied_response: { status: { code: 403 }, body: 'grpc service says no', headers: [{ header: { key: 'content-type', value: 'text/plain' } }] } }),
      ShouldRateLimit: () => ({
        overall_code: 2,
        statuses: [{ code: 2, current_limit: { requests_per_unit: 1, unit: 2 }, limit_remaining: 0, duration_until_reset: { seconds: 30, nanos: 0 } }],
        // The type of its raw body: the client gets its own API's error JSON, typed as such.
        response_headers_to_add: [{ key: 'content-type', value: 'text/plain' }],
        request_headers_to_add: [],
        raw_body: Buffer.from('slow down, please'),
      }),
    });
    const dead = await freePort();
    const provider = (name: string) => ({ name, provider: { openAI: {} }, hostOverride: mock.hostPort });
    const webhook = (host: string) => ({ webhook: { target: { host } } });
    gw = await startAiGateway([
      aiRoute('/basic', provider('basic'), { ...STUB, basicAuth: { htpasswd: { file: relative(process.cwd(), join(dir, 'users')) }, realm: 'llm', mode: 'strict' } }),
      aiRoute('/authz', provider('authz'), { ...STUB, extAuthz: { host: `127.0.0.1:${authz.port}`, protocol: { http: {} } } }),
      aiRoute('/gauthz', provider('gauthz'), { ...STUB, extAuthz: { host: envoy.address, protocol: { grpc: {} } } }),
      aiRoute('/rls', provider('rls'), { ...STUB, remoteRateLimit: { host: envoy.address, domain: 'llm', descriptors: [{ entries: [{ key: 'k', value: '"v"' }] }] } }),
      aiRoute('/guarded', provider('guarded'), { ai: { routes: ROUTES, promptGuard: { request: [webhook(`127.0.0.1:${hook.port}`)] } } }),
      aiRoute('/refused', provider('refused'), { ai: { routes: ROUTES, promptGuard: { request: [webhook(`127.0.0.1:${dead}`)] } } }),
      aiRoute('/outguard', provider('outguard'), { ai: { routes: ROUTES, promptGuard: { response: [webhook(`127.0.0.1:${hook.port}`)] } } }),
      aiRoute('/rejecting', provider('rejecting'), {
        ai: { routes: ROUTES, promptGuard: { request: [{ regex: { action: 'reject', rules: [{ builtin: 'email' }] }, rejection: { status: 422, body: 'no e-mail addresses, please', headers: { set: { 'x-guard': 'email' } } } }] } },
      }),
      aiRoute('/gemini', { name: 'g', provider: { gemini: {} }, hostOverride: mock.hostPort }, { ai: { routes: ROUTES, promptGuard: { request: [webhook(`127.0.0.1:${dead}`)] } } }),
      aiRoute('/gkeyed', { name: 'gk', provider: { gemini: {} }, hostOverride: mock.hostPort }, { ...STUB, apiKey: { keys: [{ key: 'AIza-right' }], mode: 'strict' } }),
    ]);
  });
  after(async () => {
    await gw?.stop();
    await mock?.stop();
    await authz?.close();
    await hook?.close();
    await envoy?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const { openai, anthropic } = sdkClients(() => gw.base, 'k');
  const chat = (c: OpenAI, content = 'hello') => c.chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content }] });
  const message = (c: Anthropic, content = 'hello') => c.messages.create({ model: 'claude-test-1', max_tokens: 10, messages: [{ role: 'user', content }] });

  describe('basicAuth 401', () => {
    it('OpenAI client (its bearer key is no Basic credential): AuthenticationError, the Basic challenge kept', async () => {
      const err = await rejection(chat(openai('/basic')), OpenAI.AuthenticationError);
      assert.equal(err.status, 401);
      assert.deepEqual(err.error, { message: 'basic authentication failure: no basic authentication credentials found', type: 'authentication_error', param: null, code: null });
      assert.equal(err.headers?.get('www-authenticate'), 'Basic realm="llm"');
      assert.equal(err.headers?.get('content-type'), 'application/json');
    });

    it('Anthropic client with a wrong password: AuthenticationError in Anthropic\'s envelope', async () => {
      const client = anthropic('/basic', 'k', { defaultHeaders: { authorization: basic('alice', 'wrong') } });
      const err = await rejection(message(client), Anthropic.AuthenticationError);
      assert.deepEqual(err.error, { type: 'error', error: { type: 'authentication_error', message: 'basic authentication failure: invalid credentials' } });
    });

    it('the right password passes', async () => {
      const res = await chat(openai('/basic', 'k', { defaultHeaders: { authorization: basic('alice', 'alice-pw') } }));
      assert.equal(res.choices[0]!.message.content, 'Hello from the mock!');
    });
  });

  describe('extAuthz denial (HTTP service)', () => {
    it('OpenAI client: PermissionDeniedError with the service\'s text as message; its status and headers kept', async () => {
      const err = await rejection(chat(openai('/authz', 'blocked')), OpenAI.PermissionDeniedError);
      assert.equal(err.status, 403);
      assert.deepEqual(err.error, { message: 'tenant acme is blocked', type: 'permission_error', param: null, code: null });
      assert.equal(err.headers?.get('x-authz-reason'), 'blocked');
      assert.equal(err.headers?.get('content-type'), 'application/json');
    });

    it('Anthropic client, a 401 with a JSON body: AuthenticationError, the body\'s message, the challenge kept', async () => {
      const err = await rejection(message(anthropic('/authz', 'k', { apiKey: null, authToken: 'unknown' })), Anthropic.AuthenticationError);
      assert.deepEqual(err.error, { type: 'error', error: { type: 'authentication_error', message: 'token unknown to the directory' } });
      assert.equal(err.headers?.get('www-authenticate'), 'Bearer realm="authz"');
    });

    it('an allowed request reaches the model', async () => {
      const res = await chat(openai('/authz', 'allow-me'));
      assert.equal(res.choices[0]!.message.content, 'Hello from the mock!');
    });
  });

  describe('relayed denials of gRPC services', () => {
    it('extAuthz gRPC denied_response: PermissionDeniedError with the service\'s body as message', async () => {
      const err = await rejection(chat(openai('/gauthz')), OpenAI.PermissionDeniedError);
      assert.deepEqual(err.error, { message: 'grpc service says no', type: 'permission_error', param: null, code: null });
    });

    it('remoteRateLimit raw_body: RateLimitError in Anthropic\'s envelope with the body as message, rate-limit headers kept', async () => {
      const err = await rejection(message(anthropic('/rls')), Anthropic.RateLimitError);
      assert.deepEqual(err.error, { type: 'error', error: { type: 'rate_limit_error', message: 'slow down, please' } });
      assert.equal(err.headers?.get('x-ratelimit-limit'), '1');
      assert.ok(err.headers?.get('retry-after'));
      assert.equal(err.headers?.get('content-type'), 'application/json');
    });
  });

  describe('a failing prompt guard (503, fail-closed)', () => {
    it('webhook answers 500: OpenAI InternalServerError with OpenAI\'s error object', async () => {
      const err = await rejection(chat(openai('/guarded'), 'please ERR500'), OpenAI.InternalServerError);
      assert.equal(err.status, 503);
      assert.deepEqual(err.error, { message: GUARD_FAILED, type: 'server_error', param: null, code: null });
      assert.equal(err.headers?.get('content-type'), 'application/json');
    });

    it('webhook answers 500: Anthropic InternalServerError in Anthropic\'s envelope', async () => {
      const err = await rejection(message(anthropic('/guarded'), 'please ERR500'), Anthropic.InternalServerError);
      assert.equal(err.status, 503);
      assert.deepEqual(err.error, { type: 'error', error: { type: 'overloaded_error', message: GUARD_FAILED } });
    });

    it('webhook refuses connections: both clients get their shape', async () => {
      const o = await rejection(chat(openai('/refused')), OpenAI.InternalServerError);
      assert.equal(o.status, 503);
      assert.deepEqual(o.error, { message: GUARD_FAILED, type: 'server_error', param: null, code: null });
      const a = await rejection(message(anthropic('/refused')), Anthropic.InternalServerError);
      assert.deepEqual(a.error, { type: 'error', error: { type: 'overloaded_error', message: GUARD_FAILED } });
    });

    it('a passing webhook lets the request through', async () => {
      const res = await chat(openai('/guarded'));
      assert.equal(res.choices[0]!.message.content, 'Hello from the mock!');
    });

    it('a response guard that fails: the same 503 in the client\'s shape', async () => {
      const err = await rejection(message(anthropic('/outguard')), Anthropic.InternalServerError);
      assert.equal(err.status, 503);
      assert.deepEqual(err.error, { type: 'error', error: { type: 'overloaded_error', message: GUARD_FAILED } });
    });
  });

  describe('a guard rejection stays as the user configured it', () => {
    it('status, body and headers of `rejection`; no content-type of the gateway\'s; the SDK still raises its typed error', async () => {
      const err = await rejection(chat(openai('/rejecting'), 'mail me at a@b.example'), OpenAI.UnprocessableEntityError);
      assert.equal(err.status, 422);
      assert.equal(err.error, undefined, 'the body is not JSON');
      assert.equal(err.message, '422 no e-mail addresses, please');
      assert.equal(err.headers?.get('x-guard'), 'email');
      assert.equal(err.headers?.get('content-type'), null);
    });
  });

  describe('Gemini clients get Google\'s error shape', () => {
    const generate = (prefix: string, headers: Record<string, string> = {}) =>
      fetch(`${gw.base}${prefix}/v1beta/models/gemini-2.5-flash:generateContent`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hello' }] }] }),
      });

    it('apiKey 401 (a wrong x-goog-api-key, now read as the key): {"error":{"code","message","status":"UNAUTHENTICATED"}}', async () => {
      const res = await generate('/gkeyed', { 'x-goog-api-key': 'AIza-wrong' });
      assert.equal(res.status, 401);
      assert.equal(res.headers.get('content-type'), 'application/json');
      assert.deepEqual(await res.json(), { error: { code: 401, message: 'api key authentication failure: invalid credentials', status: 'UNAUTHENTICATED' } });
    });

    it('a failing guard: 503 UNAVAILABLE', async () => {
      const res = await generate('/gemini');
      assert.equal(res.status, 503);
      assert.deepEqual(await res.json(), { error: { code: 503, message: GUARD_FAILED, status: 'UNAVAILABLE' } });
    });
  });
});
