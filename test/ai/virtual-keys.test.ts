// Virtual keys with budgets (issue 13 item 4, ADR 0035, docs/llm-economics.md) on the embedded SQLite store: keys
// declared in the config and made through the management API on the admin address authenticate like `apiKey` and
// show as `key.*` in CEL; a request reserves its estimated cost on every budget of its key and team before the call
// and settles the real usage after the answer (streams included), so concurrent requests overshoot a budget by at
// most one estimate; costs charged are the catalog's. Real `openai` and `@anthropic-ai/sdk` clients against aimock;
// a "hello" answer is 11 + 5 = 16 tokens (harness FIXTURES), its prompt estimate 2 tokens.
import assert from 'node:assert/strict';
import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { stringify } from 'yaml';
import { keysMain } from '../../kernel/boot/keys-cli.ts';
import { compileError, compileWarnings, headlines, yaml } from '../config/helpers.ts';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { accessRecords, aiPreset, aiRoute, rejection, startMock } from './harness.ts';
import type { Mock } from './harness.ts';
import { testTempDir } from '../helpers/temp-dir.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';

const ALICE = 'sk-alice-0123456789abcdef';
const BOB = 'sk-bob-0123456789abcdefgh';
const CAROL = 'sk-carol-0123456789abcdefg';
const DAVE = 'sk-dave-0123456789abcdefgh';
const FAY = 'sk-fay-0123456789abcdefghi';

/** gpt-4o in the built-in catalog: USD per 1M tokens. */
const GPT4O = { input: 2.5, output: 10 };
const helloCost = (11 * GPT4O.input + 5 * GPT4O.output) / 1_000_000;

