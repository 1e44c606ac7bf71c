// A third-party plugin whose hooks fail at request time (ADR 0144): a request hook that throws or rejects answers
// 500, one that never settles answers 504 at `defaultTimeouts.backendRequestTimeout`, a response or log hook that
// throws leaves the answer alone; each failure's log line names the plugin and its package, and the gateway keeps
// serving. A policy that promised `requestStream: false` but reads `ex.req` as a stream on the lean server side gets
// an error saying so, not a request that waits forever.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { Client, request } from 'undici';
import { startRoutesGateway } from '../helpers/gateway.ts';
import type { RoutesGateway } from '../helpers/gateway.ts';
import { testTempDir } from '../helpers/temp-dir.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';

const PLUGIN = `
import { defineBackend, definePolicy } from 'switchyard/sdk';
import { defineGuard, defineLlmProvider } from 'switchyard/slots/ai';
const schema = { type: 'object', additionalProperties: false, properties: {} };
const policy = (key, instance, extra = {}) => definePolicy({ key, description: key, schema, attach: ['routePolicies'], phase: 'mutate', ...extra, compile: () => instance });
export default [
  policy('acmeThrows', { onRequest() { throw new Error('acme hook exploded'); } }),
  policy('acmeRejects', { onRequest: async () => { throw new TypeError('acme async hook exploded'); } }),
  policy('acmeHangs', { onRequest: () => new Promise(() => {}) }),
  policy('acmeBadResponse', { onResponse() { throw new Error('acme response hook exploded'); } }),
  policy('acmeBreaksReply', { onResponse: (ex, reply) => {
    if (ex.path.endsWith('/object-body')) reply.body = { ok: true };
    if (ex.path.endsWith('/async-no-headers')) return Promise.resolve().then(() => { reply.headers = null; });
  } }),
  // Refuses WebSocket upgrades with a reply of its own (the upgrade path runs the response hooks on it).
  policy('acmeRefusesUpgrade', { onRequest: (ex) => (ex.headers.upgrade ? { status: 403, headers: { 'content-type': 'text/plain' }, body: 'no' } : undefined) }),
  policy('acmeBadLog', { onLog() { throw new Error('acme log hook exploded'); } }),
  // Shipping the log somewhere: an async onLog whose promise rejects (ADR 0154).
  policy('acmeAsyncLog', { async onLog() { throw new Error('acme async log hook exploded'); } }),
  policy('acmeAsyncHeaders', {
    onResponse() {},
    async onResponseHeaders() { throw new Error('acme async headers hook exploded'); },
  }),
  policy('acmeStreamReader', {
    onRequest: (ex) => new Promise((resolve, reject) => {
      let n = 0;
      ex.req.on('data', (c) => { n += c.length; });
      ex.req.on('end', () => { ex.headers['x-read'] = String(n); resolve(undefined); });
      ex.req.on('error', reject);
    }),
  }, { requestStream: false }),
  // No promise about streams: ex.req is node:http's request, read here the Node way.
  policy('acmeDrains', {
    onRequest: (ex) => new Promise((resolve) => {
      const chunks = [];
      ex.req.on('data', (c) => chunks.push(c));
      ex.req.on('end', () => {
        if (ex.path.includes('give-back')) ex.setBody(Buffer.concat(chunks));
        resolve(undefined);
      });
    }),
  }),
  policy('acmeBadUpstream', {
    onUpstream(ex) {
      if (ex.path.endsWith('/throw')) throw new Error('acme upstream hook exploded');
      if (ex.path.endsWith('/hang')) return new Promise(() => {});
    },
  }, { phase: 'upstream' }),
  // A route policy choosing the backends per request (ADR 0154): its selector throws or never settles.
  policy('acmeSelector', { selectBackends: () => (ex) => {
    if (ex.path.endsWith('/throw')) throw new Error('acme selector exploded');
    if (ex.path.endsWith('/hang')) return new Promise(() => {});
    if (ex.path.endsWith('/name')) return 'first';
    return undefined;
  } }),
  // Not replies (ADR 0154): what a JavaScript author may return from a hook or a backend.
  policy('acmeNotAReply', { onRequest: (ex) => {
    if (ex.path.endsWith('/true')) return true;
    if (ex.path.endsWith('/no-headers')) return { status: 403 };
    if (ex.path.endsWith('/async')) return Promise.resolve({ status: 403, headers: {}, body: { denied: true } });
    return undefined;
  } }),
  // An admin endpoint (ADR 0154): one request throws with a secret in its message.
  definePolicy({ key: 'acmeAdmin', description: 'x', schema, attach: ['routePolicies'], phase: 'mutate', compile: (_c, ctx) => {
    ctx.adminRoute('/acme', (req) => {
      if (req.subpath === '/throw') throw new Error('acme admin exploded token=hunter2');
      if (req.subpath === '/hang') return new Promise(() => {});
      return { status: 200, body: { ok: true } };
    });
    return {};
  } }),
  defineLlmProvider({ key: 'acmeProvider', description: 'x', schema, compile: () => ({
    kind: 'acme',
    model: undefined,
    origin: 'http://127.0.0.1:9',
    wireFormat: (client) => client,
    path: () => '/v1/chat/completions',
    prepareHeaders() { throw new Error('acme provider exploded'); },
  }) }),
  defineGuard({ key: 'acmeGuardHangs', description: 'x', schema, compile: () => ({ check: () => new Promise(() => {}) }) }),
  defineGuard({ key: 'acmeGuardAllows', description: 'x', schema, compile: () => ({ check: () => ({ action: 'allow' }) }) }),
  // A backend reading the request body from ex.req itself, then forwarding (ADR 0155): handed back with ex.setBody
  // only on /give-back.
  defineBackend({ key: 'acmeReadsBody', description: 'x', schema: { type: 'string' }, compile: (origin, ctx) => {
    const upstream = ctx.http.target({ origin });
    return {
      protocol: 'http',
      handle: (ex) => new Promise((resolve, reject) => {
        const chunks = [];
        // On /first-chunk it forwards after the first chunk, the rest of the body still coming.
        let forwarded = false;
        const forward = () => {
          if (forwarded) return;
          forwarded = true;
          upstream.forward(ex).then(resolve, reject);
        };
        ex.req.on('data', (c) => {
          chunks.push(c);
          if (ex.path.endsWith('/first-chunk')) forward();
        });
        ex.req.on('end', () => {
          if (ex.path.endsWith('/give-back')) ex.setBody(Buffer.concat(chunks));
          forward();
        });
      }),
    };
  } }),
  defineBackend({ key: 'acmeBackend', description: 'x', schema, compile: () => ({
    protocol: 'http',
    handle(ex) {
      if (ex.path.endsWith('/throw')) throw new Error('acme backend exploded');
      if (ex.path.endsWith('/hang')) return new Promise(() => {});
      if (ex.path.endsWith('/web-stream')) return { status: 200, headers: {}, body: new ReadableStream() };
      return { status: 200, headers: { 'content-type': 'text/plain' }, body: 'acme' };
    },
    // Typed void; JavaScript lets it throw or be async (ADR 0155).
    upgrade(ex) {
      if (ex.path.endsWith('/upgrade-throw')) throw new Error('acme upgrade exploded');
      return Promise.reject(new Error('acme async upgrade exploded'));
    },
  }) }),
];
`;

