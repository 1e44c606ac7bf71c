// Errors the gateway makes itself on an LLM route (auth 401s, rate-limit 429s, a malformed JSON body) answer in the
// client API's error shape (DECIDED 4), so the real SDKs raise their typed errors with the right status, type and
// message: Anthropic `{"type":"error","error":{"type","message"}}`, OpenAI `{"error":{"message","type","param","code"}}`.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as jose from 'jose';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { aiRoute, rejection, sdkClients, startAiGateway, startMock } from './harness.ts';
import type { AiGateway, Mock } from './harness.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

const KEY = 'sk-gateway-key-1';
const ROUTES = { testAi: { routes: { '/v1/messages': 'messages', '*': 'completions' } } };

/** A fetch that sends `{bad json` instead of the body the SDK serialized (the SDKs cannot be made to send it). */
const corruptingFetch: typeof fetch = (input, init) => fetch(input, { ...init, body: '{bad json' });

describe('gateway-made errors on LLM routes take the client API\'s shape', () => {
  let mock: Mock;
  let gw: AiGateway;
  let dir: string;

  before(async () => {
    mock = await startMock();
    dir = testTempDir('switchyard-llm-errors-');
    const { publicKey } = await jose.generateKeyPair('ES256', { extractable: true });
    writeFileSync(join(dir, 'jwks.json'), JSON.stringify({ keys: [{ ...(await jose.exportJWK(publicKey)), kid: 'k1', use: 'sig' }] }));
    const jwtAuth = { issuer: 'https://llm.issuer.test', audiences: ['llm'], jwks: { file: relative(process.cwd(), join(dir, 'jwks.json')) }, mode: 'strict' };
    gw = await startAiGateway([
      aiRoute('/jwt', { name: 'jwt', provider: { openAI: {} }, hostOverride: mock.hostPort }, { ...ROUTES, jwtAuth }),
      aiRoute('/keyed', { name: 'keyed', provider: { openAI: {} }, hostOverride: mock.hostPort }, { ...ROUTES, apiKey: { keys: [{ key: KEY }], mode: 'strict' } }),
      aiRoute('/limited', { name: 'limited', provider: { openAI: {} }, hostOverride: mock.hostPort }, { ...ROUTES, localRateLimit: [{ maxTokens: 1, tokensPerFill: 1, fillInterval: '1h' }] }),
      aiRoute('/denied', { name: 'denied', provider: { openAI: {} }, hostOverride: mock.hostPort }, { ...ROUTES, authorization: { rules: ['source.address == "10.9.9.9"'] } }),
      aiRoute('/open', { name: 'open', provider: { openAI: {} }, hostOverride: mock.hostPort }, ROUTES),
      // No policy; the configured model changes the body, so it is serialised again.
      aiRoute('/pinned', { name: 'pinned', provider: { openAI: { model: 'gpt-pinned' } }, hostOverride: mock.hostPort }),
      // No policy, no configured model: the client's bytes are sent as they came (read, not parsed whole).
      aiRoute('/raw', { name: 'raw', provider: { openAI: {} }, hostOverride: mock.hostPort }),
      // A Chat Completions provider: an Anthropic client's body is translated.
      aiRoute('/translated', { name: 'translated', provider: { openAI: {} }, hostOverride: mock.hostPort }, { ai: { routes: { '/v1/messages': 'messages', '*': 'completions' } } }),
      aiRoute('/detect', { name: 'detect', provider: { openAI: {} }, hostOverride: mock.hostPort }, { testAi: { routes: { '*': 'detect' } } }),
    ]);
  });
  after(async () => {
    await gw?.stop();
    await mock?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const { openai, anthropic } = sdkClients(() => gw.base, KEY);
  const chat = (c: OpenAI) => c.chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'hello' }] });
  const message = (c: Anthropic) => c.messages.create({ model: 'claude-test-1', max_tokens: 10, messages: [{ role: 'user', content: 'hello' }] });

  describe('apiKey 401', () => {
    it('OpenAI client: AuthenticationError with OpenAI\'s error object', async () => {
      const err = await rejection(chat(openai('/keyed', 'sk-wrong')), OpenAI.AuthenticationError);
      assert.equal(err.status, 401);
      assert.equal(err.type, 'authentication_error');
      assert.deepEqual(err.error, { message: 'api key authentication failure: invalid credentials', type: 'authentication_error', param: null, code: null });
      assert.equal(err.message, '401 api key authentication failure: invalid credentials');
    });

    it('Anthropic client: AuthenticationError with Anthropic\'s error envelope', async () => {
      const err = await rejection(message(anthropic('/keyed', 'sk-wrong')), Anthropic.AuthenticationError);
      assert.equal(err.status, 401);
      assert.equal(err.type, 'authentication_error');
      assert.deepEqual(err.error, { type: 'error', error: { type: 'authentication_error', message: 'api key authentication failure: invalid credentials' } });
    });

    it('the right key still passes (the client\'s key is the gateway\'s)', async () => {
      const res = await chat(openai('/keyed'));
      assert.equal(res.choices[0]!.message.content, 'Hello from the mock!');
    });

    it('a plain client keeps the status and gets JSON', async () => {
      const res = await fetch(`${gw.base}/keyed/v1/chat/completions`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
      assert.equal(res.status, 401);
      assert.equal(res.headers.get('content-type'), 'application/json');
      assert.deepEqual(await res.json(), { error: { message: 'api key authentication failure: no API Key found', type: 'authentication_error', param: null, code: null } });
    });
  });

  describe('jwtAuth 401', () => {
    it('OpenAI client: AuthenticationError; the RFC 6750 challenge stays', async () => {
      const err = await rejection(chat(openai('/jwt', 'not-a-jwt')), OpenAI.AuthenticationError);
      assert.equal(err.type, 'authentication_error');
      assert.match(String((err.error as { message: string }).message), /^authentication failure: /);
      assert.equal(err.headers?.get('www-authenticate'), 'Bearer error="invalid_token"');
    });

    it('Anthropic client (bearer authToken): AuthenticationError in Anthropic\'s envelope', async () => {
      const client = new Anthropic({ baseURL: `${gw.base}/jwt`, authToken: 'not-a-jwt', apiKey: null, maxRetries: 0 });
      const err = await rejection(message(client), Anthropic.AuthenticationError);
      assert.equal(err.type, 'authentication_error');
      assert.equal((err.error as { type: string }).type, 'error');
    });
  });

  describe('authorization 403', () => {
    it('OpenAI client: PermissionDeniedError with permission_error', async () => {
      const err = await rejection(chat(openai('/denied')), OpenAI.PermissionDeniedError);
      assert.equal(err.status, 403);
      assert.deepEqual(err.error, { message: 'authorization failed', type: 'permission_error', param: null, code: null });
    });

    it('Anthropic client: PermissionDeniedError in Anthropic\'s envelope', async () => {
      const err = await rejection(message(anthropic('/denied')), Anthropic.PermissionDeniedError);
      assert.deepEqual(err.error, { type: 'error', error: { type: 'permission_error', message: 'authorization failed' } });
    });
  });

  describe('rate limit 429', () => {
    it('OpenAI client: RateLimitError with rate_limit_error; rate-limit headers kept', async () => {
      await chat(openai('/limited'));
      const err = await rejection(chat(openai('/limited')), OpenAI.RateLimitError);
      assert.equal(err.status, 429);
      assert.equal(err.type, 'rate_limit_error');
      assert.equal(err.error && (err.error as { message: string }).message, 'rate limit exceeded');
      assert.ok(err.headers?.get('retry-after'));
    });

    it('Anthropic client: RateLimitError in Anthropic\'s envelope', async () => {
      const err = await rejection(message(anthropic('/limited')), Anthropic.RateLimitError);
      assert.equal(err.type, 'rate_limit_error');
      assert.deepEqual(err.error, { type: 'error', error: { type: 'rate_limit_error', message: 'rate limit exceeded' } });
    });
  });

  describe('malformed JSON body', () => {
    it('OpenAI client: BadRequestError, invalid_request_error, JSON not text/plain', async () => {
      const err = await rejection(chat(openai('/open', KEY, { fetch: corruptingFetch })), OpenAI.BadRequestError);
      assert.equal(err.status, 400);
      assert.equal(err.type, 'invalid_request_error');
      assert.match(String((err.error as { message?: string }).message), /^failed to process LLM request: invalid JSON body: /);
      assert.equal(err.headers?.get('content-type'), 'application/json');
    });

    it('Anthropic client: BadRequestError in Anthropic\'s envelope', async () => {
      const err = await rejection(message(anthropic('/open', KEY, { fetch: corruptingFetch })), Anthropic.BadRequestError);
      assert.equal(err.status, 400);
      assert.equal(err.type, 'invalid_request_error');
      const body = err.error as { type: string; error: { type: string; message: string } };
      assert.equal(body.type, 'error');
      assert.match(body.error.message, /^failed to process LLM request: invalid JSON body: /);
    });

    it('a body nested deeper than the stack (JSON.parse takes it, serialising it again would not): 400, not 500', async () => {
      const depth = 400_000;
      const deep = `{"model":"gpt-test","messages":[{"role":"user","content":"hello"}],"extra":${'['.repeat(depth)}${']'.repeat(depth)}}`;
      const deeply: typeof fetch = (input, init) => fetch(input, { ...init, body: deep });
      const err = await rejection(chat(openai('/pinned', KEY, { fetch: deeply })), OpenAI.BadRequestError);
      assert.equal(err.status, 400);
      assert.equal((err.error as { message?: string }).message, 'failed to process LLM request: request body nested too deeply');
    });

    it('nested past 512 levels, forwarded as it came or translated: 400 in the client API\'s shape, nothing sent (ADR 0148)', async () => {
      const deep = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
      const before = (await mock.journal()).length;
      // Sent as it came, the provider was handed a body it could not read (a 500 of its own).
      const openaiBody = `{"model":"gpt-test","messages":[{"role":"user","content":"hello"}],"extra":${deep(200_000)}}`;
      const err = await rejection(chat(openai('/raw', KEY, { fetch: (input, init) => fetch(input, { ...init, body: openaiBody }) })), OpenAI.BadRequestError);
      assert.equal((err.error as { message?: string }).message, 'failed to process LLM request: request body nested too deeply');
      assert.equal(err.type, 'invalid_request_error');
      // Translated, the nested content was dropped without a word and the call answered.
      const anthropicBody = `{"model":"claude-test-1","max_tokens":10,"messages":[{"role":"user","content":${deep(200_000)}}]}`;
      const aerr = await rejection(message(anthropic('/translated', KEY, { fetch: (input, init) => fetch(input, { ...init, body: anthropicBody }) })), Anthropic.BadRequestError);
      assert.deepEqual(aerr.error, { type: 'error', error: { type: 'invalid_request_error', message: 'failed to process LLM request: request body nested too deeply' } });
      // 513 levels in all are refused, 512 taken.
      const at = (n: number) => `{"model":"gpt-test","messages":[{"role":"user","content":"hello"}],"extra":${deep(n)}}`;
      await rejection(chat(openai('/raw', KEY, { fetch: (input, init) => fetch(input, { ...init, body: at(512) }) })), OpenAI.BadRequestError);
      assert.equal((await mock.journal()).length, before, 'nothing reached the provider');
      const ok = await chat(openai('/raw', KEY, { fetch: (input, init) => fetch(input, { ...init, body: at(511) }) }));
      assert.equal(ok.choices[0]!.message.content, 'Hello from the mock!');
    });

    it('a `detect` route tells an Anthropic client by its anthropic-version header', async () => {
      const err = await rejection(message(anthropic('/detect', KEY, { fetch: corruptingFetch })), Anthropic.BadRequestError);
      assert.equal((err.error as { type: string }).type, 'error');
    });
  });
});