describe('virtualKeys on the embedded store', () => {
  let mock: Mock;
  let gw: RunningGateway;
  let base: string;
  let dir: string;

  before(async () => {
    mock = await startMock();
    dir = testTempDir('switchyard-vk-');
    const virtualKeys = {
      store: { sqlite: { path: join(dir, 'keys.db') } },
      budgets: [{ requests: 10_000, period: 'month' }],
      teams: [
        { name: 'research', budgets: [{ tokens: 100, period: 'day' }] },
        { name: 'product', budgets: [{ usd: 1, period: 'month' }] },
      ],
      keys: [
        { id: 'alice', key: ALICE, owner: 'alice@example.com', team: 'research', metadata: { tier: 'gold' } },
        { id: 'bob', key: BOB, owner: 'bob@example.com', team: 'product', models: ['gpt-4o*'], routes: ['openai', 'an'] },
        { id: 'carol', key: CAROL, owner: 'carol@example.com', budgets: [{ tokens: 40, period: 'day' }] },
        { id: 'dave', key: DAVE, owner: 'dave@example.com', models: ['gpt-4o'] },
        { id: 'fay', key: FAY, owner: 'fay@example.com' },
      ],
    };
    const port = await freePort();
    const ai = (name: string) => ({ name, provider: { openAI: {} }, hostOverride: mock.hostPort });
    gw = await startGateway(
      {
        config: { logging: { format: 'json', level: 'info', fields: { add: { owner: 'key.owner', tier: 'key.metadata.tier' } } }, drainTimeout: '200ms' },
        binds: [
          {
            port,
            listeners: [
              {
                routes: [
                  aiRoute('/openai', ai('openai'), { virtualKeys }),
                  aiRoute('/other', ai('other'), { virtualKeys }),
                  aiRoute('/pt', ai('pt'), { virtualKeys, testAi: { routes: { '*': 'passthrough' } } }),
                  aiRoute('/an', { name: 'an', provider: { anthropic: {} }, hostOverride: mock.hostPort }, { virtualKeys, testAi: { routes: { '/v1/messages': 'messages' } } }),
                ],
              },
            ],
          },
        ],
      },
      { preset: aiPreset },
    );
    base = `http://127.0.0.1:${port}`;
  });
  after(async () => {
    await gw?.stop();
    await mock?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const openai = (key: string, prefix = '/openai') => new OpenAI({ baseURL: `${base}${prefix}/v1`, apiKey: key, maxRetries: 0 });
  const hello = (key: string, extra: Record<string, unknown> = {}, prefix = '/openai') =>
    openai(key, prefix).chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }], ...extra } as never) as Promise<OpenAI.ChatCompletion>;
  const admin = async (method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> => {
    const res = await fetch(`${gw.adminUrl}${path}`, { method, headers: body === undefined ? {} : { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const usage = async (id: string): Promise<Record<string, unknown>[]> => (await admin('GET', `/keys/${id}/usage`)).body.usage as Record<string, unknown>[];
  /** Settlement runs in the log phase, just after the answer: wait until the counter shows the expected value. */
  const settled = async (id: string, scope: string, want: (used: number) => boolean): Promise<number> => {
    const until = Date.now() + 5000;
    for (;;) {
      const row = (await usage(id)).find((r) => r.scope === scope);
      const used = Number(row?.used);
      if (want(used) || Date.now() > until) return used;
      await sleep(20);
    }
  };

  it('authenticates declared keys like apiKey: the key never reaches the provider, CEL sees key.*, a missing or wrong key is 401 in the OpenAI shape', async () => {
    const answer = await hello(ALICE);
    assert.equal(answer.choices[0]!.message.content, 'Hello from the mock!');
    const wire = await mock.last();
    assert.ok(!JSON.stringify(wire.headers).includes(ALICE), 'the virtual key is removed before the upstream');
    const log = (await accessRecords(gw, '/openai/v1/chat/completions', 1)).at(-1)!;
    assert.equal(log.owner, 'alice@example.com', 'CEL key.owner');
    assert.equal(log.tier, 'gold', 'CEL key.metadata.tier');
    assert.equal(log['key.id'], 'alice');
    assert.equal(log['key.team'], 'research');

    const wrong = await rejection(hello('sk-not-a-key-at-all-000'), OpenAI.AuthenticationError);
    assert.equal(wrong.status, 401);
    assert.match(String((wrong.error as { message?: string }).message), /invalid credentials/);
    const none = await fetch(`${base}/openai/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"gpt-4o","messages":[]}' });
    assert.equal(none.status, 401);
    assert.equal(((await none.json()) as { error: { type: string } }).error.type, 'authentication_error');
  });

  it('N concurrent requests cannot overshoot a shared team budget by more than one request\'s estimate', async () => {
    await settled('alice', 'team:research', (u) => u === 16);
    const before = 16; // the first test's answer
    const limit = 100;
    const estimate = 2 + 20; // prompt estimate + max_tokens
    const results = await Promise.allSettled(Array.from({ length: 20 }, () => hello(ALICE, { max_tokens: 20 })));
    const ok = results.filter((r) => r.status === 'fulfilled').length;
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    assert.ok(refused.length > 0, 'the budget ran out');
    for (const r of refused) {
      assert.ok(r.reason instanceof OpenAI.RateLimitError, String(r.reason));
      assert.match(r.reason.message, /budget exceeded: team `research` has used its 100 tokens per day/);
      assert.equal(r.reason.headers?.get('x-should-retry'), 'false', 'the SDKs do not retry a daily budget');
    }
    // Admitted while something was left; an answer settled early (16 < 22 reserved) may make room for one more.
    assert.ok(ok >= Math.ceil((limit - before) / estimate), `${ok} admitted`);
    const used = await settled('alice', 'team:research', (u) => u === before + 16 * ok);
    assert.equal(used, before + 16 * ok, 'settled to the real usage');
    assert.ok(used <= limit + estimate, `spent ${used} of ${limit}: overshoot bounded by one estimate`);
    const after = await rejection(hello(ALICE), OpenAI.RateLimitError);
    assert.equal(after.status, 429);
  });

  it('charges exactly the catalog cost of the mock\'s usage to a money budget, and refuses models and routes the key may not use', async () => {
    const all = async () => Number((await usage('bob')).find((r) => r.scope === 'all')!.used);
    const before = await all();
    await hello(BOB);
    await hello(BOB);
    assert.equal(await all(), before + 2, 'the budget shared by every key counts too');
    const used = await settled('bob', 'team:product', (u) => Math.abs(u - 2 * helloCost) < 1e-12);
    assert.ok(Math.abs(used - 2 * helloCost) < 1e-12, `charged ${used}, catalog says ${2 * helloCost}`);
    const metrics = await (await fetch(`${gw.statsUrl}/metrics`)).text();
    const series = (name: string): number => Number(metrics.split('\n').find((l) => l.startsWith(`${name} `))?.slice(name.length + 1));
    assert.ok(Math.abs(series('switchyard_virtual_key_spend_usd_total{team="product"}') - 2 * helloCost) < 1e-12, 'spend by team on /metrics');
    assert.ok(Math.abs(series('switchyard_virtual_key_cost_usd_total{key="bob"}') - 2 * helloCost) < 1e-12, 'cost by key on /metrics');
    assert.ok(series('switchyard_virtual_key_denials_total{reason="budget"}') >= 1, 'the budget refusals of the test before');
    const row = (await usage('bob')).find((r) => r.scope === 'team:product')!;
    assert.equal(row.usd, 1);
    assert.equal(row.period, 'month');

    const model = await rejection(hello(BOB, { model: 'gpt-3.5-turbo' }), OpenAI.PermissionDeniedError);
    assert.match(model.message, /may not use model `gpt-3.5-turbo`/);
    const route = await rejection(hello(BOB, {}, '/other'), OpenAI.PermissionDeniedError);
    assert.match(route.message, /may not use route `other`/);
    const after = await (await fetch(`${gw.statsUrl}/metrics`)).text();
    assert.match(after, /^switchyard_virtual_key_denials_total\{reason="model"\} 1$/m);
    assert.match(after, /^switchyard_virtual_key_denials_total\{reason="route"\} 1$/m);
  });

  it('a key limited to some models cannot use a passthrough route, whose model the gateway does not read', async () => {
    const denied = await rejection(hello(DAVE, {}, '/pt'), OpenAI.PermissionDeniedError);
    assert.match(denied.message, /limited to some models and this request names none the gateway can read/);
    assert.equal((await hello(DAVE)).choices.length, 1, 'the same key on a route that reads the model');
    assert.equal((await hello(FAY, {}, '/pt')).choices.length, 1, 'a key without a model list passes through');
  });

  it('settles streams after they end (OpenAI and Anthropic clients), and refuses in the Anthropic shape', async () => {
    const stream = await openai(CAROL).chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }], stream: true, max_tokens: 10 });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    assert.equal(text, 'Hello from the mock!');
    assert.equal(await settled('carol', 'key:carol', (u) => u === 16), 16, 'the stream\'s usage, not its estimate (12)');

    const anthropic = new Anthropic({ baseURL: `${base}/an`, apiKey: CAROL, maxRetries: 0 });
    const messages = anthropic.messages.stream({ model: 'claude-haiku-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hello' }] });
    const final = await messages.finalMessage();
    assert.equal(final.usage.output_tokens, 5);
    assert.equal(await settled('carol', 'key:carol', (u) => u === 32), 32);
    await hello(CAROL, { max_tokens: 1 }); // 32 < 40: admitted, settles at 48
    await settled('carol', 'key:carol', (u) => u === 48);
    const refused = await rejection(anthropic.messages.create({ model: 'claude-haiku-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hello' }] }), Anthropic.RateLimitError);
    assert.equal(refused.status, 429);
    assert.equal((refused.error as { type: string }).type, 'error', 'the Anthropic error envelope');
    assert.equal((refused.error as { error: { type: string } }).error.type, 'rate_limit_error');
  });

  it('manages keys on the admin address: create, use, rotate and revoke take effect at once, without a restart', async () => {
    const created = await admin('POST', '/keys', { owner: 'dave@example.com', team: 'research', budgets: [{ requests: 100, period: 'minute' }] });
    assert.equal(created.status, 201);
    const secret = created.body.secret as string;
    const id = (created.body.key as { id: string }).id;
    assert.match(secret, /^sk-swy-/);
    assert.ok(!JSON.stringify((await admin('GET', '/keys')).body).includes(secret), 'a list never shows a secret');
    assert.equal(((await admin('GET', '/keys?team=research')).body.keys as unknown[]).length, 2);

    const fresh = (await admin('POST', '/keys', { owner: 'erin@example.com' })).body;
    const erin = fresh.secret as string;
    assert.equal((await hello(erin)).choices.length, 1, 'a key made through the API works at once');

    const rotated = await admin('POST', `/keys/${(fresh.key as { id: string }).id}/rotate`);
    assert.equal(rotated.status, 200);
    const erin2 = rotated.body.secret as string;
    assert.notEqual(erin2, erin);
    await rejection(hello(erin), OpenAI.AuthenticationError);
    assert.equal((await hello(erin2)).choices.length, 1, 'the new secret works');

    const revoked = await admin('POST', `/keys/${(fresh.key as { id: string }).id}/revoke`);
    assert.equal(revoked.status, 200);
    const gone = await rejection(hello(erin2), OpenAI.AuthenticationError);
    assert.equal(gone.status, 401);

    assert.equal((await admin('POST', '/keys/alice/revoke')).status, 409, 'a declared key is changed in the config, not the API');
    assert.equal((await admin('POST', '/keys', { budgets: [{ usd: -1, period: 'day' }] })).status, 400);
    // 1e309 parses as Infinity: the key was made with a budget shown as `usd=null/day` that refused every request.
    const huge = await fetch(`${gw.adminUrl}/keys`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"budgets":[{"usd":1e309,"period":"day"}]}' });
    assert.equal(huge.status, 400, await huge.text());
    // A made key is listed a thousand to a page: a field of nearly 1 MiB each made a page of about a gigabyte.
    const long = await admin('POST', '/keys', { owner: 'o'.repeat(100_000) });
    assert.equal(long.status, 400);
    assert.match(String((long.body.error as { message: string }).message), /`owner` is longer than 256 characters/);
    assert.equal((await admin('POST', '/keys', { models: Array.from({ length: 101 }, (_, i) => `m${i}`) })).status, 400);
    assert.equal((await admin('POST', '/keys', { metadata: { blob: 'x'.repeat(5000) } })).status, 400);
    assert.equal((await admin('POST', '/keys', { budgets: Array.from({ length: 17 }, () => ({ requests: 1, period: 'day' })) })).status, 400);
    // A mistyped team would escape the team's budgets: refused, with the name it probably meant.
    const typo = await admin('POST', '/keys', { owner: 'x@example.com', team: 'reserch' });
    assert.equal(typo.status, 400);
    assert.match(JSON.stringify(typo.body), /team `reserch` is not declared under `virtualKeys.teams` \(did you mean `research`\? declared: `research`, `product`\)/);
    assert.equal((await admin('GET', `/keys/${id}`)).status, 200);
    assert.equal((await admin('GET', '/keys/nope')).status, 404);
    const form = await fetch(`${gw.adminUrl}/keys`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'owner=mallory' });
    assert.equal(form.status, 415, 'a cross-site form cannot create keys');
    const foreign = await new Promise<number>((resolve, reject) =>
      httpRequest(`${gw.adminUrl}/keys`, { headers: { host: 'evil.example' } }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      })
        .on('error', reject)
        .end(),
    );
    assert.equal(foreign, 403, 'Host-checked like the other admin endpoints (DNS rebinding)');
  });

  it('the usage API and `switchyard keys usage` show a key\'s lifetime tokens and cost, with or without a total budget (ADR 0072)', async () => {
    const make = async (body: Record<string, unknown>): Promise<{ id: string; secret: string }> => {
      const made = await admin('POST', '/keys', body);
      assert.equal(made.status, 201);
      return { id: (made.body.key as { id: string }).id, secret: made.body.secret as string };
    };
    const lifetime = async (id: string, tokens: number): Promise<{ tokens: number; usd: number }> => {
      const until = Date.now() + 5000;
      for (;;) {
        const life = (await admin('GET', `/keys/${id}/usage`)).body.lifetime as { tokens: number; usd: number };
        if (life.tokens === tokens || Date.now() > until) return life;
        await sleep(20);
      }
    };
    const gil = await make({ owner: 'gil@example.com' });
    assert.deepEqual(await lifetime(gil.id, 0), { tokens: 0, usd: 0 }, 'a new key has used nothing');
    await hello(gil.secret);
    await hello(gil.secret);
    const life = await lifetime(gil.id, 32);
    assert.equal(life.tokens, 32, 'two answers of 16 tokens');
    assert.ok(Math.abs(life.usd - 2 * helloCost) < 1e-12, `cost ${life.usd} is the catalog's for the mock's usage`);

    // A `total` token budget is the lifetime counter itself: both read the settled usage.
    const hal = await make({ owner: 'hal@example.com', budgets: [{ tokens: 1000, period: 'total' }] });
    await hello(hal.secret, { max_tokens: 50 });
    assert.equal((await lifetime(hal.id, 16)).tokens, 16);
    assert.equal(Number((await usage(hal.id)).find((r) => r.scope === `key:${hal.id}`)!.used), 16);

    const out: string[] = [];
    const err: string[] = [];
    assert.equal(await keysMain(['usage', gil.id, '--admin', gw.adminUrl], (s) => out.push(s), (s) => err.push(s)), 0, err.join(''));
    assert.match(out.join(''), new RegExp(`lifetime: 32 tokens, ${String(life.usd).replace('.', '\\.')} USD`));
    out.length = 0;
    assert.equal(await keysMain(['usage', gil.id, '--admin', gw.adminUrl, '--json'], (s) => out.push(s), (s) => err.push(s)), 0);
    assert.deepEqual((JSON.parse(out.join('')) as { lifetime: unknown }).lifetime, life);
  });
});

describe('virtualKeys config errors', () => {
  const route = (name: string, vk: string[]): string[] => [
    `          - name: ${name}`,
    '            backends: [{ ai: { name: ' + name + ', provider: { openAI: {} } } }]',
    '            policies:',
    '              virtualKeys:',
    ...vk.map((l) => `                ${l}`),
  ];
  const config = (...routes: string[][]): string => yaml('binds:', '  - port: 8080', '    listeners:', '      - routes:', ...routes.flat());
  const options = { preset: aiPreset };

  it('a budget with two units, a duplicate key and two different stores are errors at their place; a key secret is never shown', async () => {
    const secret = 'sk-declared-0123456789';
    const err = await compileError(
      config(
        route('a', ['store: { sqlite: { path: ":memory:" } }', 'keys:', `  - { id: one, key: ${secret} }`, `  - { id: two, key: ${secret} }`]),
        route('b', ['store: { sqlite: { path: "/nonexistent-dir-for-test/x.db" } }']),
      ),
      options,
    );
    const lines = headlines(err);
    assert.ok(lines.some((l) => /^test\.yaml:\d+:\d+: this key is the same as the one of `one`; each key must be unique \(at binds\[0\]\.listeners\[0\]\.routes\[0\]\.policies\.virtualKeys\.keys\[1\]\.key\)/.test(l)), lines.join('\n'));
    assert.ok(lines.some((l) => /every `virtualKeys` policy of a config must have the same `store`.*YAML anchor.*\(at binds\[0\]\.listeners\[0\]\.routes\[1\]\.policies\.virtualKeys\)/.test(l)), lines.join('\n'));
    assert.ok(!err.message.includes(secret), 'the secret is not in the message');
    const odd = headlines(await compileError(config(route('a', ['store: { sqlite: { path: ":memory:" } }', 'keys:', '  - { id: one, key: "sk-clé-0123456789" }'])), options));
    assert.ok(odd.some((l) => /a key must be printable ASCII without blanks at either end.*virtualKeys\.keys\[0\]\.key/.test(l)), odd.join('\n'));

    const units = await compileError(config(route('a', ['store: { sqlite: { path: ":memory:" } }', 'budgets: [{ usd: 5, tokens: 10, period: day }]'])), options);
    assert.match(headlines(units)[0]!, /^test\.yaml:\d+:\d+: .*\(at binds\[0\]\.listeners\[0\]\.routes\[0\]\.policies\.virtualKeys\.budgets\[0\]\)/);
  });

  it("a declared key's route that is not in the config, or takes no keys, is a load error with the closest name (ADR 0196; was 403 on every route)", async () => {
    const vk = ['store: { sqlite: { path: ":memory:" } }', 'keys:', '  - { id: bot, key: sk-bot-0123456789, routes: [chta] }', '  - { id: ops, key: sk-ops-0123456789, routes: [chat, open] }'];
    const open = ['          - name: open', '            backends: [{ ai: { name: open, provider: { openAI: {} } } }]'];
    // The route a key names comes after the route that declares it: only a check after every route sees it.
    const err = await compileError(config(route('first', vk), open, route('chat', vk)), options);
    const lines = headlines(err);
    const at = (i: number, j: number): string => `\\(at binds\\[0\\]\\.listeners\\[0\\]\\.routes\\[0\\]\\.policies\\.virtualKeys\\.keys\\[${i}\\]\\.routes\\[${j}\\]\\)`;
    assert.ok(lines.some((l) => new RegExp(`route \`chta\` is not a route of this config \\(did you mean \`chat\`\\? routes that take keys: \`chat\`, \`first\`\\).* ${at(0, 0)}`).test(l)), lines.join('\n'));
    assert.ok(lines.some((l) => new RegExp(`route \`open\` has no \`virtualKeys\` policy.* ${at(1, 1)}`).test(l)), lines.join('\n'));
    assert.equal(lines.length, 2, lines.join('\n'));
    // Named as requests see them: an unnamed route is `route<N>`; a key without `routes` is checked for nothing.
    const unnamed = ['          - backends: [{ ai: { name: x, provider: { openAI: {} } } }]', '            policies:', '              virtualKeys:', ...['store: { sqlite: { path: ":memory:" } }', 'keys: [{ id: a, key: sk-a-0123456789abcdef, routes: [route0] }, { id: b, key: sk-b-0123456789abcdef }]'].map((l) => `                ${l}`)];
    assert.deepEqual(await compileWarnings(config(unnamed), options), []);
  });

  it('a declared key of a team the config does not declare is a warning with the closest name', async () => {
    const vk = ['store: { sqlite: { path: ":memory:" } }', 'teams: [{ name: research }]', 'keys: [{ id: bot, key: sk-bot-0123456789, team: reserch }]'];
    const warnings = await compileWarnings(config(route('a', vk)), options);
    assert.equal(warnings.length, 1, warnings.join('\n'));
    assert.match(warnings[0]!, /team `reserch` is not declared under `teams` \(did you mean `research`\?\): the key has no team budget/);
  });
});

describe('virtualKeys declared in the config (GitOps)', () => {
  it('a reload that replaces a declared key takes effect at once; counters and made keys survive it', async () => {
    const mock = await startMock();
    const dir = testTempDir('switchyard-vk-reload-');
    const port = await freePort();
    const config = (key: string) =>
      stringify({
        config: { adminAddr: '127.0.0.1:0', statsAddr: 'off', readinessAddr: 'off', drainTimeout: '200ms' },
        binds: [
          {
            port,
            listeners: [
              {
                routes: [
                  aiRoute('/', { name: 'openai', provider: { openAI: {} }, hostOverride: mock.hostPort }, {
                    virtualKeys: { store: { sqlite: { path: join(dir, 'keys.db') } }, keys: [{ id: 'deploy-bot', key, budgets: [{ tokens: 10_000, period: 'total' }] }] },
                  }),
                ],
              },
            ],
          },
        ],
      });
    const gw = await startGateway(config('sk-deploy-old-0123456789'), { preset: aiPreset });
    try {
      const ask = (key: string) => new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: key, maxRetries: 0 }).chat.completions.create({ model: 'gpt-4o', max_tokens: 20, messages: [{ role: 'user', content: 'hello' }] });
      await ask('sk-deploy-old-0123456789');
      const made = (await (await fetch(`${gw.adminUrl}/keys`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"owner":"ops"}' })).json()) as { secret: string };
      writeFileSync(gw.file, config('sk-deploy-new-0123456789'));
      assert.equal(await gw.gateway.reload(), true);
      await rejection(ask('sk-deploy-old-0123456789'), OpenAI.AuthenticationError);
      assert.equal((await ask('sk-deploy-new-0123456789')).choices.length, 1);
      assert.equal((await ask(made.secret)).choices.length, 1, 'a key made through the API is still there');
      const shown = (await (await fetch(`${gw.adminUrl}/keys/deploy-bot`)).json()) as { usage: { used: number }[] };
      assert.ok(shown.usage[0]!.used >= 16, 'the total budget kept its count across the reload');
    } finally {
      await gw.stop();
      await mock.stop();
    }
    // The gateway's stop waits for the key store to close: the WAL folded into the file, nothing left writing there.
    assert.deepEqual(readdirSync(dir), ['keys.db']);
  });
});

describe('virtualKeys: counting tokens is free', () => {
  let upstream: TestUpstream;
  let gw: RunningGateway;
  let base: string;
  let dir: string;
  const KEY = 'sk-counter-0123456789abcdef';

  before(async () => {
    // Anthropic's count_tokens: no usage in the answer, and the provider charges nothing for it.
    upstream = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ input_tokens: 1012 }));
    });
    dir = testTempDir('switchyard-vk-count-');
    const virtualKeys = { store: { sqlite: { path: join(dir, 'keys.db') } }, keys: [{ id: 'counter', key: KEY, budgets: [{ tokens: 1_000_000, period: 'day' }, { usd: 10, period: 'day' }] }] };
    const port = await freePort();
    const an = { name: 'an', provider: { anthropic: { model: 'claude-sonnet-4-5' } }, hostOverride: `127.0.0.1:${upstream.port}` };
    gw = await startGateway(
      {
        config: { logging: { format: 'json', level: 'info' }, drainTimeout: '200ms' },
        binds: [{ port, listeners: [{ routes: [aiRoute('/an', an, { virtualKeys, testAi: { routes: { '/v1/messages/count_tokens': 'anthropicTokenCount', '/v1/messages': 'messages' } } })] }] }],
      },
      { preset: aiPreset },
    );
    base = `http://127.0.0.1:${port}`;
  });
  after(async () => {
    await gw?.stop();
    await upstream?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("an Anthropic count_tokens call is not charged its prompt estimate and output estimate (it reports no usage, and costs nothing)", async () => {
    const anthropic = new Anthropic({ baseURL: `${base}/an`, apiKey: KEY, maxRetries: 0 });
    // 4,000 characters: a 1,000-token prompt estimate.
    const res = await anthropic.messages.countTokens({ model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'word '.repeat(800) }] });
    assert.equal(res.input_tokens, 1012);
    await accessRecords(gw, '/an/v1/messages/count_tokens');
    await sleep(200);
    const rows = ((await (await fetch(`${gw.adminUrl}/keys/counter/usage`)).json()) as { usage: { used: unknown }[] }).usage;
    assert.deepEqual(rows.map((r) => Number(r.used)), [0, 0]);
  });
});
