// The `ai` policy runtime (plugins/policies/ai) called directly, as the `ai` backend calls it
// (plugins/lib/llm/contract.ts): routeType → applyRequest → guardRequest on the client-format body, guardResponse on
// complete responses. Real bodies of each client format, real CEL, the real regex guard.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Reply } from 'switchyard/sdk';
import { compileAiRuntime } from '../../plugins/policies/ai/ai-policy.ts';
import type { AiPolicyConfig } from '../../plugins/policies/ai/ai-policy.ts';
import { fakeContext, fakeExchange, FakeConfigError } from './support.ts';

const runtime = (config: AiPolicyConfig, warnings: string[] = []) => compileAiRuntime(structuredClone(config), fakeContext(['policies', 'ai'], warnings));

function text(reply: Reply | undefined): string {
  assert.ok(reply, 'expected a reply');
  return typeof reply.body === 'string' ? reply.body : Buffer.from(reply.body as Uint8Array).toString('utf8');
}

describe('ai runtime: routes', () => {
  it('suffix match, longest first, `*` as the fallback; no routes: undefined (the backend defaults to completions)', async () => {
    const rt = await runtime({
      routes: { '/completions': 'completions', '/v1/chat/completions': 'completions', '/v1/messages': 'messages', '/v1/messages/count_tokens': 'anthropicTokenCount', '*': 'passthrough' },
    });
    assert.equal(rt.routeType('/v1/chat/completions'), 'completions');
    assert.equal(rt.routeType('/api/completions'), 'completions');
    assert.equal(rt.routeType('/v1/messages'), 'messages');
    assert.equal(rt.routeType('/v1/messages/count_tokens'), 'anthropicTokenCount');
    assert.equal(rt.routeType('/v1/models'), 'passthrough');
    const none = await runtime({});
    assert.equal(none.routeType('/anything'), undefined);
    const noFallback = await runtime({ routes: { '/v1/responses': 'responses' } });
    assert.equal(noFallback.routeType('/v1/embeddings'), undefined);
  });
});

describe('ai runtime: prompts', () => {
  const prompts: AiPolicyConfig = {
    prompts: {
      prepend: [
        { role: 'system', content: 'You are a pirate.' },
        { role: 'user', content: 'Context: ships.' },
      ],
      append: [{ role: 'system', content: 'Answer briefly.' }],
    },
  };

  it('completions: messages before and after the client\'s', async () => {
    const rt = await runtime(prompts);
    const body = { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] };
    rt.applyRequest(fakeExchange(), 'completions', body);
    assert.deepEqual(body.messages, [
      { role: 'system', content: 'You are a pirate.' },
      { role: 'user', content: 'Context: ships.' },
      { role: 'user', content: 'hi' },
      { role: 'system', content: 'Answer briefly.' },
    ]);
  });

  it('messages (Anthropic): system entries around the client\'s `system`, the others into `messages`', async () => {
    const rt = await runtime(prompts);
    const body: Record<string, unknown> = { model: 'claude', max_tokens: 10, system: 'Be nice.', messages: [{ role: 'user', content: 'hi' }] };
    rt.applyRequest(fakeExchange(), 'messages', body);
    assert.deepEqual(body.system, [
      { type: 'text', text: 'You are a pirate.' },
      { type: 'text', text: 'Be nice.' },
      { type: 'text', text: 'Answer briefly.' },
    ]);
    assert.deepEqual(body.messages, [
      { role: 'user', content: 'Context: ships.' },
      { role: 'user', content: 'hi' },
    ]);
    // Without a client system prompt and one system prompt configured, `system` stays a string.
    const single = await runtime({ prompts: { prepend: [{ role: 'system', content: 'Only this.' }] } });
    const plain: Record<string, unknown> = { messages: [{ role: 'user', content: 'hi' }] };
    single.applyRequest(fakeExchange(), 'messages', plain);
    assert.equal(plain.system, 'Only this.');
    assert.deepEqual(plain.messages, [{ role: 'user', content: 'hi' }]);
  });

  it('responses: items of `input` (a string input becomes a user item)', async () => {
    const rt = await runtime(prompts);
    const body: Record<string, unknown> = { model: 'gpt-4o', input: 'hi' };
    rt.applyRequest(fakeExchange(), 'responses', body);
    assert.deepEqual(body.input, [
      { role: 'system', content: 'You are a pirate.' },
      { role: 'user', content: 'Context: ships.' },
      { role: 'user', content: 'hi' },
      { role: 'system', content: 'Answer briefly.' },
    ]);
  });

  it('passthrough and embeddings bodies get no prompts', async () => {
    const rt = await runtime(prompts);
    const pass = { messages: [{ role: 'user', content: 'hi' }] };
    rt.applyRequest(fakeExchange(), 'passthrough', pass);
    assert.deepEqual(pass.messages, [{ role: 'user', content: 'hi' }]);
    const emb: Record<string, unknown> = { input: 'x', model: 'e' };
    rt.applyRequest(fakeExchange(), 'embeddings', emb);
    assert.deepEqual(emb, { input: 'x', model: 'e' });
  });
});

