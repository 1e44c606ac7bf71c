// The policy's hooks on replies the e2e test (test/e2e/policy-a2a.test.ts) cannot produce with a `host` backend:
// in-memory bodies, local replies, a policy on both route and backend.
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { gzipSync } from 'node:zlib';
import { describe, it } from 'node:test';
import type { AttributeKey, BodyReceiver, Exchange, PolicyInstance, Reply } from 'switchyard/sdk';
import { compileA2a } from './a2a.ts';

/** `origin` is what the kernel computed from Host and trusted forwarding headers (kernel/runtime/external-origin.ts). */
function exchange(method: string, url: string, rawHeaders: string[] = ['Host', 'gw.test'], origin = 'http://gw.test'): Exchange & { fields: Record<string, unknown> } {
  const attrs = new Map<string, unknown>();
  const fields: Record<string, unknown> = {};
  const q = url.indexOf('?');
  return {
    req: { rawHeaders } as unknown as IncomingMessage,
    method,
    path: q === -1 ? url : url.slice(0, q),
    query: '',
    authority: 'gw.test',
    hostname: 'gw.test',
    scheme: 'http',
    headers: {},
    sourceAddress: '127.0.0.1',
    externalOrigin: origin,
    requestId: 'test-1',
    sourcePort: 1,
    route: { name: 'r', key: 'l/r', listener: 'l', bind: 1 },
    matchedPrefix: '/',
    originalUrl: url,
    startTime: 0,
    protocol: 'http',
    signal: new AbortController().signal,
    body: undefined,
    bufferBody: () => Promise.resolve(Buffer.alloc(0)),
    peekBody: () => Promise.resolve(Buffer.alloc(0)),
    copyBody: () => Promise.resolve(Buffer.alloc(0)),
    readBodyInto: (_limit: number, receiver: BodyReceiver) => receiver.bodyRead(Buffer.alloc(0)),
    setBody: () => undefined,
    get: <T>(key: AttributeKey<T>) => attrs.get(key.name) as T | undefined,
    set: <T>(key: AttributeKey<T>, value: T) => void attrs.set(key.name, value),
    queueResponseHeader: () => undefined,
    logField: (name: string, value: unknown) => void (fields[name] = value),
    detach() {
      return this;
    },
    fields,
  };
}

/** What the policy observed on its histogram. */
const observed: { labels: Record<string, string>; value: number }[] = [];
const ctx = {
  path: [],
  histogram: () => ({ observe: (labels: Record<string, string>, value: number) => observed.push({ labels, value }) }),
  resources: { get: <T>(_key: string, create: () => T): T => create() },
};
const policy = (): PolicyInstance => compileA2a({}, ctx as never);
const reply = (body: string, status = 200): Reply => ({ status, headers: { 'content-type': 'application/json', 'content-length': String(body.length), etag: 'W/"1"' }, body, local: false });

