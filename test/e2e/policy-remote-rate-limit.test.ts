import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import type { Plugin } from 'switchyard/sdk';
import remoteRateLimit from '../../plugins/policies/remote-rate-limit/plugin.ts';
import { fullPreset } from '../../plugins/presets/full.ts';
import { grpc, startEnvoyServer } from '../helpers/envoy-grpc-servers.ts';
import type { RateLimitRequestMessage, TestEnvoyServer } from '../helpers/envoy-grpc-servers.ts';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import { RawClient, values } from './proxy-support.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { FIXTURES, startMock } from '../ai/harness.ts';
import type { Mock } from '../ai/harness.ts';

function preset(...extra: Plugin[]): Plugin[] {
  const base = fullPreset as readonly Plugin[];
  return [...base, ...extra.filter((p) => !base.some((b) => b.key === p.key))];
}

// RateLimitResponse.Code and RateLimit.Unit values.
const OK = 1;
const OVER_LIMIT = 2;
const MINUTE = 2;

/** Framing headers and a value no header can carry, as a service may send them: neither is used. */
const FRAMING = [
  { key: 'Content-Length', value: '1' },
  { key: 'Transfer-Encoding', value: 'chunked' },
  { key: 'x-split', value: '', raw_value: Buffer.from('a\r\nx-injected: 1') },
];

/**
 * A small RLS: a fixed one-minute window per `key=value` of the first entry of each descriptor, limit 2 for `user`,
 * 20 for `team` (LLM tokens), 100 for anything else. The domain picks special behaviour: `broken` fails with UNAVAILABLE, `slow` answers late,
 * `own-headers` sends its own x-ratelimit-limit, `body` a raw body on denial, `framing` framing headers both ways.
 */
function rlsHandler(counters: Map<string, number>) {
  return async (req: RateLimitRequestMessage) => {
    if (req.domain === 'broken') throw { code: grpc.status.UNAVAILABLE, details: 'redis down' };
    if (req.domain === 'slow') await sleep(1500);
    // An answer that is neither OK nor OVER_LIMIT (UNKNOWN, or a code the API does not define).
    if (req.domain === 'unknown-code') return { overall_code: 0, statuses: [], response_headers_to_add: [], request_headers_to_add: [], raw_body: Buffer.alloc(0) };
    // Over the limit, its limit in no unit the API defines and no reset time: nothing to derive a wait from.
    if (req.domain === 'no-reset') {
      const status = { code: OVER_LIMIT, current_limit: { requests_per_unit: 5, unit: 0 }, limit_remaining: 0, duration_until_reset: null };
      return { overall_code: OVER_LIMIT, statuses: [status], response_headers_to_add: [], request_headers_to_add: [], raw_body: Buffer.alloc(0) };
    }
    const statuses = req.descriptors.map((d) => {
      const first = d.entries[0]!;
      const limit = first.key === 'user' ? 2 : first.key === 'team' ? 20 : 100;
      const k = `${req.domain}|${d.entries.map((e) => `${e.key}=${e.value}`).join('&')}`;
      const n = (counters.get(k) ?? 0) + (req.hits_addend || 1);
      counters.set(k, n);
      return {
        code: n > limit ? OVER_LIMIT : OK,
        current_limit: { requests_per_unit: limit, unit: MINUTE },
        limit_remaining: Math.max(0, limit - n),
        duration_until_reset: { seconds: 42, nanos: 0 },
      };
    });
    const over = statuses.some((s) => s.code === OVER_LIMIT);
    return {
      overall_code: over ? OVER_LIMIT : OK,
      statuses,
      response_headers_to_add: [
        ...(over ? [{ key: 'X-RLS', value: 'over' }, ...(req.domain === 'own-headers' ? [{ key: 'x-ratelimit-limit', value: 'from-rls' }] : [])] : [{ key: 'x-rls', value: 'ok' }]),
        ...(req.domain === 'framing' ? FRAMING : []),
        // Only the llm route's request descriptor's call: tells its headers from the token descriptors' call's.
        ...(req.descriptors.some((d) => d.entries[0]!.key === 'route') ? [{ key: 'x-rls-route', value: 'checked' }] : []),
      ],
      request_headers_to_add: [...(over ? [] : [{ key: 'x-rls-checked', value: 'yes' }]), ...(req.domain === 'framing' ? FRAMING : [])],
      raw_body: over && req.domain === 'body' ? Buffer.from('slow down, please') : Buffer.alloc(0),
    };
  };
}