describe('ai runtime: defaults, overrides, transformations, model aliases', () => {
  it('overrides → transformations → defaults; transformations read the client body as `llmRequest`', async () => {
    const rt = await runtime({
      overrides: { temperature: 0.1, user: 'gateway' },
      transformations: {
        max_tokens: 'llmRequest.max_tokens > 50 ? 50 : llmRequest.max_tokens',
        model: 'llmRequest.model.split("/").size() == 2 ? llmRequest.model.split("/")[1] : llmRequest.model',
        temperature: '0.7',
        metadata: '{"caller": request.headers["x-caller"], "sub": jwt.sub}',
        seed: 'llmRequest.no_such_field',
      },
      defaults: { max_tokens: 1000, top_p: 0.9, temperature: 0.5 },
    });
    const body: Record<string, unknown> = { model: 'openai/gpt-4o', max_tokens: 999, seed: 7, messages: [] };
    rt.applyRequest(fakeExchange({ headers: { 'x-caller': 'svc-a' }, attributes: { jwt: { sub: 'alice' } } }), 'completions', body);
    assert.equal(body.model, 'gpt-4o');
    assert.equal(body.max_tokens, 50);
    assert.equal(body.temperature, 0.7, 'a transformation wins over an override');
    assert.equal(body.user, 'gateway');
    assert.equal(body.top_p, 0.9, 'defaults fill what is absent');
    assert.deepEqual(body.metadata, { caller: 'svc-a', sub: 'alice' });
    assert.equal('seed' in body, false, 'a failing transformation removes its field');
  });

  it('defaults never replace what the client sent; overrides always do', async () => {
    const rt = await runtime({ defaults: { temperature: 0.5 }, overrides: { max_tokens: 10 } });
    const body: Record<string, unknown> = { temperature: 0, max_tokens: 4000 };
    rt.applyRequest(fakeExchange(), 'completions', body);
    assert.deepEqual(body, { temperature: 0, max_tokens: 10 });
  });

  it('model aliases: exact first, then the longest matching wildcard pattern', async () => {
    const rt = await runtime({
      modelAliases: {
        'gpt-4': 'exact-target',
        'claude-haiku-3.5-*': 'haiku-3.5-target',
        'claude-haiku-*': 'haiku-target',
        '*-sonnet-*': 'sonnet-target',
        'test.*': 'dot-literal',
      },
    });
    const model = (m: string): unknown => {
      const body: Record<string, unknown> = { model: m, messages: [] };
      rt.applyRequest(fakeExchange(), 'completions', body);
      return body.model;
    };
    assert.equal(model('gpt-4'), 'exact-target');
    assert.equal(model('claude-haiku-3.5-v1'), 'haiku-3.5-target');
    assert.equal(model('claude-haiku-v1'), 'haiku-target');
    assert.equal(model('other-sonnet-model'), 'sonnet-target');
    assert.equal(model('test.v1'), 'dot-literal');
    assert.equal(model('testXv1'), 'testXv1', 'a dot is literal');
    assert.equal(model('unmatched'), 'unmatched');
  });

  it('an invalid CEL transformation is a config error at its field', async () => {
    await assert.rejects(
      runtime({ transformations: { max_tokens: 'llmRequest.max_tokens +' } }),
      (err: unknown) => err instanceof Error && /invalid CEL expression/.test(err.message) && JSON.stringify((err as { issues?: unknown }).issues ?? '').includes('max_tokens'),
    );
  });
});