describe('a2a hooks', () => {
  it('rewrites an in-memory card and answers 503 with a JSON error for a broken one', () => {
    const p = policy();
    const ex = exchange('GET', '/.well-known/agent-card.json', ['Host', 'gw.test', 'X-Forwarded-Proto', 'https'], 'https://gw.test');
    p.onRequest!(ex);
    assert.equal(ex.headers['accept-encoding'], 'identity');
    const ok = reply(JSON.stringify({ supportedInterfaces: [{ url: 'http://agent:9/rpc' }] }));
    p.onResponse!(ex, ok);
    assert.deepEqual(JSON.parse(String(ok.body)), { supportedInterfaces: [{ url: 'https://gw.test/rpc' }] });
    assert.equal(ok.headers['content-length'], undefined);
    assert.equal(ok.headers.etag, undefined);

    for (const [body, message] of [
      ['{"name":', 'processing failed: agent card invalid JSON'],
      ['{"name":"x"}', "processing failed: agent card missing URL (no 'url' or 'supportedInterfaces' field)"],
    ] as const) {
      const ex2 = exchange('GET', '/.well-known/agent.json');
      p.onRequest!(ex2);
      const bad = reply(body);
      p.onResponse!(ex2, bad);
      assert.equal(bad.status, 503);
      assert.deepEqual(bad.headers, { 'content-type': 'application/json' });
      assert.deepEqual(JSON.parse(String(bad.body)), { error: { type: 'processing_failed', message } });
    }
  });

  it('a card it cannot decode is a processing failure that says so', () => {
    const p = policy();
    const bomb = gzipSync(JSON.stringify({ url: 'http://agent/', pad: 'x'.repeat(3 * 1024 * 1024) }));
    for (const [encoding, body, message] of [
      ['gzip', Buffer.from('not gzip'), 'processing failed: agent card could not be decoded (gzip)'],
      ['gzip', bomb, 'processing failed: agent card exceeds 2097152 bytes'],
      ['zstd', Buffer.from('xx'), 'processing failed: agent card Content-Encoding not supported (zstd)'],
    ] as const) {
      const ex = exchange('GET', '/.well-known/agent-card.json');
      p.onRequest!(ex);
      const r: Reply = { status: 200, headers: { 'content-type': 'application/json', 'content-encoding': encoding }, body, local: false };
      p.onResponse!(ex, r);
      assert.equal(r.status, 503);
      assert.deepEqual(JSON.parse(String(r.body)), { error: { type: 'processing_failed', message } }, message);
    }
  });

  it('leaves local replies and error statuses alone', () => {
    const p = policy();
    for (const [method, r] of [
      ['GET', { ...reply('{"x":1}'), local: true }],
      ['GET', reply('not found', 404)],
      ['HEAD', reply('', 404)],
    ] as const) {
      const ex = exchange(method, '/.well-known/agent-card.json');
      p.onRequest!(ex);
      const before = JSON.stringify(r);
      p.onResponse!(ex, r);
      assert.equal(JSON.stringify(r), before, method);
    }
  });

  it('a HEAD of a card says what a GET would: no agent length or validator for the rewritten card', () => {
    const p = policy();
    const ex = exchange('HEAD', '/.well-known/agent-card.json');
    p.onRequest!(ex);
    assert.equal(ex.headers['accept-encoding'], 'identity');
    const r = reply('');
    r.headers['content-length'] = '828';
    p.onResponse!(ex, r);
    assert.equal(r.status, 200);
    assert.deepEqual(r.headers, { 'content-type': 'application/json' });
  });

  it('rewrites the card of an extended-card answer, and passes an error answer on as it came', async () => {
    const p = policy();
    const call = (body: string) => {
      const ex = exchange('POST', '/agents/x/rpc');
      ex.path = '/rpc';
      ex.headers['content-type'] = 'application/json';
      Object.assign(ex, { peekBody: () => Promise.resolve(Buffer.from(body)) });
      return ex;
    };
    const ex = call('{"jsonrpc":"2.0","id":1,"method":"GetExtendedAgentCard"}');
    await p.onRequest!(ex);
    assert.equal(ex.headers['accept-encoding'], 'identity');
    const ok = reply(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { name: 'x', supportedInterfaces: [{ url: 'http://agent:9/rpc' }] } }));
    p.onResponse!(ex, ok);
    assert.deepEqual(JSON.parse(String(ok.body)), { jsonrpc: '2.0', id: 1, result: { name: 'x', supportedInterfaces: [{ url: 'http://gw.test/agents/x/rpc' }] } });
    assert.equal(ex.fields['a2a.response.outcome'], 'success');

    const failed = call('{"jsonrpc":"2.0","id":2,"method":"agent/getAuthenticatedExtendedCard"}');
    await p.onRequest!(failed);
    const error = '{"jsonrpc":"2.0","id":2,"error":{"code":-32007,"message":"not configured"}}';
    const answer = reply(error);
    p.onResponse!(failed, answer);
    assert.equal(String(answer.body), error);
    assert.equal(answer.status, 200);
    assert.deepEqual([failed.fields['a2a.response.outcome'], failed.fields['a2a.response.error_code']], ['error', -32007]);
  });

  it('acts once when set on both the route and the backend', () => {
    const route = policy();
    const backend = policy();
    const ex = exchange('GET', '/agents/x/.well-known/agent-card.json');
    route.onRequest!(ex);
    backend.onRequest!(ex);
    const r = reply(JSON.stringify({ url: 'http://agent/agents/x/a2a' }));
    backend.onResponse!(ex, r);
    route.onResponse!(ex, r);
    assert.equal(JSON.parse(String(r.body)).url, 'http://gw.test/agents/x/a2a');
  });

  it('counts a call once on its histogram, with the outcome its answer gave, when set on both route and backend', async () => {
    const route = policy();
    const backend = policy();
    const ex = exchange('POST', '/rpc');
    ex.headers['content-type'] = 'application/json';
    Object.assign(ex, { peekBody: () => Promise.resolve(Buffer.from('{"jsonrpc":"2.0","id":1,"method":"tasks/get"}')) });
    await route.onRequest!(ex);
    await backend.onRequest!(ex);
    backend.onResponse!(ex, reply('{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"no task"}}'));
    const before = observed.length;
    backend.onLog!(ex, 200);
    route.onLog!(ex, 200);
    assert.equal(observed.length, before + 1);
    assert.deepEqual(observed.at(-1)!.labels, { route: 'r', a2a_method: 'tasks/get', outcome: 'error' });
  });

  it('classifies calls and logs what an in-memory reply says', async () => {
    const p = policy();
    const ex = exchange('POST', '/rpc');
    ex.headers['content-type'] = 'application/json';
    Object.assign(ex, { peekBody: () => Promise.resolve(Buffer.from('{"jsonrpc":"2.0","id":1,"method":"tasks/get"}')) });
    await p.onRequest!(ex);
    p.onResponse!(ex, reply(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { kind: 'task', contextId: 'c', status: { state: 'working' } } })));
    assert.equal(ex.protocol, 'a2a');
    assert.deepEqual(ex.fields, {
      'a2a.method': 'tasks/get',
      'a2a.response.outcome': 'success',
      'a2a.result.kind': 'task',
      'a2a.task.state': 'working',
      'a2a.context.id': 'c',
    });
    const get = exchange('GET', '/a2a/rest/tasks/t-1');
    p.onRequest!(get);
    assert.equal(get.fields['a2a.method'], 'GetTask');
    const other = exchange('GET', '/health');
    p.onRequest!(other);
    assert.deepEqual(other.fields, {});
    assert.equal(other.protocol, 'a2a');
  });
  it('a JSON POST is an A2A call of method unknown while its body is read, named once read; a failed read keeps it', async () => {
    const p = policy();
    let finish: (body: Buffer | undefined) => void = () => undefined;
    const ex = exchange('POST', '/rpc');
    ex.headers['content-type'] = 'application/json';
    Object.assign(ex, { peekBody: () => new Promise<Buffer | undefined>((resolve) => (finish = resolve)) });
    const pending = p.onRequest!(ex);
    // The access log of a client that leaves now is written before the read fails: it must say a2a already.
    assert.equal(ex.protocol, 'a2a');
    assert.equal(ex.fields['a2a.method'], 'unknown');
    finish(Buffer.from('{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}'));
    await pending;
    assert.equal(ex.fields['a2a.method'], 'SendMessage');

    const gone = exchange('POST', '/rpc');
    gone.headers['content-type'] = 'application/json';
    Object.assign(gone, { peekBody: () => Promise.reject(new Error('client closed the connection')) });
    await assert.rejects(Promise.resolve(p.onRequest!(gone)), /client closed/);
    assert.equal(gone.protocol, 'a2a');
    assert.equal(gone.fields['a2a.method'], 'unknown');

    // A body too long to read (undefined): streamed on, method unknown.
    const long = exchange('POST', '/rpc');
    long.headers['content-type'] = 'application/json';
    Object.assign(long, { peekBody: () => Promise.resolve(undefined) });
    await p.onRequest!(long);
    assert.equal(long.fields['a2a.method'], 'unknown');
  });
});
