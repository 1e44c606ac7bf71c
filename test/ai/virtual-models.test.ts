// Virtual models (issue 13 item 2, ADR 0045): a model name clients send maps to some of the route's `ai` backends,
// ordered or weighted, with CEL conditions; the request goes to the first target and fails over along the targets on
// a refused connection, 429 and 5xx (cooling the failing one down); each target gets its own model; translation works
// across a failover; `/v1/models` lists the names; virtual keys allow a virtual model by its name; the cost is the
// served model's. Real `openai` and `@anthropic-ai/sdk` clients, aimock as the providers.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as jose from 'jose';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { compileError, headlines, yaml } from '../config/helpers.ts';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { accessRecords, aiPreset, rejection, startMock, startErrorProvider } from './harness.ts';
import type { JournalEntry, Mock } from './harness.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

const KEY_SMART = 'sk-smart-0123456789abcdef';
const KEY_GPT = 'sk-gpt-0123456789abcdefgh';

describe('virtual models', () => {
  let mock: Mock;
  let gw: RunningGateway;
  let base: string;
  let failing: TestUpstream;
  let limited: TestUpstream;
  let failingRetried: TestUpstream;
  let dir: string;
  let signer: jose.CryptoKey;


  before(async () => {
    mock = await startMock();
    failing = await startErrorProvider(500);
    limited = await startErrorProvider(429, { 'retry-after': '30' });
    failingRetried = await startErrorProvider(500);
    dir = testTempDir('switchyard-vm-');
    const { publicKey, privateKey } = await jose.generateKeyPair('ES256', { extractable: true });
    signer = privateKey;
    writeFileSync(join(dir, 'jwks.json'), JSON.stringify({ keys: [{ ...(await jose.exportJWK(publicKey)), kid: 'k1', use: 'sig' }] }));
    const jwtAuth = { issuer: 'https://llm.issuer.test', audiences: ['llm'], jwks: { file: relative(process.cwd(), join(dir, 'jwks.json')) }, mode: 'strict' };
    const port = await freePort();
    const dead = await freePort();
    base = `http://127.0.0.1:${port}`;
    const routes = { '/v1/models': 'models', '/v1/messages': 'messages', '*': 'completions' };
    const ai = (name: string, hostPort: string, provider: Record<string, unknown> = { openAI: {} }) => ({ ai: { name, provider, hostOverride: hostPort } });
    const route = (name: string, virtualModels: unknown, backends: unknown[], policies: Record<string, unknown> = {}) => ({
      name,
      matches: [{ path: { pathPrefix: `/${name}` } }],
      policies: { ai: { routes, virtualModels }, ...policies },
      backends,
    });
    gw = await startGateway(
      {
        config: { logging: { format: 'json', level: 'info' }, drainTimeout: '200ms' },
        backends: [{ name: 'shared-openai', ai: { name: 'shared', provider: { openAI: { model: 'named-default' } }, hostOverride: mock.hostPort } }],
        binds: [
          {
            port,
            listeners: [
              {
                routes: [
                  route(
                    'ord',
                    {
                      smart: { targets: [{ backend: 'broken' }, { backend: 'claude', model: 'claude-sonnet-4-5' }] },
                      fast: { strategy: 'ordered', targets: [{ backend: 'oa', model: 'gpt-4o-mini' }] },
                    },
                    [
                      ai('broken', `127.0.0.1:${failing.port}`, { openAI: { model: 'gpt-4o' } }),
                      ai('claude', mock.hostPort, { anthropic: {} }),
                      ai('oa', mock.hostPort),
                    ],
                  ),
                  route('chain', { chained: { targets: [{ backend: 'dead', model: 'm-dead' }, { backend: 'lim', model: 'm-limited' }, { backend: 'ok', model: 'm-ok' }] } }, [
                    ai('dead', `127.0.0.1:${dead}`),
                    ai('lim', `127.0.0.1:${limited.port}`),
                    ai('ok', mock.hostPort),
                  ]),
                  route(
                    'weighted',
                    {
                      pinned: { strategy: 'weighted', targets: [{ backend: 'wa', model: 'model-a', weight: 1 }, { backend: 'wb', model: 'model-b', weight: 0 }] },
                      split: { strategy: 'weighted', targets: [{ backend: 'wa', model: 'split-a' }, { backend: 'wb', model: 'split-b' }] },
                    },
                    [ai('wa', mock.hostPort), ai('wb', mock.hostPort)],
                  ),
                  route(
                    'cond',
                    {
                      tiered: {
                        targets: [
                          { backend: 'premium', model: 'gpt-4.1', when: 'request.headers[?"x-tier"].orValue("") == "gold"' },
                          { backend: 'basic', model: 'gpt-4o-mini' },
                        ],
                      },
                      sized: {
                        targets: [
                          { backend: 'premium', model: 'long-context', when: 'llm.promptTokens > 1000' },
                          { backend: 'basic', model: 'short-context', when: 'llm.promptTokens <= 1000' },
                        ],
                      },
                      goldonly: { targets: [{ backend: 'premium', model: 'gpt-4.1', when: 'request.headers["x-tier"] == "gold"' }] },
                      // Arithmetic on a body number: `llmRequest` has whole numbers as `int` here too (docs/cel.md).
                      budget: { targets: [{ backend: 'premium', model: 'big-budget', when: 'llmRequest.max_tokens * 2 > 1000' }, { backend: 'basic', model: 'small-budget' }] },
                    },
                    [ai('premium', mock.hostPort), ai('basic', mock.hostPort)],
                  ),
                  route(
                    'jwt',
                    { tiered: { targets: [{ backend: 'jgold', model: 'gpt-4.1', when: 'jwt.tier == "gold"' }, { backend: 'jbasic', model: 'gpt-4o-mini' }] } },
                    [ai('jgold', mock.hostPort), ai('jbasic', mock.hostPort)],
                    { jwtAuth },
                  ),
                  // A `retry` policy on the route replaces default failover (ADR 0039): the failing target still cools down.
                  route(
                    'retried',
                    { rsmart: { targets: [{ backend: 'rbroken', model: 'gpt-4o' }, { backend: 'rok', model: 'gpt-4o-mini' }] } },
                    [ai('rbroken', `127.0.0.1:${failingRetried.port}`), ai('rok', mock.hostPort)],
                    { retry: { attempts: 2, codes: [500, 502, 503, 429] } },
                  ),
                  // `modelAliases` naming a virtual model: the alias is served by it (exact and wildcard).
                  {
                    name: 'aliased',
                    matches: [{ path: { pathPrefix: '/aliased' } }],
                    policies: {
                      ai: {
                        routes,
                        modelAliases: { 'team-default': 'vsmart', 'legacy-*': 'vsmart' },
                        virtualModels: { vsmart: { targets: [{ backend: 'abroken', model: 'gpt-4o' }, { backend: 'aok', model: 'claude-sonnet-4-5' }] } },
                      },
                    },
                    backends: [ai('abroken', `127.0.0.1:${dead}`), ai('aok', mock.hostPort, { anthropic: {} })],
                  },
                  route('named', { nm: { targets: [{ backend: 'dead-named', model: 'x' }, { backend: 'shared-openai' }] } }, [ai('dead-named', `127.0.0.1:${dead}`), { backend: 'shared-openai' }]),
                  route('vstream', { streamy: { targets: [{ backend: 'sbroken', model: 'gpt-4o' }, { backend: 'sclaude', model: 'claude-haiku-4-5' }] } }, [
                    ai('sbroken', `127.0.0.1:${failing.port}`),
                    ai('sclaude', mock.hostPort, { anthropic: {} }),
                  ]),
                  route('keyed', { smart: { targets: [{ backend: 'kbroken', model: 'gpt-4o' }, { backend: 'kok', model: 'gpt-4o' }] } }, [ai('kbroken', `127.0.0.1:${failing.port}`), ai('kok', mock.hostPort)], {
                    virtualKeys: {
                      store: { sqlite: { path: join(dir, 'keys.db') } },
                      keys: [
                        { id: 'smart-only', key: KEY_SMART, models: ['smart'] },
                        { id: 'gpt-only', key: KEY_GPT, models: ['gpt-4o*'] },
                      ],
                    },
                  }),
                ],
              },
            ],
          },
        ],
      },
      { preset: aiPreset },
    );
  });
  after(async () => {
    await gw?.stop();
    await failing?.close();
    await limited?.close();
    await failingRetried?.close();
    await mock?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const openai = (prefix: string, apiKey = 'client-key') => new OpenAI({ baseURL: `${base}/${prefix}/v1`, apiKey, maxRetries: 0 });
  const ask = (prefix: string, model: string, content = 'hello', headers: Record<string, string> = {}, apiKey?: string) =>
    openai(prefix, apiKey).chat.completions.create({ model, messages: [{ role: 'user', content }] }, { headers });
  /** The mock's journal entries since `from` (an index into it). */
  const since = async (from: number): Promise<JournalEntry[]> => (await mock.journal()).slice(from);

  it('ordered: a 500 from the first target moves the request to the second, an Anthropic one, with its own model; the client sees one answer', async () => {
    const from = (await mock.journal()).length;
    const res = await ask('ord', 'smart');
    assert.equal(res.choices[0]!.message.content, 'Hello from the mock!');
    assert.equal(res.object, 'chat.completion', 'translated back to the OpenAI shape');
    const first = failing.received.at(-1)!;
    assert.equal(first.url, '/v1/chat/completions');
    assert.equal(JSON.parse(first.body.toString()).model, 'gpt-4o', 'the first target got its provider\'s model');
    const got = await since(from);
    assert.equal(got.length, 1, 'one call reached the second target');
    assert.equal(got[0]!.path, '/v1/messages');
    assert.equal(got[0]!.body?.model, 'claude-sonnet-4-5');
    // The failing target cools down: the next requests go straight to the second one.
    const tried = failing.received.length;
    for (let i = 0; i < 3; i++) assert.equal((await ask('ord', 'smart')).choices[0]!.message.content, 'Hello from the mock!');
    assert.equal(failing.received.length, tried, 'skipped while cooling down');
  });

  it('on a route with a `retry` policy, a virtual model fails over and the failing target cools down', async () => {
    const from = (await mock.journal()).length;
    assert.equal((await ask('retried', 'rsmart')).choices[0]!.message.content, 'Hello from the mock!');
    assert.equal(failingRetried.received.length, 1, 'the first target was tried once');
    const got = await since(from);
    assert.equal(got.length, 1);
    assert.equal(got[0]!.body?.model, 'gpt-4o-mini');
    for (let i = 0; i < 3; i++) assert.equal((await ask('retried', 'rsmart')).choices[0]!.message.content, 'Hello from the mock!');
    assert.equal(failingRetried.received.length, 1, 'skipped while cooling down');
  });

  it('`modelAliases` naming a virtual model: the alias is served by the virtual model\'s targets, with failover', async () => {
    for (const model of ['team-default', 'legacy-gpt-3']) {
      const from = (await mock.journal()).length;
      const res = await ask('aliased', model);
      assert.equal(res.choices[0]!.message.content, 'Hello from the mock!');
      const got = await since(from);
      assert.equal(got.length, 1, model);
      assert.equal(got[0]!.path, '/v1/messages', 'served by the second target after the first refused the connection');
      assert.equal(got[0]!.body?.model, 'claude-sonnet-4-5');
    }
  });

  it('a virtual model with one target: the target\'s model replaces the virtual name', async () => {
    const from = (await mock.journal()).length;
    await ask('ord', 'fast');
    const got = await since(from);
    assert.equal(got.length, 1);
    assert.equal(got[0]!.path, '/v1/chat/completions');
    assert.equal(got[0]!.body?.model, 'gpt-4o-mini', 'the virtual name is replaced by the target\'s model');
  });

  it('an Anthropic Messages client is served through a virtual model by an OpenAI target', async () => {
    const from = (await mock.journal()).length;
    const client = new Anthropic({ baseURL: `${base}/ord`, apiKey: 'client-key', maxRetries: 0 });
    const msg = await client.messages.create({ model: 'fast', max_tokens: 50, messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(msg.type, 'message');
    assert.equal((msg.content[0] as { text: string }).text, 'Hello from the mock!');
    const got = await since(from);
    assert.equal(got[0]!.path, '/v1/chat/completions');
    assert.equal(got[0]!.body?.model, 'gpt-4o-mini');
  });

  it('refused connection, then 429 with Retry-After, then an answer: each target once; the 429 one is skipped while Retry-After runs', async () => {
    const from = (await mock.journal()).length;
    assert.equal((await ask('chain', 'chained')).choices[0]!.message.content, 'Hello from the mock!');
    assert.equal(limited.received.length, 1);
    assert.equal(JSON.parse(limited.received[0]!.body.toString()).model, 'm-limited');
    const got = await since(from);
    assert.equal(got.length, 1);
    assert.equal(got[0]!.body?.model, 'm-ok');
    for (let i = 0; i < 3; i++) assert.equal((await ask('chain', 'chained')).choices[0]!.message.content, 'Hello from the mock!');
    assert.equal(limited.received.length, 1, 'cooling down for its Retry-After');
  });

  it('a stream fails over to an Anthropic target before its first byte; the OpenAI client reads one stream', async () => {
    const from = (await mock.journal()).length;
    const stream = await openai('vstream').chat.completions.create({ model: 'streamy', stream: true, messages: [{ role: 'user', content: 'hello' }] });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    assert.equal(text, 'Hello from the mock!');
    const got = await since(from);
    assert.equal(got.length, 1);
    assert.equal(got[0]!.path, '/v1/messages');
    assert.equal(got[0]!.body?.model, 'claude-haiku-4-5');
    assert.equal(got[0]!.body?.stream, true);
  });

  it('weighted: weight 0 is failover only; equal weights split the requests between the targets', async () => {
    let from = (await mock.journal()).length;
    for (let i = 0; i < 20; i++) await ask('weighted', 'pinned');
    const pinned = (await since(from)).map((e) => e.body?.model);
    assert.deepEqual(new Set(pinned), new Set(['model-a']), 'a weight-0 target never serves while the other answers');
    from = (await mock.journal()).length;
    const N = 80;
    await Promise.all(Array.from({ length: N }, () => ask('weighted', 'split')));
    const split = (await since(from)).map((e) => e.body?.model);
    const a = split.filter((m) => m === 'split-a').length;
    const b = split.filter((m) => m === 'split-b').length;
    assert.equal(a + b, N);
    // Binomial(80, 1/2): fewer than 15 on one side has a probability below 1e-8.
    assert.ok(a >= 15 && b >= 15, `split ${a}:${b}`);
  });

  it('CEL conditions by header and by prompt size choose the target; when none accepts, 400 in the client\'s shape', async () => {
    let from = (await mock.journal()).length;
    await ask('cond', 'tiered', 'hello', { 'x-tier': 'gold' });
    await ask('cond', 'tiered', 'hello', { 'x-tier': 'silver' });
    await ask('cond', 'tiered');
    assert.deepEqual((await since(from)).map((e) => e.body?.model), ['gpt-4.1', 'gpt-4o-mini', 'gpt-4o-mini']);

    from = (await mock.journal()).length;
    await ask('cond', 'sized', 'hello');
    await ask('cond', 'sized', `hello ${'lorem ipsum '.repeat(600)}`);
    assert.deepEqual((await since(from)).map((e) => e.body?.model), ['short-context', 'long-context']);

    from = (await mock.journal()).length;
    for (const max_tokens of [600, 400]) await openai('cond').chat.completions.create({ model: 'budget', max_tokens, messages: [{ role: 'user', content: 'hi' }] });
    assert.deepEqual((await since(from)).map((e) => e.body?.model), ['big-budget', 'small-budget'], 'int arithmetic on llmRequest in a condition');

    from = (await mock.journal()).length;
    const err = await rejection(ask('cond', 'goldonly'), OpenAI.BadRequestError);
    assert.match(err.message, /no target of virtual model `goldonly` accepts this request/);
    assert.equal((await since(from)).length, 0, 'no provider was called');
  });

  it('a CEL condition on a JWT claim chooses the target', async () => {
    const token = (tier: string) =>
      new jose.SignJWT({ tier }).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).setIssuer('https://llm.issuer.test').setAudience('llm').setSubject('u').setExpirationTime('5m').sign(signer);
    const from = (await mock.journal()).length;
    await ask('jwt', 'tiered', 'hello', {}, await token('gold'));
    await ask('jwt', 'tiered', 'hello', {}, await token('free'));
    assert.deepEqual((await since(from)).map((e) => e.body?.model), ['gpt-4.1', 'gpt-4o-mini']);
  });

  it('a named backend is a target by the name the route uses; without a target model its provider.model is sent', async () => {
    const from = (await mock.journal()).length;
    assert.equal((await ask('named', 'nm')).choices[0]!.message.content, 'Hello from the mock!');
    assert.deepEqual((await since(from)).map((e) => e.body?.model), ['named-default']);
  });

  it('/v1/models lists the virtual names (OpenAI shape, and Anthropic\'s for an Anthropic client)', async () => {
    const ids = new Map<string, string>();
    for await (const m of openai('ord').models.list()) ids.set(m.id, m.owned_by);
    assert.equal(ids.get('smart'), 'switchyard');
    assert.equal(ids.get('fast'), 'switchyard');
    assert.equal(ids.get('gpt-4o'), 'openai', 'configured models are still listed');
    const client = new Anthropic({ baseURL: `${base}/ord`, apiKey: 'client-key', maxRetries: 0 });
    const names: string[] = [];
    for await (const m of client.models.list()) {
      assert.equal(m.type, 'model');
      names.push(m.id);
    }
    assert.ok(names.includes('smart') && names.includes('fast'), names.join(','));
  });

  it('virtual keys allow a virtual model by its name, not by the models behind it; the cost is the served model\'s', async () => {
    const res = await ask('keyed', 'smart', 'hello', {}, KEY_SMART);
    assert.equal(res.choices[0]!.message.content, 'Hello from the mock!');
    const denied = await rejection(ask('keyed', 'smart', 'hello', {}, KEY_GPT), OpenAI.PermissionDeniedError);
    assert.match(denied.message, /may not use model `smart`/);
    const [log] = await accessRecords(gw, '/keyed/v1/chat/completions');
    // gpt-4o in the built-in catalog: 2.5 and 10 USD per 1M tokens; "hello" is 11 + 5 tokens.
    assert.equal(log!['llm.cost'], (11 * 2.5 + 5 * 10) / 1_000_000);
  });
});

describe('virtual models config errors', () => {
  const config = (vm: string[], extraBackends: string[] = []) =>
    yaml(
      'binds:',
      '  - port: 8080',
      '    listeners:',
      '      - routes:',
      '          - name: r',
      '            backends:',
      '              - ai: { name: openai, provider: { openAI: { model: gpt-4o } } }',
      '              - ai: { name: claude, provider: { anthropic: {} } }',
      ...extraBackends,
      '            policies:',
      '              ai:',
      '                virtualModels:',
      ...vm.map((l) => `                  ${l}`),
    );
  const options = { preset: aiPreset };

  it('an unknown backend (did you mean), a target without a model, a bad CEL condition and an unknown strategy, each at its place', async () => {
    const err = await compileError(config(['smart:', '  targets:', '    - backend: opneai', '    - backend: claude']), options);
    assert.match(headlines(err)[0]!, /^test\.yaml:\d+:\d+: unknown backend `opneai`; did you mean `openai`\? \(at binds\[0\]\.listeners\[0\]\.routes\[0\]\.policies\.ai\.virtualModels\.smart\.targets\[0\]\.backend\)/);

    const noModel = await compileError(config(['smart:', '  targets:', '    - backend: claude']), options);
    assert.match(headlines(noModel)[0]!, /fixes no model.*give this target a `model` \(at .*virtualModels\.smart\.targets\[0\]\)/);

    const cel = await compileError(config(['smart:', '  targets:', '    - { backend: openai, when: "request.headers[" }']), options);
    assert.match(headlines(cel)[0]!, /^test\.yaml:\d+:\d+: .*\(at .*virtualModels\.smart\.targets\[0\]\.when\)/);

    const strategy = await compileError(config(['smart:', '  strategy: weigthed', '  targets:', '    - backend: openai']), options);
    assert.match(headlines(strategy)[0]!, /^test\.yaml:\d+:\d+: .*weighted.*\(at .*virtualModels\.smart\.strategy\)/);
  });

  it('a target that is not an ai backend is refused', async () => {
    const err = await compileError(config(['smart:', '  targets:', '    - backend: "127.0.0.1:9"'], ['              - host: 127.0.0.1:9']), options);
    assert.match(headlines(err)[0]!, /backend `127\.0\.0\.1:9` is not an `ai` backend/);
  });
});