describe('third-party plugin hooks that fail at request time', () => {
  let upstream: TestUpstream;
  let gw: RoutesGateway;

  before(async () => {
    const dir = testTempDir('switchyard-acme-');
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'acme-failing', version: '1.2.3', type: 'module' }));
    writeFileSync(join(dir, 'index.js'), PLUGIN);
    upstream = await startUpstream();
    const route = (name: string, policies: Record<string, unknown>): Record<string, unknown> => ({
      name,
      matches: [{ path: { pathPrefix: `/${name}` } }],
      policies,
      backends: [{ host: `127.0.0.1:${upstream.port}` }],
    });
    const llmRoute = (name: string, guard: string): Record<string, unknown> => ({
      name,
      matches: [{ path: { pathPrefix: `/${name}` } }],
      policies: { ai: { routes: { '*': 'completions' }, promptGuard: { request: [{ [guard]: {} }] } } },
      backends: [{ ai: { name, provider: { openAI: {} }, hostOverride: `127.0.0.1:${upstream.port}` } }],
    });
    gw = await startRoutesGateway(
      [
        route('throws', { acmeThrows: {} }),
        route('rejects', { acmeRejects: {} }),
        route('hangs', { acmeHangs: {} }),
        route('hangs-with-timeout', { acmeHangs: {}, timeout: { requestTimeout: '300ms' } }),
        route('response', { acmeBadResponse: {} }),
        route('log', { acmeBadLog: {} }),
        route('async-log', { acmeAsyncLog: {} }),
        route('async-headers', { acmeAsyncHeaders: {} }),
        route('stream', { acmeStreamReader: {} }),
        route('drains', { acmeDrains: {} }),
        route('upstream-hook', { acmeBadUpstream: {} }),
        { name: 'backend', matches: [{ path: { pathPrefix: '/backend' } }], backends: [{ acmeBackend: {} }] },
        { name: 'reads-body', matches: [{ path: { pathPrefix: '/reads-body' } }], backends: [{ acmeReadsBody: `http://127.0.0.1:${upstream.port}` }] },
        route('selector', { acmeSelector: {}, acmeAdmin: {} }),
        route('not-a-reply', { acmeNotAReply: {} }),
        route('breaks-reply', { acmeBreaksReply: {} }),
        route('upgrade-breaks', { acmeRefusesUpgrade: {}, acmeBreaksReply: {} }),
        {
          name: 'provider',
          matches: [{ path: { pathPrefix: '/provider' } }],
          backends: [{ ai: { name: 'provider', provider: { acmeProvider: {} }, hostOverride: `127.0.0.1:${upstream.port}` } }],
        },
        llmRoute('guard-hangs', 'acmeGuardHangs'),
        llmRoute('guard-allows', 'acmeGuardAllows'),
      ],
      { config: { plugins: [join(dir, 'index.js')], defaultTimeouts: { backendRequestTimeout: '700ms' }, adminUi: { endpointTimeout: '500ms' } } },
    );
  });

  after(async () => {
    await gw?.stop();
    await upstream?.close();
  });

  const get = async (path: string, body?: string): Promise<{ status: number; body: string }> => {
    const res = await request(`${gw.base}${path}`, { method: body === undefined ? 'GET' : 'POST', body, headersTimeout: 10_000 });
    return { status: res.statusCode, body: await res.body.text() };
  };
  /** The log lines holding every one of `parts`, once the first one is there (the sink writes in batches). */
  const linesWith = async (...parts: string[]): Promise<string[]> => {
    const pick = (): string[] => gw.logs.filter((l) => parts.every((p) => l.includes(p)));
    for (let i = 0; i < 100 && pick().length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    return pick();
  };
  const errorLines = (text: string): Promise<string[]> => linesWith('ERROR', text);
  /** The head of the answer to a WebSocket upgrade request for `path`, on a connection of its own. */
  const upgradeHead = (path: string): Promise<string> =>
    new Promise<string>((resolve, reject) => {
      const socket = connect(gw.port, '127.0.0.1', () => {
        socket.write(`GET ${path} HTTP/1.1\r\nHost: gw\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`);
      });
      let text = '';
      socket.setEncoding('latin1');
      socket.on('data', (chunk: string) => {
        text += chunk;
        if (text.includes('\r\n\r\n')) {
          socket.destroy();
          resolve(text);
        }
      });
      socket.on('error', reject);
      socket.on('close', () => resolve(text));
    });
  const namesPlugin = (line: string | undefined, key: string): void => {
    assert.ok(line, 'an error line was logged');
    assert.match(line, new RegExp(`plugin=${key}\\b`), line);
    assert.match(line, /package=acme-failing@1\.2\.3/, line);
  };

  it('a request hook that throws answers 500 and the log names the plugin', async () => {
    const res = await get('/throws');
    assert.equal(res.status, 500);
    assert.doesNotMatch(res.body, /acme/);
    namesPlugin((await errorLines('acme hook exploded'))[0], 'acmeThrows');
  });

  it('a request hook that rejects answers 500 and the log names the plugin', async () => {
    assert.equal((await get('/rejects')).status, 500);
    namesPlugin((await errorLines('acme async hook exploded'))[0], 'acmeRejects');
  });

  it('a request hook that never settles answers 504 at the default backend request timeout, naming the plugin', async () => {
    const started = performance.now();
    const res = await get('/hangs');
    const took = performance.now() - started;
    assert.equal(res.status, 504);
    assert.ok(took >= 600 && took < 5000, `answered after ${took} ms`);
    assert.match(JSON.parse(res.body).error.type, /timeout/);
    namesPlugin((await errorLines('did not settle'))[0], 'acmeHangs');
    // Nothing reached the upstream, and the gateway still serves.
    assert.equal((await get('/response')).status, 200);
  });

  it("a route's own timeout policy still decides when it has one", async () => {
    const started = performance.now();
    assert.equal((await get('/hangs-with-timeout')).status, 504);
    assert.ok(performance.now() - started < 650);
  });

  it('a response hook or log hook that throws leaves the answer alone; the log names the plugin', async () => {
    assert.equal((await get('/response')).status, 200);
    namesPlugin((await errorLines('acme response hook exploded'))[0], 'acmeBadResponse');
    assert.equal((await get('/log')).status, 200);
    namesPlugin((await errorLines('acme log hook exploded'))[0], 'acmeBadLog');
  });

  it('an async log hook whose promise rejects is logged naming the plugin, not an unhandled rejection (ADR 0154)', async () => {
    assert.equal((await get('/async-log')).status, 200);
    namesPlugin((await errorLines('acme async log hook exploded'))[0], 'acmeAsyncLog');
    // The same for an async onResponseHeaders (typed synchronous; JavaScript does not check).
    assert.equal((await get('/async-headers')).status, 200);
    namesPlugin((await errorLines('acme async headers hook exploded'))[0], 'acmeAsyncHeaders');
    assert.equal((await get('/response')).status, 200);
  });

  it('a policy that promised requestStream: false yet reads ex.req as a stream gets an error, not a wait', async () => {
    // A connection's first request is the lean side's when its route allows (ADR 0088): a fresh connection.
    const client = new Client(gw.base);
    try {
      const res = await client.request({ path: '/stream', method: 'POST', body: 'hello', headersTimeout: 10_000 });
      await res.body.text();
      assert.equal(res.statusCode, 500);
    } finally {
      await client.close();
    }
    const line = (await errorLines('requestStream'))[0];
    namesPlugin(line, 'acmeStreamReader');
    assert.match(line!, /bufferBody/);
  });

  it('a policy that drains ex.req without ex.setBody gets a 500 saying so, not a request that waits forever', async () => {
    const before = upstream.received.length;
    const res = await get('/drains', 'hello');
    assert.equal(res.status, 500);
    assert.ok(gw.logs.some((l) => l.includes('path=/drains') && /setBody/.test(l)), 'the access log says why');
    // Past 64 KiB (a body the forward streams), the same: not an ended stream sent upstream (ADR 0155).
    assert.equal((await get('/drains', 'z'.repeat(100 * 1024))).status, 500);
    assert.equal(upstream.received.length, before);
    // Handed back with ex.setBody, the body goes upstream.
    assert.equal((await get('/drains/give-back', 'hello')).status, 200);
    assert.equal(upstream.received.at(-1)!.body.toString(), 'hello');
  });

  it("a backend whose handle() throws answers 500 and the log names it; one that never answers is a 504", async () => {
    assert.deepEqual(await get('/backend/ok'), { status: 200, body: 'acme' });
    assert.equal((await get('/backend/throw')).status, 500);
    namesPlugin((await errorLines('acme backend exploded'))[0], 'acmeBackend');
    const started = performance.now();
    assert.equal((await get('/backend/hang')).status, 504);
    assert.ok(performance.now() - started < 5000);
    namesPlugin((await errorLines('did not answer'))[0], 'acmeBackend');
    assert.deepEqual(await get('/backend/ok'), { status: 200, body: 'acme' });
  });

  it('a backend that reads ex.req itself and forwards without ex.setBody answers 500 naming it; nothing is sent upstream (ADR 0155)', async () => {
    const before = upstream.received.length;
    for (const size of [100 * 1024, 1024]) {
      const started = performance.now();
      const res = await get('/reads-body', 'x'.repeat(size));
      assert.equal(res.status, 500, `${size} bytes`);
      assert.ok(performance.now() - started < 5000);
      const lines = await linesWith('ERROR', 'backend failed', 'setBody');
      assert.equal(lines.length, size === 1024 ? 2 : 1, lines.join('\n'));
      namesPlugin(lines.at(-1), 'acmeReadsBody');
    }
    // Forwarding with the rest of the body still to come: the part read is gone, so nothing is sent either.
    const res = await request(`${gw.base}/reads-body/first-chunk`, {
      method: 'POST',
      headers: { 'content-length': String(4096) },
      body: Readable.from(
        (async function* () {
          yield Buffer.alloc(1024, 'a');
          await new Promise((r) => setTimeout(r, 100));
          yield Buffer.alloc(3072, 'b');
        })(),
      ),
    });
    await res.body.dump();
    assert.equal(res.statusCode, 500);
    namesPlugin((await linesWith('ERROR', 'backend failed', 'setBody')).at(-1), 'acmeReadsBody');
    assert.equal(upstream.received.length, before);
    // Handed back, the whole body goes upstream, streamed past 64 KiB or not.
    assert.equal((await get('/reads-body/give-back', 'y'.repeat(100 * 1024))).status, 200);
    assert.equal(upstream.received.at(-1)!.body.length, 100 * 1024);
  });

  it('an onUpstream hook that throws answers 500 naming the plugin; one that never settles is a 504; nothing is sent', async () => {
    const before = upstream.received.length;
    assert.equal((await get('/upstream-hook/throw')).status, 500);
    namesPlugin((await linesWith('ERROR', 'upstream hook failed', 'acme upstream hook exploded'))[0], 'acmeBadUpstream');
    const started = performance.now();
    assert.equal((await get('/upstream-hook/hang')).status, 504);
    assert.ok(performance.now() - started < 5000);
    namesPlugin((await linesWith('ERROR', 'did not settle its upstream hook'))[0], 'acmeBadUpstream');
    assert.equal(upstream.received.length, before);
    assert.equal((await get('/upstream-hook/ok')).status, 200);
  });

  it('a backend selector that throws answers 500 naming the plugin; one that never settles is a 504 at the hook deadline (ADR 0154)', async () => {
    const before = upstream.received.length;
    assert.equal((await get('/selector/ok')).status, 200);
    assert.equal((await get('/selector/throw')).status, 500);
    namesPlugin((await linesWith('ERROR', 'backend selector failed', 'acme selector exploded'))[0], 'acmeSelector');
    const started = performance.now();
    const res = await get('/selector/hang');
    const took = performance.now() - started;
    assert.equal(res.status, 504);
    assert.ok(took >= 600 && took < 5000, `answered after ${took} ms`);
    namesPlugin((await linesWith('ERROR', 'did not settle its backend selector'))[0], 'acmeSelector');
    assert.equal(upstream.received.length, before + 1);
  });

  it('a hook, selector or backend returning what is not a reply answers 500 naming the plugin; the gateway keeps serving (ADR 0154)', async () => {
    for (const [path, key, stage] of [
      ['/not-a-reply/true', 'acmeNotAReply', 'request hook'],
      ['/not-a-reply/no-headers', 'acmeNotAReply', 'request hook'],
      ['/not-a-reply/async', 'acmeNotAReply', 'request hook'],
      ['/selector/name', 'acmeSelector', 'backend selector'],
      ['/backend/web-stream', 'acmeBackend', 'backend'],
    ] as const) {
      const before = gw.logs.filter((l) => l.includes('not a reply')).length;
      const res = await get(path);
      assert.equal(res.status, 500, path);
      for (let i = 0; i < 100 && gw.logs.filter((l) => l.includes('not a reply')).length === before; i++) await new Promise((r) => setTimeout(r, 20));
      const line = gw.logs.filter((l) => l.includes('not a reply'))[before];
      assert.match(line ?? '', new RegExp(`ERROR +${stage} failed`), path);
      namesPlugin(line, key);
      assert.equal((await get('/response')).status, 200, `the gateway still serves after ${path}`);
    }
  });

  it('a response hook that leaves the reply unwritable answers 500 naming the plugin; the gateway keeps serving (ADR 0154)', async () => {
    assert.equal((await get('/breaks-reply/fine')).status, 200);
    for (const path of ['/breaks-reply/object-body', '/breaks-reply/async-no-headers']) {
      const res = await get(path);
      assert.equal(res.status, 500, path);
      assert.equal((await get('/response')).status, 200, `the gateway still serves after ${path}`);
    }
    const lines = await linesWith('ERROR', 'response hook failed', 'not a reply');
    assert.equal(lines.length, 2, lines.join('\n'));
    for (const line of lines) namesPlugin(line, 'acmeBreaksReply');
  });

  it("a backend's upgrade that throws or rejects answers 500 naming it, not an unhandled rejection (ADR 0155)", async () => {
    for (const [path, message] of [['/backend/upgrade-throw', 'acme upgrade exploded'], ['/backend/upgrade-reject', 'acme async upgrade exploded']]) {
      const head = await upgradeHead(path!);
      assert.match(head, /^HTTP\/1\.1 500 /, head);
      namesPlugin((await linesWith('ERROR', 'backend failed', message!))[0], 'acmeBackend');
    }
    assert.equal((await get('/response')).status, 200, 'the gateway still serves');
  });

  it("a response hook leaving an upgrade's early reply unwritable after its promise answers 500, not an unhandled rejection (ADR 0155)", async () => {
    const head = await upgradeHead('/upgrade-breaks/async-no-headers');
    assert.match(head, /^HTTP\/1\.1 500 /, head);
    namesPlugin((await linesWith('ERROR', 'response hook failed', 'headers null')).at(-1), 'acmeBreaksReply');
    assert.equal((await get('/response')).status, 200, 'the gateway still serves');
  });

  it('an admin endpoint whose handler throws answers 500 without its message; the log names the plugin (ADR 0154)', async () => {
    const ok = await request(`${gw.adminUrl}/acme/fine`);
    assert.equal(ok.statusCode, 200);
    await ok.body.dump();
    const res = await request(`${gw.adminUrl}/acme/throw`);
    const body = await res.body.text();
    assert.equal(res.statusCode, 500);
    assert.doesNotMatch(body, /hunter2|exploded/);
    assert.equal(JSON.parse(body).error.message, 'internal error');
    namesPlugin((await linesWith('ERROR', 'admin endpoint failed', 'acme admin exploded'))[0], 'acmeAdmin');
  });

  it('an admin endpoint that never answers is a 504 at `adminUi.endpointTimeout`, naming the plugin (ADR 0155)', async () => {
    const started = performance.now();
    const res = await request(`${gw.adminUrl}/acme/hang`, { headersTimeout: 10_000 });
    const took = performance.now() - started;
    assert.equal(res.statusCode, 504);
    assert.equal(JSON.parse(await res.body.text()).error.message, 'the endpoint did not answer within 0.5s');
    assert.ok(took >= 450 && took < 5000, `answered after ${took} ms`);
    namesPlugin((await linesWith('ERROR', 'admin endpoint did not answer within 500ms'))[0], 'acmeAdmin');
  });

  it('an LLM provider whose method throws per request answers 500; the log names the provider (ADR 0154)', async () => {
    const chat = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hello' }] });
    const res = await request(`${gw.base}/provider/v1/chat/completions`, { method: 'POST', body: chat, headers: { 'content-type': 'application/json' } });
    const body = await res.body.text();
    assert.equal(res.statusCode, 500);
    assert.doesNotMatch(body, /acme/);
    namesPlugin((await linesWith('ERROR', 'acme provider exploded'))[0], 'acmeProvider');
  });

  describe('a prompt guard of the package (the `ai` policy fails closed, BEHAVIOUR.md 2.9)', () => {
    const chat = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hello' }] });
    const post = async (path: string): Promise<number> => {
      const res = await request(`${gw.base}${path}`, { method: 'POST', body: chat, headers: { 'content-type': 'application/json' }, headersTimeout: 30_000 });
      await res.body.dump();
      return res.statusCode;
    };

    it('a verdict that is not pass, mask or reject is a 503, not a pass; the provider is not called', async () => {
      const before = upstream.received.length;
      assert.equal(await post('/guard-allows/v1/chat/completions'), 503);
      assert.equal(upstream.received.length, before);
      const [line] = await linesWith('WARN', 'prompt guard failed', 'guard=acmeGuardAllows');
      assert.ok(line, 'a warn line names the guard');
      assert.match(line, /allow.* is not `pass`, `mask` or `reject`/);
      // and its package, as a hook's or a backend's failure does (session 26: the guard's key only).
      assert.match(line, /package=acme-failing@1\.2\.3/, line);
    });

    it('a check that never settles is a 503 at the guard deadline (10 s), not a request held until the client leaves', async () => {
      const started = performance.now();
      assert.equal(await post('/guard-hangs/v1/chat/completions'), 503);
      const took = performance.now() - started;
      assert.ok(took >= 9_500 && took < 20_000, `answered after ${took} ms`);
      assert.match((await linesWith('WARN', 'prompt guard failed', 'guard=acmeGuardHangs'))[0] ?? '', /no verdict within 10s/);
    });
  });
});
