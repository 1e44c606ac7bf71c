// The `ai` policy end to end: a real gateway, the policy at route and backend level, and the `testLlm` stand-in
// backend (support.ts) that calls the runtime exactly as the `ai` backend does and echoes what it got.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { compileError, headlines, summarize, yaml } from '../config/helpers.ts';
import { aiConfig, aiGatewayOptions, aiKnownKeys, aiPreset } from './support.ts';

interface Echo {
  format: string;
  request: Record<string, unknown> & { messages?: { role: string; content: unknown }[] };
  response: Record<string, unknown>;
}

describe('ai policy through a gateway', () => {
  let gw: RunningGateway;
  let port: number;

  before(async () => {
    port = await freePort();
    gw = await startGateway(
      aiConfig(port, [
        {
          name: 'route-level',
          policies: {
            ai: {
              routes: { '/v1/chat/completions': 'completions', '/v1/messages': 'messages', '*': 'passthrough' },
              prompts: { prepend: [{ role: 'system', content: 'Route prompt.' }] },
              overrides: { temperature: 0 },
              modelAliases: { 'fast-*': 'gpt-4o-mini' },
              promptGuard: {
                request: [
                  { regex: { rules: [{ builtin: 'email' }, { pattern: 'secret-\\d+' }] } },
                  { regex: { action: 'reject', rules: [{ builtin: 'creditCard' }] }, rejection: { status: 422, body: 'no cards', headers: { set: { 'x-guard': 'card' } } } },
                ],
                response: [{ regex: { rules: [{ builtin: 'ssn' }] } }, { regex: { action: 'reject', rules: [{ pattern: 'FORBIDDEN' }] } }],
              },
            },
          },
        },
        {
          // The backend's `ai` replaces the route's as a whole.
          name: 'backend-wins',
          policies: { ai: { prompts: { prepend: [{ role: 'system', content: 'Route prompt.' }] }, promptGuard: { request: [{ regex: { action: 'reject', rules: [{ pattern: '.' }] } }] } } },
          backendPolicies: { ai: { prompts: { append: [{ role: 'user', content: 'Backend prompt.' }] } } },
        },
        { name: 'no-policy' },
      ]),
      aiGatewayOptions,
    );
  });

  after(async () => {
    await gw?.stop();
  });

  async function post(path: string, body: unknown, headers: Record<string, string> = {}) {
    const res = await request(`${gw.url(port)}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
  }

  it('completions: prompts, overrides, model alias and request masking reach the backend', async () => {
    const res = await post('/route-level/v1/chat/completions', { model: 'fast-1', messages: [{ role: 'user', content: 'mail me at a@b.co, code secret-42' }] });
    assert.equal(res.status, 200, res.text);
    const echo = JSON.parse(res.text) as Echo;
    assert.equal(echo.format, 'completions');
    assert.equal(echo.request.model, 'gpt-4o-mini');
    assert.equal(echo.request.temperature, 0);
    assert.deepEqual(echo.request.messages, [
      { role: 'system', content: 'Route prompt.' },
      { role: 'user', content: 'mail me at <EMAIL_ADDRESS>, code <masked>' },
    ]);
  });

  it('messages: the system prompt goes into `system`; the route type comes from `routes`', async () => {
    const res = await post('/route-level/v1/messages', { model: 'claude', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] });
    const echo = JSON.parse(res.text) as Echo;
    assert.equal(echo.format, 'messages');
    assert.equal(echo.request.system, 'Route prompt.');
    assert.deepEqual(echo.request.messages, [{ role: 'user', content: 'hi' }]);
  });

  it('a rejecting guard answers with its rejection; the backend never sees the request', async () => {
    const res = await post('/route-level/v1/chat/completions', { model: 'm', messages: [{ role: 'user', content: 'card 4111 1111 1111 1111' }] });
    assert.equal(res.status, 422);
    assert.equal(res.text, 'no cards');
    assert.equal(res.headers['x-guard'], 'card');
  });

  it('response guards mask, or reject with the default rejection (403, standard text)', async () => {
    const masked = await post('/route-level/v1/chat/completions', { model: 'm', messages: [{ role: 'user', content: 'hi' }] }, {
      'x-test-response': JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content: 'your ssn is 123-45-6789' } }] }),
    });
    assert.equal(masked.status, 200);
    assert.deepEqual((JSON.parse(masked.text) as Echo).response, { choices: [{ index: 0, message: { role: 'assistant', content: 'your ssn is <SSN>' } }] });
    const rejected = await post('/route-level/v1/chat/completions', { model: 'm', messages: [{ role: 'user', content: 'hi' }] }, {
      'x-test-response': JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content: 'FORBIDDEN words' } }] }),
    });
    assert.equal(rejected.status, 403);
    assert.equal(rejected.text, 'The request was rejected due to inappropriate content');
  });

  it('passthrough routes are left alone', async () => {
    const res = await post('/route-level/v1/models', { messages: [{ role: 'user', content: 'a@b.co' }] });
    const echo = JSON.parse(res.text) as Echo;
    assert.equal(echo.format, 'passthrough');
    assert.deepEqual(echo.request, { messages: [{ role: 'user', content: 'a@b.co' }] });
  });

  it('the backend-level ai policy wins over the route-level one, as a whole', async () => {
    const res = await post('/backend-wins/v1/chat/completions', { model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(res.status, 200, 'the route\'s rejecting guard is not in effect');
    assert.deepEqual((JSON.parse(res.text) as Echo).request.messages, [
      { role: 'user', content: 'hi' },
      { role: 'user', content: 'Backend prompt.' },
    ]);
  });

  // The route's guards silently dropped on that backend: said at load, where the backend's policy is (ADR 0165).
  it('a backend-level ai policy that drops the route\'s guards warns at load, naming route and backend', async () => {
    const warnings = gw.logs.filter((l) => l.includes("replaces the route's"));
    assert.equal(warnings.length, 1, gw.logs.join('\n'));
    assert.match(warnings[0]!, /WARN/);
    assert.match(warnings[0]!, /`binds\[0\]\.listeners\[0\]\.routes\[1\]\.policies\.ai`/, 'the route');
    assert.match(warnings[0]!, /routes\[1\]\.backends\[0\]\.policies\.ai/, 'the backend');
  });

  it('without the policy the backend gets no runtime', async () => {
    const res = await post('/no-policy/x', { model: 'm', messages: [{ role: 'user', content: 'a@b.co' }] });
    assert.deepEqual((JSON.parse(res.text) as Echo).request.messages, [{ role: 'user', content: 'a@b.co' }]);
  });
});

describe('ai policy: config errors', () => {
  const options = { preset: aiPreset, knownKeys: aiKnownKeys };
  const withAi = (...ai: string[]) =>
    yaml('binds:', '  - port: 8080', '    listeners:', '      - routes:', '          - policies:', '              ai:', ...ai.map((l) => `                ${l}`), '            backends: [{ testLlm: {} }]');

  it('an invalid custom pattern points at the pattern, with the engine\'s reason', async () => {
    const err = await compileError(withAi('promptGuard:', '  request:', '    - regex:', '        rules:', '          - pattern: "a(b"'), options);
    assert.equal(err.issues.length, 1);
    const [issue] = summarize(err.issues);
    assert.equal(issue!.at, 'test.yaml:11:38');
    assert.equal(issue!.path, 'binds[0].listeners[0].routes[0].policies.ai.promptGuard.request[0].regex.rules[0].pattern');
    assert.match(issue!.message, /^invalid regular expression `a\(b`: .*Unterminated group/);
  });

  it('a guard item needs exactly one guard type', async () => {
    const two = await compileError(withAi('promptGuard:', '  request:', '    - regex: { rules: [] }', '      webhook: { target: { host: "127.0.0.1:9" } }'), options);
    assert.match(headlines(two).join('\n'), /only one of .*`regex`.*`webhook`/);
    const none = await compileError(withAi('promptGuard:', '  request:', '    - rejection: { status: 400 }'), options);
    assert.match(headlines(none).join('\n'), /exactly one of .*`regex`/);
  });

  // A 1xx is no final answer: the client got `100 Continue` and then waited for ever (ADR 0159).
  it('a rejection status below 200 is a schema error', async () => {
    const err = await compileError(withAi('promptGuard:', '  request:', '    - regex: { rules: [{ pattern: x }] }', '      rejection: { status: 101 }'), options);
    assert.match(headlines(err).join('\n'), /rejection\.status.*200|200.*rejection/s);
  });

  it('unknown route types and unknown fields are schema errors', async () => {
    const err = await compileError(withAi('routes:', '  /v1/chat/completions: chat'), options);
    assert.match(headlines(err).join('\n'), /test\.yaml:8:.*routes/);
    const unknown = await compileError(withAi('promptGaurd: {}'), options);
    assert.match(headlines(unknown)[0]!, /unknown key `promptGaurd`; did you mean `promptGuard`\?/);
  });

  it('a CEL transformation that does not compile points at its field', async () => {
    const err = await compileError(withAi('transformations:', '  max_tokens: "llmRequest.max_tokens +"'), options);
    const [issue] = summarize(err.issues);
    assert.equal(issue!.path, 'binds[0].listeners[0].routes[0].policies.ai.transformations.max_tokens');
    assert.match(issue!.message, /invalid CEL expression/);
  });

  it('a webhook cannot forward the headers of the client\'s own body or connection', async () => {
    const err = await compileError(
      withAi('promptGuard:', '  request:', '    - webhook:', '        target: { host: "127.0.0.1:9" }', '        forwardHeaderMatches: [{ name: Content-Length, value: { regex: ".*" } }]'),
      options,
    );
    const [issue] = summarize(err.issues);
    assert.equal(issue!.path, 'binds[0].listeners[0].routes[0].policies.ai.promptGuard.request[0].webhook.forwardHeaderMatches[0].name');
    assert.match(issue!.message, /`Content-Length` belongs to the client's own request/);
  });

  it('a guard connection accepts only backendAuth and backendTLS', async () => {
    const err = await compileError(withAi('promptGuard:', '  request:', '    - openAIModeration:', '        policies: { timeout: { requestTimeout: 1s } }'), options);
    assert.match(headlines(err).join('\n'), /`timeout` is not supported on the connection to the moderation endpoint; only `backendAuth` and `backendTLS` apply here/);
  });
});