interface Result {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  reachedUpstream: boolean;
  ms: number;
}

describe('remoteRateLimit (small RLS test server)', () => {
  let gw: RunningGateway;
  let port: number;
  let upstream: TestUpstream;
  let rls: TestEnvoyServer;
  let deadPort: number;
  let mock: Mock;
  const counters = new Map<string, number>();

  const userDescriptor = { entries: [{ key: 'user', value: 'request.headers["x-user"]' }] };
  const route = (name: string, policy: Record<string, unknown>) => ({
    name,
    matches: [{ path: { pathPrefix: `/${name}` } }],
    policies: { remoteRateLimit: policy },
    backends: [{ host: `127.0.0.1:${upstream.port}` }],
  });

  before(async () => {
    port = await freePort();
    deadPort = await freePort();
    upstream = await startUpstream();
    rls = await startEnvoyServer({ ShouldRateLimit: rlsHandler(counters) });
    // A long answer streamed slowly, its usage only in the last chunk: a client that leaves early cuts it (ADR 0150).
    mock = await startMock([{ match: { userMessage: 'tell me a long story' }, response: { content: 'word '.repeat(2400), usage: { prompt_tokens: 9, completion_tokens: 3000 } }, latency: 10, chunkSize: 40 }, ...FIXTURES]);
    const host = rls.address;
    // LLM tokens per team (from a header), and one request descriptor, in front of an `ai` backend on aimock.
    const llm = {
      name: 'llm',
      matches: [{ path: { pathPrefix: '/llm' } }],
      policies: {
        // Messages clients translated to the OpenAI provider.
        ai: { routes: { '/v1/messages': 'messages', '*': 'completions' } },
        remoteRateLimit: {
          host,
          domain: 'llm',
          descriptors: [{ type: 'tokens', entries: [{ key: 'team', value: 'request.headers["x-team"]' }] }, { entries: [{ key: 'route', value: '"llm"' }] }],
        },
      },
      backends: [{ ai: { name: 'llm', provider: { openAI: {} }, hostOverride: mock.hostPort } }],
    };
    const routes = [
      route('limited', { host, domain: 'gateway-test', descriptors: [userDescriptor] }),
      route('two', { host, domain: 'two', descriptors: [userDescriptor, { entries: [{ key: 'path', value: 'request.path' }, { key: 'plan', value: '"free"' }] }] }),
      route('own', { host, domain: 'own-headers', descriptors: [userDescriptor] }),
      route('body', { host, domain: 'body', descriptors: [userDescriptor] }),
      route('framing', { host, domain: 'framing', descriptors: [userDescriptor] }),
      route('named', { backend: 'rls', domain: 'named', descriptors: [userDescriptor] }),
      route('no-reset', { host, domain: 'no-reset', descriptors: [userDescriptor] }),
      route('unknown-code', { host, domain: 'unknown-code', descriptors: [userDescriptor] }),
      route('unknown-code-open', { host, domain: 'unknown-code', failureMode: 'failOpen', descriptors: [userDescriptor] }),
      route('broken', { host, domain: 'broken', descriptors: [{ entries: [{ key: 'k', value: '"v"' }] }] }),
      route('broken-open', { host, domain: 'broken', failureMode: 'failOpen', descriptors: [{ entries: [{ key: 'k', value: '"v"' }] }] }),
      route('slow', { host, domain: 'slow', timeout: '200ms', descriptors: [{ entries: [{ key: 'k', value: '"v"' }] }] }),
      route('down', { host: `127.0.0.1:${deadPort}`, domain: 'd', descriptors: [{ entries: [{ key: 'k', value: '"v"' }] }] }),
      route('down-open', { host: `127.0.0.1:${deadPort}`, domain: 'd', failureMode: 'failOpen', descriptors: [{ entries: [{ key: 'k', value: '"v"' }] }] }),
      route('down-open-pascal', { host: `127.0.0.1:${deadPort}`, domain: 'd', failureMode: 'FailOpen', descriptors: [{ entries: [{ key: 'k', value: '"v"' }] }] }),
      route('failing-logged', { host: `127.0.0.1:${deadPort}`, domain: 'd', descriptors: [{ entries: [{ key: 'k', value: '"v"' }] }] }),
      route('down-closed-pascal', { host: `127.0.0.1:${deadPort}`, domain: 'd', failureMode: 'FailClosed', descriptors: [{ entries: [{ key: 'k', value: '"v"' }] }] }),
      llm,
      // A token limit per model and provider: `llm.*` of the call about to be made.
      {
        name: 'per-model',
        matches: [{ path: { pathPrefix: '/per-model' } }],
        policies: { remoteRateLimit: { host, domain: 'per-model', descriptors: [{ type: 'tokens', entries: [{ key: 'model', value: 'llm.requestModel' }, { key: 'provider', value: 'llm.provider' }, { key: 'big', value: 'string(llm.promptTokens > 1000)' }] }] } },
        backends: [{ ai: { name: 'per-model', provider: { openAI: {} }, hostOverride: mock.hostPort } }],
      },
    ];
    gw = await startGateway({ backends: [{ name: 'rls', host }], binds: [{ port, listeners: [{ routes }] }] }, { preset: preset(remoteRateLimit) });
  });
  after(async () => {
    await gw?.stop();
    await rls?.stop();
    await upstream?.close();
    await mock?.stop();
  });

  async function call(path: string, headers: Record<string, string> = {}): Promise<Result> {
    const before = upstream.received.length;
    const start = performance.now();
    const res = await request(`${gw.url(port)}${path}`, { headers });
    const text = await res.body.text();
    return { status: res.statusCode, headers: res.headers as IncomingHttpHeaders, text, reachedUpstream: upstream.received.length > before, ms: performance.now() - start };
  }

  it('under the limit: passes, with the service headers upstream and downstream and derived x-ratelimit-*', async () => {
    const r = await call('/limited/a', { 'x-user': 'alice' });
    assert.equal(r.status, 200);
    assert.equal(r.reachedUpstream, true);
    assert.equal(upstream.received.at(-1)!.headers['x-rls-checked'], 'yes', 'request_headers_to_add go upstream');
    assert.equal(r.headers['x-rls'], 'ok', 'response_headers_to_add reach the client');
    assert.equal(r.headers['x-ratelimit-limit'], '2');
    assert.equal(r.headers['x-ratelimit-remaining'], '1');
    assert.equal(r.headers['x-ratelimit-reset'], '42');
    assert.equal(r.headers['retry-after'], undefined, 'Retry-After only on a denial');
    const sent = rls.rateLimits.at(-1)!;
    assert.equal(sent.domain, 'gateway-test');
    assert.deepEqual(sent.descriptors.map((d) => d.entries), [[{ key: 'user', value: 'alice' }]], 'descriptor value from CEL over a header');
    assert.equal(sent.hits_addend, 0);
  });

  it('over the limit: 429 with the service headers plus x-ratelimit-* and Retry-After', async () => {
    assert.equal((await call('/limited/a', { 'x-user': 'bob' })).status, 200);
    assert.equal((await call('/limited/a', { 'x-user': 'bob' })).status, 200);
    const r = await call('/limited/a', { 'x-user': 'bob' });
    assert.equal(r.status, 429);
    assert.equal(r.reachedUpstream, false);
    assert.equal(r.headers['x-rls'], 'over');
    assert.equal(r.headers['x-ratelimit-limit'], '2');
    assert.equal(r.headers['x-ratelimit-remaining'], '0');
    assert.equal(r.headers['x-ratelimit-reset'], '42');
    assert.equal(r.headers['retry-after'], '42');
    assert.deepEqual(JSON.parse(r.text), { error: { type: 'rate_limited', message: 'rate limit exceeded' } });
    assert.equal((await call('/limited/a', { 'x-user': 'carol' })).status, 200, 'another descriptor value has its own counter');
  });

  it('headers the service sends itself are not replaced; its raw body is the 429 body', async () => {
    for (let i = 0; i < 2; i++) assert.equal((await call('/own/x', { 'x-user': 'dave' })).status, 200);
    const own = await call('/own/x', { 'x-user': 'dave' });
    assert.equal(own.status, 429);
    assert.equal(own.headers['x-ratelimit-limit'], 'from-rls');
    assert.equal(own.headers['x-ratelimit-remaining'], '0');
    for (let i = 0; i < 2; i++) await call('/body/x', { 'x-user': 'erin' });
    const body = await call('/body/x', { 'x-user': 'erin' });
    assert.equal(body.status, 429);
    assert.equal(body.text, 'slow down, please');
    assert.equal(body.headers['retry-after'], '42');
  });

  it('a denial without a reset time the service gives or its unit implies still tells the client to wait (never 0 seconds)', async () => {
    const r = await call('/no-reset/x', { 'x-user': 'zed' });
    assert.equal(r.status, 429);
    assert.equal(r.headers['x-ratelimit-limit'], '5');
    assert.equal(r.headers['retry-after'], '1', 'Retry-After: 0 invites an immediate retry of a refused request');
    assert.equal(r.headers['x-ratelimit-reset'], '1');
  });

  it('framing headers and unsendable values from the service are not used: each answer keeps its own length, the connection stays in step', async () => {
    const client = new RawClient(port);
    await client.connected;
    try {
      const body = 'x'.repeat(40);
      for (let i = 0; i < 3; i++) {
        client.write(`POST /framing/a HTTP/1.1\r\nHost: gw\r\nx-user: gina\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
        const answer = await client.read();
        assert.equal(answer.status, i < 2 ? 200 : 429);
        assert.notDeepEqual(values(answer, 'content-length'), ['1']);
        assert.deepEqual(values(answer, 'x-split'), []);
        assert.deepEqual(values(answer, 'x-injected'), []);
        if (i < 2) {
          assert.equal(upstream.received.at(-1)!.body.toString(), body, 'the upstream got the whole body');
          assert.equal(upstream.received.at(-1)!.headers['x-split'], undefined);
        }
        else assert.deepEqual(JSON.parse(answer.body), { error: { type: 'rate_limited', message: 'rate limit exceeded' } });
      }
      assert.equal(client.unread(), '', 'nothing left over on the connection');
    } finally {
      client.destroy();
    }
  });

  it('a failing entry drops its descriptor; the others are still sent', async () => {
    const r = await call('/two/p');
    assert.equal(r.status, 200);
    assert.deepEqual(rls.rateLimits.at(-1)!.descriptors.map((d) => d.entries), [[{ key: 'path', value: '/two/p' }, { key: 'plan', value: 'free' }]]);
    await call('/two/p', { 'x-user': 'frank' });
    assert.equal(rls.rateLimits.at(-1)!.descriptors.length, 2);
  });

  it('with no descriptor left the service is not called and the request passes', async () => {
    const calls = rls.rateLimits.length;
    const r = await call('/limited/a');
    assert.equal(r.status, 200);
    assert.equal(r.reachedUpstream, true);
    assert.equal(rls.rateLimits.length, calls, 'no ShouldRateLimit call');
  });

  it('type: tokens on an ai route: hits_addend carries the prompt estimate, then the rest of the real usage; 429 when over', async () => {
    const client = new OpenAI({ baseURL: `${gw.url(port)}/llm/v1`, apiKey: 'sk-test', maxRetries: 0, defaultHeaders: { 'x-team': 'blue' } });
    const hello = () => client.chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'hello' }] });
    const team = (m: RateLimitRequestMessage) => m.domain === 'llm' && m.descriptors.some((d) => d.entries[0]!.key === 'team');
    const teamCalls = () => rls.rateLimits.filter(team);
    const settled = async (n: number) => {
      for (let i = 0; i < 100 && teamCalls().length < n; i++) await sleep(20);
      return teamCalls();
    };

    const { data: res, response } = await hello().withResponse();
    assert.deepEqual(res.usage, { prompt_tokens: 11, completion_tokens: 5, total_tokens: 16 });
    assert.equal(response.headers.get('x-ratelimit-limit'), '20', 'the token descriptor\'s status on an allowed answer');
    assert.equal(response.headers.get('x-ratelimit-remaining'), '18');
    assert.equal(response.headers.get('x-rls-route'), 'checked', 'the request descriptors\' call\'s headers, held while the token call could refuse');
    const [reserve, usage] = await settled(2);
    assert.deepEqual(reserve!.descriptors.map((d) => d.entries), [[{ key: 'team', value: 'blue' }]], 'token descriptors in a call of their own');
    assert.equal(reserve!.hits_addend, 2, 'the prompt estimate ("hello": 5 bytes / 4, rounded up)');
    assert.deepEqual(usage!.descriptors.map((d) => d.entries), [[{ key: 'team', value: 'blue' }]]);
    assert.equal(usage!.hits_addend, 14, 'after the answer: 11 + 5 real tokens minus the 2 already counted');
    const requestCall = rls.rateLimits.find((m) => m.domain === 'llm' && !team(m))!;
    assert.deepEqual(requestCall.descriptors.map((d) => d.entries), [[{ key: 'route', value: 'llm' }]]);
    assert.equal(requestCall.hits_addend, 0, 'request descriptors keep the one-hit default');

    await hello(); // 16 + 2 = 18 of the team's 20, then 32 once settled
    await settled(4);
    const calls = (await mock.journal()).length;
    try {
      await hello();
      assert.fail('the call succeeded');
    } catch (err) {
      assert.ok(err instanceof OpenAI.RateLimitError, String(err));
      assert.equal(err.status, 429);
      assert.deepEqual(err.error, { message: 'rate limit exceeded', type: 'rate_limit_error', param: null, code: null }, 'in the OpenAI error shape');
      assert.equal(err.headers?.get('x-ratelimit-limit'), '20', 'the headers of the token descriptor that refused');
      assert.equal(err.headers?.get('retry-after'), '42');
      assert.equal(err.headers?.get('x-rls'), 'over', 'the refusing call\'s service headers, not those the request descriptors\' call queued');
      assert.equal(err.headers?.get('x-rls-route'), null, 'nor any other header of the allowed call');
    }
    assert.equal((await mock.journal()).length, calls, 'the provider did not receive the refused request');
    await sleep(100);
    assert.equal(teamCalls().length, 5, 'a refused request settles nothing');
  });

  describe('type: tokens, streamed and translated', () => {
    const team = (name: string) => (m: RateLimitRequestMessage) => m.domain === 'llm' && m.descriptors.some((d) => d.entries[0]!.value === name);
    const settled = async (name: string, n: number) => {
      for (let i = 0; i < 150 && rls.rateLimits.filter(team(name)).length < n; i++) await sleep(20);
      return rls.rateLimits.filter(team(name));
    };

    it('a streamed answer settles the usage of its last chunk', async () => {
      const client = new OpenAI({ baseURL: `${gw.url(port)}/llm/v1`, apiKey: 'sk-test', maxRetries: 0, defaultHeaders: { 'x-team': 'stream' } });
      const stream = await client.chat.completions.create({ model: 'gpt-test', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hello' }] });
      let usage: OpenAI.CompletionUsage | undefined;
      for await (const chunk of stream) usage = chunk.usage ?? usage;
      assert.equal(usage?.total_tokens, 16);
      const [reserve, rest] = await settled('stream', 2);
      assert.equal(reserve!.hits_addend + rest!.hits_addend, 16, 'the reservation and the settlement add up to the real usage');
    });

    it('a stream the client leaves is charged what was relayed (ADR 0150)', async () => {
      const client = new OpenAI({ baseURL: `${gw.url(port)}/llm/v1`, apiKey: 'sk-test', maxRetries: 0, defaultHeaders: { 'x-team': 'cut' } });
      const stream = await client.chat.completions.create({ model: 'gpt-test', stream: true, messages: [{ role: 'user', content: 'tell me a long story' }] });
      let read = 0;
      for await (const c of stream) {
        read += c.choices[0]?.delta?.content?.length ?? 0;
        if (read >= 4000) break;
      }
      const [reserve, rest] = await settled('cut', 2);
      assert.ok(rest, 'a settling call after the cut');
      const charged = reserve!.hits_addend + rest.hits_addend;
      assert.ok(charged >= 1000 && charged < 3000, `charged ${charged}: the relayed output (>= 1000 tokens), not the whole answer`);
    });

    it('an Anthropic client on the OpenAI provider: over the limit is Anthropic\'s rate_limit_error, the provider not called', async () => {
      const client = new Anthropic({ baseURL: `${gw.url(port)}/llm`, apiKey: 'sk-test', maxRetries: 0, defaultHeaders: { 'x-team': 'anthropic' } });
      const hello = () => client.messages.create({ model: 'gpt-test', max_tokens: 16, messages: [{ role: 'user', content: 'hello' }] });
      const first = await hello();
      assert.deepEqual([first.usage.input_tokens, first.usage.output_tokens], [11, 5]);
      await settled('anthropic', 2);
      await hello();
      await settled('anthropic', 4);
      const calls = (await mock.journal()).length;
      await assert.rejects(hello(), (err: unknown) => {
        assert.ok(err instanceof Anthropic.RateLimitError, String(err));
        assert.equal((err.error as { error: { type: string } }).error.type, 'rate_limit_error');
        assert.equal(err.headers?.get('retry-after'), '42');
        return true;
      });
      assert.equal((await mock.journal()).length, calls, 'the provider did not receive the refused request');
    });
  });

  it('type: tokens descriptors read `llm.requestModel`, `llm.provider` and `llm.promptTokens` of the call about to be made', async () => {
    // They failed before (the call was published after the reservation): the descriptor was left out, nothing limited.
    const client = new OpenAI({ baseURL: `${gw.url(port)}/per-model/v1`, apiKey: 'sk-test', maxRetries: 0 });
    await client.chat.completions.create({ model: 'gpt-model-a', messages: [{ role: 'user', content: 'hello' }] });
    const sent = rls.rateLimits.filter((m) => m.domain === 'per-model');
    assert.equal(sent.length >= 1, true, 'the service was asked');
    assert.deepEqual(sent[0]!.descriptors.map((d) => d.entries), [[{ key: 'model', value: 'gpt-model-a' }, { key: 'provider', value: 'openai' }, { key: 'big', value: 'false' }]]);
  });

  it('reaches the service through a named backend', async () => {
    assert.equal((await call('/named/x', { 'x-user': 'gina' })).status, 200);
    assert.equal(rls.rateLimits.at(-1)!.domain, 'named');
  });

  it('service errors: failClosed (default) answers 500, failOpen passes', async () => {
    const closed = await call('/broken/x');
    assert.equal(closed.status, 500);
    assert.deepEqual(JSON.parse(closed.text), { error: { type: 'rate_limit_error', message: 'rate limit failed' } });
    assert.equal(closed.reachedUpstream, false);
    const open = await call('/broken-open/x');
    assert.equal(open.status, 200);
    assert.equal(open.reachedUpstream, true);
  });

  it('an answer neither OK nor OVER_LIMIT is a failure: failClosed answers 500, failOpen passes', async () => {
    const closed = await call('/unknown-code/x', { 'x-user': 'yan' });
    assert.equal(closed.status, 500);
    assert.equal(closed.reachedUpstream, false);
    const open = await call('/unknown-code-open/x', { 'x-user': 'yan' });
    assert.equal(open.status, 200);
    assert.equal(open.reachedUpstream, true);
  });

  it('a service slower than `timeout` is a failure', async () => {
    const r = await call('/slow/x');
    assert.equal(r.status, 500);
    assert.ok(r.ms < 1200, `gave up after the 200ms timeout (took ${Math.round(r.ms)}ms)`);
  });

  it('service down: failClosed answers 500, failOpen passes (PascalCase aliases too)', async () => {
    assert.equal((await call('/down/x')).status, 500);
    assert.equal((await call('/down-closed-pascal/x')).status, 500);
    const open = await call('/down-open/x');
    assert.equal(open.status, 200);
    assert.equal(open.reachedUpstream, true);
    assert.equal((await call('/down-open-pascal/x')).status, 200);
  });

  it('a failing service is logged once, not once per request (ADR 0173)', async () => {
    // A route of its own, which no other test calls.
    const warnings = () => gw.logs.filter((l) => l.includes('rate limit service failed')).length;
    const before = warnings();
    for (let i = 0; i < 5; i++) assert.equal((await call('/failing-logged/x')).status, 500);
    assert.equal(warnings() - before, 1, gw.logs.slice(-8).join('\n'));
  });

  it('config errors point at the field', async () => {
    const yaml = (policy: string) => `binds:\n- port: ${port}\n  listeners:\n  - routes:\n    - policies:\n        remoteRateLimit: ${policy}\n      backends: [{ host: "127.0.0.1:1" }]\n`;
    await assert.rejects(
      gw.gateway.compile(yaml(`{ host: "127.0.0.1:1", domain: d, descriptors: [{ entries: [{ key: k, value: "request.((" }] }] }`)),
      /:6:112: invalid CEL expression `request\.\(\(`.*descriptors\[0\]\.entries\[0\]\.value/,
    );
    await assert.rejects(gw.gateway.compile(yaml(`{ host: "127.0.0.1:1" }`)), /missing required key `domain`/);
    await assert.rejects(gw.gateway.compile(yaml(`{ domain: d }`)), /exactly one of `host`, `service`, `backend` is required/);
    await assert.rejects(gw.gateway.compile(yaml(`{ host: "127.0.0.1:1", domain: d, failureMode: failShut }`)), /must be one of `failClosed`/);
    await assert.rejects(
      gw.gateway.compile(yaml(`{ host: "127.0.0.1:1", domain: d, descriptors: [{ entries: [{ key: k, value: '"v"' }] }, { type: tokens, entries: [{ key: k, value: '"v"' }] }] }`)),
      /:6:123: `type: tokens` counts LLM tokens, which only an `ai` backend reports.*descriptors\[1\]\.type/s,
      'token descriptors on a route without an ai backend',
    );
    // Names a descriptor can never read fail at load, not on every request (ADR 0173).
    await assert.rejects(
      gw.gateway.compile(yaml(`{ host: "127.0.0.1:1", domain: d, descriptors: [{ type: tokens, entries: [{ key: k, value: '"a" + llmRequest.model' }] }] }`)),
      /:6:124: invalid CEL expression `"a" \+ llmRequest\.model`: `llmRequest` is not available in rate limit descriptors.*descriptors\[0\]\.entries\[0\]\.value/s,
    );
    await assert.rejects(
      gw.gateway.compile(yaml(`{ host: "127.0.0.1:1", domain: d, descriptors: [{ entries: [{ key: k, value: 'llm.requestModel' }] }] }`)),
      /`llm` is not available in `type: requests` descriptors.*descriptors\[0\]\.entries\[0\]\.value/s,
    );
  });
});
