// The `webhook` guard against a loopback stand-in speaking the Gloo-style guardrail webhook protocol
// (BEHAVIOUR.md §2.9): POST /request and /response, the JSON bodies, the mask/reject/pass answers, forwarded headers,
// the three target forms, and failClosed/failOpen.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { webhookVerdict } from '../../plugins/guards/webhook/webhook.ts';
import { scrape, value } from '../helpers/metrics.ts';
import { aiConfig, aiGatewayOptions, GUARD_FAILED, sendJson, startStandIn } from './support.ts';
import type { StandIn } from './support.ts';

type Msg = { role: string; content: string };

/** The webhook: acts on markers in the texts. */
function guardrail(res: import('node:http').ServerResponse, texts: string[], kind: 'request' | 'response', body: unknown): void {
  const all = texts.join('\n');
  if (all.includes('ERR500')) return sendJson(res, 500, { error: 'boom' });
  // A schema error as FastAPI writes it: the request echoed in `input`.
  if (all.includes('ECHO422')) return sendJson(res, 422, { detail: [{ type: 'missing', loc: ['body', 'x'], msg: 'Field required', input: body }] });
  if (all.includes('ECHOTEXT')) {
    res.writeHead(400, { 'content-type': 'text/plain' });
    return void res.end(`cannot handle: ${all}`);
  }
  if (all.includes('BADJSON')) {
    res.writeHead(200, { 'content-type': 'application/json' });
    return void res.end('{not json');
  }
  if (all.includes('REJECTME')) return sendJson(res, 200, { action: { body: 'webhook says no', status_code: 418, reason: 'marker' } });
  if (all.includes('MASKME')) {
    if (kind === 'request') {
      const messages = (body as { body: { messages: Msg[] } }).body.messages.map((m) => ({ role: m.role, content: m.content.replaceAll('MASKME', '******') }));
      return sendJson(res, 200, { action: { body: { messages }, reason: 'masked' } });
    }
    const choices = (body as { body: { choices: { message: Msg }[] } }).body.choices.map((c) => ({ message: { role: c.message.role, content: c.message.content.replaceAll('MASKME', '******') } }));
    return sendJson(res, 200, { action: { body: { choices }, reason: 'masked' } });
  }
  sendJson(res, 200, { action: { reason: 'fine' } });
}

