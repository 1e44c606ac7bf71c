// remoteRateLimit against the real Envoy rate limit service (github.com/envoyproxy/ratelimit, Go) backed by a real
// Redis, started by test/helpers/envoy-ratelimit.ts (built on first use and cached). Without Go, the module proxy or
// redis-server the whole suite is skipped with the reason.
import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import type { Plugin } from 'switchyard/sdk';
import remoteRateLimit from '../../plugins/policies/remote-rate-limit/plugin.ts';
import { fullPreset } from '../../plugins/presets/full.ts';
import { locateRateLimitService, startRateLimitService } from '../helpers/envoy-ratelimit.ts';
import { stopChild } from '../helpers/processes.ts';
import type { RateLimitService } from '../helpers/envoy-ratelimit.ts';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startMock } from '../ai/harness.ts';
import type { Mock } from '../ai/harness.ts';

const found = await locateRateLimitService();
const skip = found.skip;
if (skip) console.log(`# remoteRateLimit against envoyproxy/ratelimit skipped: ${skip}`);

function preset(...extra: Plugin[]): Plugin[] {
  const base = fullPreset as readonly Plugin[];
  return [...base, ...extra.filter((p) => !base.some((b) => b.key === p.key))];
}

const DOMAIN = 'switchyard-e2e';
const SERVICE_CONFIG = `domain: ${DOMAIN}
descriptors:
  - key: user
    rate_limit:
      unit: hour
      requests_per_unit: 3
  - key: path
    value: /strict
    rate_limit:
      unit: day
      requests_per_unit: 1
  - key: user
    value: vip
    rate_limit:
      unlimited: true
  - key: team
    rate_limit:
      unit: hour
      requests_per_unit: 20
`;

interface Result {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  reachedUpstream: boolean;
}