describe('ai runtime: prompt caching', () => {
  it('marks Anthropic Messages bodies only, after the prompts were added', async () => {
    const rt = await runtime({ prompts: { prepend: [{ role: 'system', content: 'sys' }] }, promptCaching: { minTokens: 0 } });
    assert.deepEqual(rt.promptCaching, { cacheSystem: true, cacheMessages: true, cacheTools: false, minTokens: 0, cacheMessageOffset: 0 });
    const body: Record<string, unknown> = {
      messages: [
        { role: 'user', content: 'a' },
        { role: 'assistant', content: 'b' },
        { role: 'user', content: 'c' },
      ],
    };
    rt.applyRequest(fakeExchange(), 'messages', body);
    assert.deepEqual(body.system, [{ type: 'text', text: 'sys', cache_control: { type: 'ephemeral' } }]);
    assert.deepEqual((body.messages as { content: unknown }[])[1]!.content, [{ type: 'text', text: 'b', cache_control: { type: 'ephemeral' } }]);
    const completions = { messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }, { role: 'user', content: 'c' }] };
    rt.applyRequest(fakeExchange(), 'completions', completions);
    assert.equal(JSON.stringify(completions).includes('cache_control'), false);
    assert.equal((await runtime({ promptCaching: null })).promptCaching, undefined);
  });
});