describe('webhook guard', () => {
  let gw: RunningGateway;
  let port: number;
  let hook: StandIn;

  before(async () => {
    hook = await startStandIn((req, res, body) => {
      if (req.url === '/request') {
        const messages = (body as { body: { messages: Msg[] } }).body.messages;
        return guardrail(res, messages.map((m) => m.content), 'request', body);
      }
      if (req.url === '/response') {
        const choices = (body as { body: { choices: { message: Msg }[] } }).body.choices;
        return guardrail(res, choices.map((c) => c.message.content), 'response', body);
      }
      sendJson(res, 404, {});
    });
    port = await freePort();
    const dead = await freePort();
    const guard = (target: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({ webhook: { target, ...extra } });
    const forward = { forwardHeaderMatches: [{ name: 'X-Tenant', value: { exact: 'acme' } }, { name: 'x-user', value: { regex: 'u-[0-9]+' } }] };
    gw = await startGateway(
      aiConfig(
        port,
        [
          { name: 'host', policies: { ai: { promptGuard: { request: [guard({ host: `127.0.0.1:${hook.port}` }, forward)], response: [guard({ host: `http://127.0.0.1:${hook.port}` })] } } } },
          { name: 'service', policies: { ai: { promptGuard: { request: [guard({ service: { name: { namespace: 'default', hostname: '127.0.0.1' }, port: hook.port } })] } } } },
          { name: 'named', policies: { ai: { promptGuard: { request: [guard({ backend: 'guardrail' })] } } } },
          { name: 'closed', policies: { ai: { promptGuard: { request: [guard({ host: `127.0.0.1:${dead}` })] } } } },
          { name: 'open', policies: { ai: { promptGuard: { request: [guard({ host: `127.0.0.1:${dead}` }, { failureMode: 'failOpen' })] } } } },
          { name: 'open-bad-answer', policies: { ai: { promptGuard: { request: [guard({ host: `127.0.0.1:${hook.port}` }, { failureMode: 'failOpen' })] } } } },
          { name: 'cached', policies: { ai: { promptGuard: { request: [guard({ host: `127.0.0.1:${hook.port}` }, { ...forward, cache: {} })] } } } },
          { name: 'cached-open', policies: { ai: { promptGuard: { request: [guard({ host: `127.0.0.1:${dead}` }, { failureMode: 'failOpen', cache: {} })] } } } },
        ],
        { backends: [{ name: 'guardrail', host: `127.0.0.1:${hook.port}` }] },
      ),
      aiGatewayOptions,
    );
  });

  after(async () => {
    await gw?.stop();
    await hook?.close();
  });

  async function post(path: string, content: string, headers: Record<string, string> = {}) {
    const res = await request(`${gw.url(port)}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'system', content: 'sys' }, { role: 'user', content }] }),
    });
    return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
  }

  it('with `cache`, a passed list of messages with the same forwarded headers is not sent again; masks, rejections and fail-open passes are (ADR 0188)', async () => {
    const sent = async (content: string, headers: Record<string, string> = {}, path = '/cached/x') => {
      const from = hook.received.length;
      const res = await post(path, content, headers);
      return { status: res.status, calls: hook.received.length - from };
    };
    assert.deepEqual(await sent('hello'), { status: 200, calls: 1 });
    assert.deepEqual(await sent('hello'), { status: 200, calls: 0 });
    // Another forwarded header value is another question to the webhook; a header it does not get changes nothing.
    assert.deepEqual(await sent('hello', { 'x-tenant': 'acme' }), { status: 200, calls: 1 });
    assert.deepEqual(await sent('hello', { 'x-tenant': 'acme', 'x-other': 'y' }), { status: 200, calls: 0 });
    // The whole list is the key: a turn more is sent whole (the webhook may judge in context).
    assert.deepEqual(await sent('hello again'), { status: 200, calls: 1 });
    assert.equal((hook.received.at(-1)!.body as { body: { messages: Msg[] } }).body.messages.length, 2);
    for (let i = 0; i < 2; i++) {
      assert.deepEqual(await sent('MASKME please'), { status: 200, calls: 1 });
      assert.deepEqual(await sent('REJECTME'), { status: 418, calls: 1 });
    }
    // A pass because the webhook failed (failOpen) is no verdict: not remembered.
    for (let i = 0; i < 2; i++) assert.equal((await post('/cached-open/x', 'hello')).status, 200);
    const m = await scrape(gw);
    assert.equal(value(m, 'switchyard_guardrail_cache_total', { guard: 'webhook', phase: 'request', result: 'hit' }), 2);
    // 7 calls to the webhook above, and both fail-open passes looked up again.
    assert.equal(value(m, 'switchyard_guardrail_cache_total', { guard: 'webhook', phase: 'request', result: 'miss' }), 9);
  });

  it('request phase: POST /request with {"body":{"messages":[…]}} and JSON content type; pass lets the request through', async () => {
    const before = hook.received.length;
    const res = await post('/host/v1/chat/completions', 'hello');
    assert.equal(res.status, 200, res.text);
    const call = hook.received[before]!;
    assert.equal(call.method, 'POST');
    assert.equal(call.url, '/request');
    assert.equal(call.headers['content-type'], 'application/json');
    assert.deepEqual(call.body, { body: { messages: [{ role: 'system', content: 'sys' }, { role: 'user', content: 'hello' }] } });
  });

  it('forwards only the headers of forwardHeaderMatches whose value matches', async () => {
    const before = hook.received.length;
    await post('/host/v1/chat/completions', 'hello', { 'x-tenant': 'acme', 'x-user': 'u-42', 'x-other': 'no', authorization: 'Bearer secret' });
    const first = hook.received[before]!.headers;
    assert.equal(first['x-tenant'], 'acme');
    assert.equal(first['x-user'], 'u-42');
    assert.equal(first['x-other'], undefined);
    assert.equal(first.authorization, undefined);
    const next = hook.received.length;
    await post('/host/v1/chat/completions', 'hello', { 'x-tenant': 'other', 'x-user': 'admin' });
    assert.equal(hook.received[next]!.headers['x-tenant'], undefined);
    assert.equal(hook.received[next]!.headers['x-user'], undefined);
  });

  it('mask replaces the messages; reject answers with the webhook\'s own status and body', async () => {
    const masked = await post('/host/v1/chat/completions', 'my MASKME token');
    assert.equal(masked.status, 200);
    assert.deepEqual((JSON.parse(masked.text) as { request: { messages: Msg[] } }).request.messages, [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'my ****** token' },
    ]);
    const rejected = await post('/host/v1/chat/completions', 'REJECTME');
    assert.equal(rejected.status, 418);
    assert.equal(rejected.text, 'webhook says no');
  });

  it('response phase: POST /response with {"body":{"choices":[{"message":…}]}}; mask and reject apply to the response', async () => {
    const before = hook.received.length;
    const answer = (content: string) => ({ 'x-test-response': JSON.stringify({ id: 'c1', choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }] }) });
    const masked = await post('/host/v1/chat/completions', 'hi', answer('the MASKME answer'));
    assert.equal(masked.status, 200);
    const response = hook.received.find((r, i) => i >= before && r.url === '/response')!;
    assert.deepEqual(response.body, { body: { choices: [{ message: { role: 'assistant', content: 'the MASKME answer' } }] } });
    assert.deepEqual((JSON.parse(masked.text) as { response: unknown }).response, {
      id: 'c1',
      choices: [{ index: 0, message: { role: 'assistant', content: 'the ****** answer' }, finish_reason: 'stop' }],
    });
    const rejected = await post('/host/v1/chat/completions', 'hi', answer('REJECTME'));
    assert.equal(rejected.status, 418);
    assert.equal(rejected.text, 'webhook says no');
  });

  it('target forms: service (DNS name or address, port) and a named host backend', async () => {
    for (const path of ['/service/x', '/named/x']) {
      const before = hook.received.length;
      const res = await post(path, 'REJECTME');
      assert.equal(res.status, 418, path);
      assert.equal(hook.received[before]?.url, '/request', path);
    }
  });

  it('failClosed (default): unreachable, error status or unreadable answer → 503 prompt guard failed', async () => {
    for (const [path, content] of [
      ['/closed/x', 'hi'],
      ['/host/x', 'ERR500'],
      ['/host/x', 'BADJSON'],
    ] as const) {
      const res = await post(path, content);
      assert.equal(res.status, 503, `${path} ${content}`);
      assert.deepEqual(JSON.parse(res.text), GUARD_FAILED);
      assert.equal(res.headers['content-type'], 'application/json');
    }
  });

  // The prompt is not logged (ADR 0159): a webhook's error body may echo it; only a JSON error message is kept.
  it('a failing webhook\'s error body that echoes the prompt is not logged; its status and error message are', async () => {
    for (const content of ['my card 4111 1111 1111 1111 ECHO422', 'my card 4111 1111 1111 1111 ECHOTEXT']) {
      const res = await post('/host/x', content);
      assert.equal(res.status, 503);
    }
    await new Promise((r) => setTimeout(r, 100));
    const failures = gw.logs.filter((l) => l.includes('prompt guard failed'));
    assert.ok(failures.some((l) => l.includes('answered 422')) && failures.some((l) => l.includes('answered 400')), failures.join('\n'));
    const leaked = gw.logs.filter((l) => l.includes('4111'));
    assert.deepEqual(leaked, []);
    await post('/host/x', 'ERR500');
    await new Promise((r) => setTimeout(r, 100));
    assert.ok(gw.logs.some((l) => l.includes('answered 500: boom')), 'a JSON error message is still logged');
  });

  it('failOpen: a failing webhook lets the request through unchanged', async () => {
    for (const [path, content] of [
      ['/open/x', 'hi MASKME'],
      ['/open-bad-answer/x', 'ERR500'],
    ] as const) {
      const res = await post(path, content);
      assert.equal(res.status, 200, `${path}: ${res.text}`);
      assert.equal((JSON.parse(res.text) as { request: { messages: Msg[] } }).request.messages[1]!.content, content);
    }
  });
});

describe('webhook answers (protocol parsing)', () => {
  const msgs = [{ role: 'user', content: 'x' }];
  it('mask, reject and pass are tried in that order', () => {
    assert.deepEqual(webhookVerdict({ action: { body: { messages: msgs } } }, 'request'), { action: 'mask', messages: msgs });
    assert.deepEqual(webhookVerdict({ action: { body: { choices: [{ message: { role: 'assistant', content: 'y' } }] } } }, 'response'), {
      action: 'mask',
      messages: [{ role: 'assistant', content: 'y' }],
    });
    assert.deepEqual(webhookVerdict({ action: { body: 'no', status_code: 400, reason: 'r' } }, 'request'), { action: 'reject', status: 400, body: 'no', reason: 'r' });
    assert.deepEqual(webhookVerdict({ action: { reason: 'fine' } }, 'request'), { action: 'pass' });
    assert.deepEqual(webhookVerdict({ action: {} }, 'response'), { action: 'pass' });
    assert.deepEqual(webhookVerdict({ action: { body: 'no status' } }, 'request'), { action: 'pass' });
  });

  it('answers that cannot be applied are failures', () => {
    assert.throws(() => webhookVerdict({}, 'request'), /without an `action`/);
    assert.throws(() => webhookVerdict({ action: { body: { choices: [] } } }, 'request'), /masked a request with `choices`/);
    assert.throws(() => webhookVerdict({ action: { body: { messages: [] } } }, 'response'), /masked a response with `messages`/);
    assert.throws(() => webhookVerdict({ action: { body: { messages: [{ role: 'user' }] } } }, 'request'), /no string `content`/);
  });

  // A status that is no final answer (a 1xx: the client got `100 Continue` and waited for ever) still rejects, with
  // the entry's `rejection` status and the webhook's body (ADR 0159).
  it('a reject whose status_code is not a final HTTP status rejects with the entry\'s status', () => {
    for (const status of [99, 100, 101, 103, 199, 600]) {
      assert.deepEqual(webhookVerdict({ action: { body: 'x', status_code: status } }, 'request'), { action: 'reject', body: 'x', reason: undefined });
    }
  });
});