describe('remoteRateLimit against envoyproxy/ratelimit + Redis', { skip }, () => {
  let gw: RunningGateway;
  let port: number;
  let upstream: TestUpstream;
  let rls: RateLimitService;
  let grpcPort: number;
  let mock: Mock | undefined;
  let counter: TestUpstream | undefined;
  const run = `r${Date.now().toString(36)}`; // descriptor values unique to this run

  before(
    async () => {
      rls = await startRateLimitService(found, SERVICE_CONFIG);
      grpcPort = rls.grpcPort;
      port = await freePort();
      upstream = await startUpstream();
      mock = await startMock();
      // Anthropic's count_tokens answers a count and reports no usage.
      counter = await startUpstream((_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ input_tokens: 1012 }));
      });
      const route = (name: string, policy: Record<string, unknown>) => ({
        name,
        matches: [{ path: { pathPrefix: `/${name}` } }],
        policies: { remoteRateLimit: { host: `127.0.0.1:${grpcPort}`, domain: DOMAIN, ...policy } },
        backends: [{ host: `127.0.0.1:${upstream.port}` }],
      });
      const routes = [
        route('users', { descriptors: [{ entries: [{ key: 'user', value: 'request.headers["x-user"]' }] }] }),
        route('paths', { descriptors: [{ entries: [{ key: 'path', value: '"/" + request.path.split("/")[2]' }] }] }),
        route('closed', { timeout: '500ms', descriptors: [{ entries: [{ key: 'user', value: `"${run}-closed"` }] }] }),
        route('open', { timeout: '500ms', failureMode: 'failOpen', descriptors: [{ entries: [{ key: 'user', value: `"${run}-open"` }] }] }),
        {
          ...route('llm', { descriptors: [{ type: 'tokens', entries: [{ key: 'team', value: `"${run}-team"` }] }] }),
          backends: [{ ai: { name: 'llm', provider: { openAI: {} }, hostOverride: mock.hostPort } }],
        },
        {
          ...route('count', {}),
          policies: {
            ai: { routes: { '/v1/messages/count_tokens': 'anthropicTokenCount', '/v1/messages': 'messages' } },
            remoteRateLimit: { host: `127.0.0.1:${grpcPort}`, domain: DOMAIN, descriptors: [{ type: 'tokens', entries: [{ key: 'team', value: `"${run}-count"` }] }] },
          },
          backends: [{ ai: { name: 'counter', provider: { anthropic: { model: 'claude-sonnet-4-5' } }, hostOverride: `127.0.0.1:${counter.port}` } }],
        },
        {
          ...route('zero', { descriptors: [{ type: 'tokens', entries: [{ key: 'team', value: `"${run}-zero"` }] }] }),
          backends: [{ ai: { name: 'llm0', provider: { openAI: {} }, hostOverride: mock.hostPort } }],
        },
      ];
      gw = await startGateway({ binds: [{ port, listeners: [{ routes }] }] }, { preset: preset(remoteRateLimit) });
    },
    { timeout: 60_000 },
  );
  after(async () => {
    await gw?.stop();
    await upstream?.close();
    await rls?.stop();
    await mock?.stop();
    await counter?.close();
  });

  async function call(path: string, headers: Record<string, string> = {}): Promise<Result> {
    const before = upstream.received.length;
    const res = await request(`${gw.url(port)}${path}`, { headers });
    const text = await res.body.text();
    return { status: res.statusCode, headers: res.headers as IncomingHttpHeaders, text, reachedUpstream: upstream.received.length > before };
  }

  it('counts per descriptor value: three requests an hour, then 429 with the service and DECIDED 10 headers', async () => {
    const user = `${run}-alice`;
    for (const remaining of ['2', '1', '0']) {
      const ok = await call('/users/x', { 'x-user': user });
      assert.equal(ok.status, 200, rls.logs());
      assert.equal(ok.reachedUpstream, true);
      assert.equal(ok.headers['x-ratelimit-limit'], '3');
      assert.equal(ok.headers['x-ratelimit-remaining'], remaining);
      assert.equal(ok.headers['ratelimit-limit'], '3', "the service's own headers (response_headers_to_add)");
      assert.equal(ok.headers['ratelimit-remaining'], remaining);
    }
    const denied = await call('/users/x', { 'x-user': user });
    assert.equal(denied.status, 429);
    assert.equal(denied.reachedUpstream, false);
    assert.equal(denied.headers['x-ratelimit-limit'], '3');
    assert.equal(denied.headers['x-ratelimit-remaining'], '0');
    const reset = Number(denied.headers['x-ratelimit-reset']);
    assert.ok(reset > 0 && reset <= 3600, `x-ratelimit-reset within the hour window (${reset})`);
    assert.equal(denied.headers['retry-after'], String(reset));
    assert.equal(denied.headers['ratelimit-limit'], '3');
    assert.equal(JSON.parse(denied.text).error.type, 'rate_limited');
    assert.equal((await call('/users/x', { 'x-user': `${run}-bob` })).status, 200, 'another user has its own counter');
  });

  it('honours the service configuration: values with their own limit, unlimited values, unknown keys', async () => {
    assert.equal((await call('/paths/strict')).status, 200);
    assert.equal((await call('/paths/strict')).status, 429, '`path=/strict` allows one a day');
    assert.equal((await call('/paths/other')).status, 200, 'no rule for `path=/other`');
    assert.equal((await call('/paths/other')).status, 200);
    for (let i = 0; i < 5; i++) assert.equal((await call('/users/x', { 'x-user': 'vip' })).status, 200, '`user=vip` is unlimited');
    const noUser = await call('/users/x');
    assert.equal(noUser.status, 200, 'no x-user header: the descriptor is dropped and the service is not asked');
    assert.equal(noUser.headers['x-ratelimit-limit'], undefined);
  });

  it('LLM tokens (type: tokens): hits_addend counts the prompt estimate, then the real usage; 429 once the team\'s 20 are spent', async () => {
    const client = new OpenAI({ baseURL: `${gw.url(port)}/llm/v1`, apiKey: 'sk-test', maxRetries: 0 });
    const hello = () => client.chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'hello' }] }).withResponse();
    const first = await hello();
    assert.equal(first.response.headers.get('x-ratelimit-limit'), '20', rls.logs());
    assert.equal(first.response.headers.get('x-ratelimit-remaining'), '18', 'hits_addend 2: the estimate of "hello"');
    await sleep(300); // the usage call (hits_addend 14) is sent after the answer, fire and forget
    const second = await hello();
    assert.equal(second.response.headers.get('x-ratelimit-remaining'), '2', '16 real tokens counted for the first answer, 2 reserved');
    await sleep(300);
    const calls = (await mock!.journal()).length;
    const err = await hello().then(
      () => assert.fail('the call succeeded'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof OpenAI.RateLimitError, String(err));
    assert.equal(err.headers?.get('x-ratelimit-limit'), '20');
    assert.equal((await mock!.journal()).length, calls, 'the provider did not receive the refused request');
  });

  it('a prompt estimated at 0 tokens is checked, not counted (descriptor hits_addend 0; ADR 0173)', async () => {
    const client = new OpenAI({ baseURL: `${gw.url(port)}/zero/v1`, apiKey: 'sk-test', maxRetries: 0 });
    const empty = await client.chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: '' }] }).withResponse();
    assert.equal(empty.response.headers.get('x-ratelimit-limit'), '20', rls.logs());
    assert.equal(empty.response.headers.get('x-ratelimit-remaining'), '20', 'the reservation of 0 tokens charged nothing');
  });

  it('a count_tokens call is checked, not counted (ADR 0157, 0173)', async () => {
    const client = new Anthropic({ baseURL: `${gw.url(port)}/count`, apiKey: 'sk-test', maxRetries: 0 });
    for (let i = 0; i < 2; i++) {
      // 400 characters: a 100-token prompt estimate, which a count does not reserve.
      const { data, response } = await client.messages.countTokens({ model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'word '.repeat(80) }] }).withResponse();
      assert.equal(data.input_tokens, 1012);
      assert.equal(response.headers.get('x-ratelimit-limit'), '20', rls.logs());
      assert.equal(response.headers.get('x-ratelimit-remaining'), '20', `count ${i + 1} charged nothing`);
    }
  });

  it('Redis down: the service fails, so failClosed answers 500 and failOpen passes', async () => {
    assert.equal((await call('/closed/x')).status, 200);
    await rls.redis.stop();
    const closed = await call('/closed/x');
    assert.equal(closed.status, 500);
    assert.deepEqual(JSON.parse(closed.text), { error: { type: 'rate_limit_error', message: 'rate limit failed' } });
    const open = await call('/open/x');
    assert.equal(open.status, 200);
    assert.equal(open.reachedUpstream, true);
  });

  it('service down: failClosed answers 500, failOpen passes', async () => {
    await stopChild(rls.service);
    assert.equal((await call('/closed/x')).status, 500);
    assert.equal((await call('/open/x')).status, 200);
  });
});