describe('ai runtime: prompt guards (regex)', () => {
  it('masks builtins and patterns on requests; later guards see the masked text', async () => {
    const rt = await runtime({
      promptGuard: {
        request: [{ regex: { rules: [{ builtin: 'email' }, { builtin: 'ssn' }] } }, { regex: { action: 'reject', rules: [{ pattern: '@' }] } }],
      },
    });
    const body = { messages: [{ role: 'user', content: 'mail bob@example.com, ssn 123-45-6789' }] };
    const ex = fakeExchange();
    assert.equal(await rt.guardRequest(ex, 'completions', body), undefined);
    assert.equal(body.messages[0]!.content, 'mail <EMAIL_ADDRESS>, ssn <SSN>');
    assert.equal(ex.logged['llm.guard'], 'request:mask:regex,request:pass:regex');
  });

  it('`llm.guard` lists every guard that ran, in order, both phases (ADR 0181): a later pass does not hide a mask', async () => {
    const rt = await runtime({
      promptGuard: {
        request: [{ regex: { rules: [{ builtin: 'ssn' }] } }, { regex: { action: 'reject', rules: [{ pattern: 'nothing-here' }] } }],
        response: [{ regex: { rules: [{ builtin: 'email' }] } }, { regex: { action: 'reject', rules: [{ pattern: 'SECRET' }] } }, { regex: { rules: [{ pattern: 'x' }] } }],
      },
    });
    const ex = fakeExchange();
    assert.equal(await rt.guardRequest(ex, 'completions', { messages: [{ role: 'user', content: 'ssn 123-45-6789' }] }), undefined);
    assert.equal(ex.logged['llm.guard'], 'request:mask:regex,request:pass:regex');
    const answer = { choices: [{ index: 0, message: { role: 'assistant', content: 'a SECRET' } }] };
    assert.equal((await rt.guardResponse(ex, 'completions', answer))?.status, 403);
    assert.equal(ex.logged['llm.guard'], 'request:mask:regex,request:pass:regex,response:pass:regex,response:reject:regex');
  });

  it('the first rejection answers with the entry\'s rejection (defaults: 403 and the standard text, no content type)', async () => {
    const rt = await runtime({
      promptGuard: {
        request: [
          { regex: { action: 'reject', rules: [{ pattern: '(?i)forbidden' }] } },
          { regex: { action: 'reject', rules: [{ pattern: 'x' }] }, rejection: { status: 451, body: 'second' } },
        ],
      },
    });
    const reply = await rt.guardRequest(fakeExchange(), 'completions', { messages: [{ role: 'user', content: 'FORBIDDEN x' }] });
    assert.equal(reply?.status, 403);
    assert.equal(text(reply), 'The request was rejected due to inappropriate content');
    assert.deepEqual(reply?.headers, {});
    const second = await rt.guardRequest(fakeExchange(), 'completions', { messages: [{ role: 'user', content: 'just x' }] });
    assert.equal(second?.status, 451);
    assert.equal(text(second), 'second');
  });

  it('rejection headers: add, set, remove', async () => {
    const rt = await runtime({
      promptGuard: {
        request: [
          {
            regex: { action: 'reject', rules: [{ builtin: 'creditCard' }] },
            rejection: { status: 400, body: '{"error":"pii"}', headers: { set: { 'Content-Type': 'application/json' }, add: { 'x-guard': 'regex' }, remove: ['x-guard'] } },
          },
        ],
      },
    });
    const reply = await rt.guardRequest(fakeExchange(), 'messages', { system: 'card 4111 1111 1111 1111', messages: [] });
    assert.equal(reply?.status, 400);
    assert.deepEqual(reply?.headers, { 'content-type': 'application/json' });
    assert.equal(text(reply), '{"error":"pii"}');
  });

  it('rejection headers may not set Content-Length (the gateway frames the body it sends)', async () => {
    const guard = (headers: Record<string, unknown>) => ({ promptGuard: { request: [{ regex: { rules: [{ builtin: 'email' }] }, rejection: { body: 'no', headers } }] } });
    for (const kind of ['set', 'add'] as const) {
      await assert.rejects(runtime(guard({ [kind]: { 'Content-Length': '1' } }) as AiPolicyConfig), (err: unknown) => {
        assert.ok(err instanceof FakeConfigError);
        assert.deepEqual(err.at, ['policies', 'ai', 'promptGuard', 'request', 0, 'rejection', 'headers', kind, 'Content-Length']);
        assert.match(err.message, /`Content-Length` is the gateway's to set on a response/);
        return true;
      });
    }
  });

  it('response guards run on the client-format response; hasResponseGuards tells the backend to buffer', async () => {
    const rt = await runtime({ promptGuard: { response: [{ regex: { rules: [{ builtin: 'phoneNumber' }] } }] } });
    assert.equal(rt.hasResponseGuards, true);
    const response = { id: 'msg_1', type: 'message', role: 'assistant', content: [{ type: 'text', text: 'Call (415) 555-2671.' }] };
    assert.equal(await rt.guardResponse(fakeExchange(), 'messages', response), undefined);
    assert.equal(response.content[0]!.text, 'Call <PHONE_NUMBER>.');
    // Request guards are not response guards.
    const body = { messages: [{ role: 'user', content: '(415) 555-2671' }] };
    assert.equal(await rt.guardRequest(fakeExchange(), 'completions', body), undefined);
    assert.equal(body.messages[0]!.content, '(415) 555-2671');
    assert.equal((await runtime({})).hasResponseGuards, false);
  });

  it('count_tokens requests are not guarded (nothing reaches a model)', async () => {
    const rt = await runtime({ promptGuard: { request: [{ regex: { action: 'reject', rules: [{ pattern: '.' }] } }] } });
    assert.equal(await rt.guardRequest(fakeExchange(), 'anthropicTokenCount', { messages: [{ role: 'user', content: 'x' }] }), undefined);
    assert.ok(await rt.guardRequest(fakeExchange(), 'messages', { messages: [{ role: 'user', content: 'x' }] }));
  });

  it('a regex guard without rules passes everything (and warns at load)', async () => {
    const warnings: string[] = [];
    const rt = await runtime({ promptGuard: { request: [{ regex: { rules: [] } }] } }, warnings);
    assert.equal(await rt.guardRequest(fakeExchange(), 'completions', { messages: [{ role: 'user', content: 'x' }] }), undefined);
    assert.ok(warnings.some((w) => /no rules/.test(w)));
  });

  it('an invalid custom pattern is a config error at the pattern, with the engine\'s reason', async () => {
    await assert.rejects(runtime({ promptGuard: { request: [{ regex: { rules: [{ builtin: 'email' }, { pattern: 'a(b' }] } }] } }), (err: unknown) => {
      assert.ok(err instanceof FakeConfigError);
      assert.deepEqual(err.at, ['policies', 'ai', 'promptGuard', 'request', 0, 'regex', 'rules', 1, 'pattern']);
      assert.match(err.message, /invalid regular expression `a\(b`: .*Unterminated group/);
      return true;
    });
  });

  it('streaming: Enabled asks the backend to guard streams (guardStreams), without a warning', async () => {
    const warnings: string[] = [];
    const enabled = await runtime({ promptGuard: { streaming: 'Enabled', response: [{ regex: { rules: [{ builtin: 'email' }] } }] } }, warnings);
    assert.equal(enabled.guardStreams, true);
    assert.equal(enabled.hasResponseGuards, true);
    assert.deepEqual(warnings.filter((w) => w.includes('streaming')), []);
    assert.equal((await runtime({ promptGuard: { response: [{ regex: { rules: [{ builtin: 'email' }] } }] } })).guardStreams, false, 'Disabled by default');
    assert.equal((await runtime({ promptGuard: { streaming: 'Disabled' } })).guardStreams, false);
  });

  // A client picks its path: one the routes send to `passthrough` or `realtime` escapes every guard (ADR 0159).
  it('guards with routes of type passthrough or realtime warn at load, naming the route', async () => {
    const warnings: string[] = [];
    const guard = { request: [{ regex: { rules: [{ builtin: 'email' }] } }] };
    await runtime({ routes: { '/v1/chat/completions': 'completions', '/v1/realtime': 'realtime', '*': 'passthrough' }, promptGuard: guard }, warnings);
    assert.deepEqual(warnings, [
      'policies.ai.routes./v1/realtime: prompt guards do not run on `realtime` requests: a client reaches them by its path',
      'policies.ai.routes.*: prompt guards do not run on `passthrough` requests: a client reaches them by its path',
    ]);
    const quiet: string[] = [];
    await runtime({ routes: { '*': 'passthrough' } }, quiet);
    assert.deepEqual(quiet, [], 'no guards: nothing to say');
  });

  // A client escapes response guards by asking `stream: true` unless streams are guarded too (ADR 0159).
  it('response guards without streaming: Enabled warn at load that streamed answers are not guarded', async () => {
    for (const streaming of [undefined, 'Disabled'] as const) {
      const warnings: string[] = [];
      await runtime({ promptGuard: { response: [{ regex: { rules: [{ builtin: 'email' }] } }], ...(streaming ? { streaming } : {}) } }, warnings);
      assert.deepEqual(warnings, ['policies.ai.promptGuard.streaming: response guards do not run on streamed answers (`stream: true`), which any client can ask for; set `streaming: Enabled` to guard them too']);
    }
    const quiet: string[] = [];
    await runtime({ promptGuard: { request: [{ regex: { rules: [{ builtin: 'email' }] } }] } }, quiet);
    assert.deepEqual(quiet, [], 'no response guards: nothing to say');
  });
});
