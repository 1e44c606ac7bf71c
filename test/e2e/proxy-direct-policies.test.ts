// A route whose policies only run synchronous request hooks and edit response headers (header modifiers, CORS,
// localRateLimit) keeps the kernel's direct forward (ADR 0071, issue 15 item 4): the policies edit the upstream's raw
// header list (`onResponseHeaders`) instead of a Reply's header object; so does `transformations` on the response. These tests prove the path (no undici
// `request()` handler per request; the upstream's header order passes through as on the plain route) and that every
// policy still applies: request headers, response headers, CORS on answers, preflights and gateway errors, 429s.
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { definePolicy } from 'switchyard/sdk';
import { startRoutesGateway } from '../helpers/gateway.ts';
import type { RoutesGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { fullPreset } from '../../plugins/presets/full.ts';
import { replyHeaderPolicy, requestHandlersFor, startHttpUpstream, undiciRequestsDuring } from './proxy-support.ts';
import type { HttpUpstream } from './proxy-support.ts';

const ORIGIN = 'https://app.example';

/** A backend request hook that settles later (as `extAuthz` does): sets `x-async` on the request sent upstream. */
const asyncHeader = definePolicy<Record<string, never>>({
  key: 'testAsyncHeader',
  description: 'Test: an asynchronous request hook.',
  schema: { type: 'object', description: 'No settings.', additionalProperties: false },
  attach: ['routePolicies', 'backendPolicies'],
  phase: 'mutate',
  compile: () => ({
    async onRequest(ex) {
      await new Promise((resolve) => setTimeout(resolve, 1));
      ex.headers['x-async'] = 'yes';
    },
  }),
});

const policies = {
  requestHeaderModifier: { add: { 'x-added': 'req' }, set: { 'x-set': 'req' }, remove: ['x-remove-me'] },
  responseHeaderModifier: { add: { 'x-multi': 'gw' }, set: { 'x-served-by': 'switchyard' }, remove: ['x-powered-by'] },
  cors: { allowOrigins: [ORIGIN], allowMethods: ['GET', 'POST'], allowHeaders: ['content-type'], exposeHeaders: ['x-served-by'], maxAge: '600s' },
  localRateLimit: [{ maxTokens: 1_000_000, tokensPerFill: 1_000_000, fillInterval: '1s' }],
};

/** The client's view of an answer: node:http keeps the raw header order, which undici's object does not. */
function get(url: string, headers: Record<string, string> = {}, method = 'GET'): Promise<{ status: number; raw: string[]; headers: IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, raw: res.rawHeaders, headers: res.headers, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** `[name, value]` pairs of the raw list (names lower-cased), without the headers node:http adds itself. */
function pairs(raw: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    if (name !== 'date' && name !== 'connection' && name !== 'keep-alive' && name !== 'transfer-encoding' && name !== 'content-length') out.push(`${name}: ${raw[i + 1]}`);
  }
  return out;
}

describe('direct forwarding on a route with header, CORS and rate-limit policies', () => {
  let gw: RoutesGateway;
  let upstream: HttpUpstream;
  const seen: IncomingHttpHeaders[] = [];

  function handler(req: IncomingMessage, res: ServerResponse): void {
    seen.push(req.headers);
    // Interleaved repeats: the direct path writes them in this order; a Reply's header object groups them by name.
    res.writeHead(200, ['X-Multi', 'up1', 'Content-Type', 'text/plain', 'X-Powered-By', 'upstream', 'X-Multi', 'up2', 'Vary', 'Accept-Encoding', 'Connection', 'X-Hop', 'X-Hop', 'secret']);
    res.end(`hello ${req.url}`);
  }

  before(async () => {
    upstream = await startHttpUpstream(handler);
    const host = upstream.host;
    const closed = `127.0.0.1:${await freePort()}`;
    gw = await startRoutesGateway([
      { name: 'limited', matches: [{ path: { pathPrefix: '/limited' } }], policies: { ...policies, localRateLimit: [{ maxTokens: 1, tokensPerFill: 1, fillInterval: '1h' }] }, backends: [{ host }] },
      { name: 'down', matches: [{ path: { pathPrefix: '/down' } }], policies, backends: [{ host: closed }] },
      { name: 'reply', matches: [{ path: { pathPrefix: '/reply' } }], policies: { ...policies, testReplyHeader: { value: 't' } }, backends: [{ host }] },
      {
        name: 'transform',
        matches: [{ path: { pathPrefix: '/transform' } }],
        policies: { transformations: { response: { add: { 'x-multi': 'request.path' }, set: { 'x-t': '"t"', 'x-bad': 'request.headers["x-missing"]' }, remove: ['x-powered-by'] } } },
        backends: [{ host }],
      },
      {
        name: 'backend',
        matches: [{ path: { pathPrefix: '/backend' } }],
        backends: [
          {
            host,
            policies: {
              authorization: { rules: ['request.headers["x-allow"] == "yes"'] },
              requestHeaderModifier: { set: { 'x-backend': 'b' } },
              responseHeaderModifier: { set: { 'x-backend-answer': 'b' } },
              testAsyncHeader: {},
            },
          },
        ],
      },
      { name: 'policies', policies, backends: [{ host }] },
    ], { preset: [...fullPreset, replyHeaderPolicy, asyncHeader] });
  });
  after(async () => {
    await gw?.stop();
    await upstream?.close();
  });

  it('takes the direct path; a response hook without onResponseHeaders still goes through a Reply', async () => {
    assert.equal(await requestHandlersFor(`${gw.base}/policies/x`, 20, { origin: ORIGIN }), 0);
    assert.equal(await requestHandlersFor(`${gw.base}/transform/x`, 20, { origin: ORIGIN }), 0);
    // The Reply's forward makes no request() handler either since ADR 0156: the hook's header says it ran.
    assert.equal(await requestHandlersFor(`${gw.base}/reply/x`, 20, { origin: ORIGIN }), 0);
    assert.equal((await get(`${gw.base}/reply/x`, { origin: ORIGIN })).headers['x-reply-hook'], 't');
  });

  it('policies on the backend reference: their request hooks (sync and async) run, then the direct forward', async () => {
    const res = await get(`${gw.base}/backend/ok`, { 'x-allow': 'yes' });
    const made = await undiciRequestsDuring(async () => {
      for (let i = 0; i < 10; i++) assert.equal((await get(`${gw.base}/backend/ok`, { 'x-allow': 'yes' })).status, 200);
    });
    assert.equal(made, 0);
    assert.equal(res.status, 200);
    assert.equal(res.headers['x-backend-answer'], 'b');
    const sent = seen.at(-1)!;
    assert.equal(sent['x-backend'], 'b');
    assert.equal(sent['x-async'], 'yes');
    // A backend policy's local answer gets the backend's response hooks.
    const denied = await get(`${gw.base}/backend/no`);
    assert.equal(denied.status, 403);
    assert.equal(denied.headers['x-backend-answer'], 'b');
  });

  it('transformations on the response: CEL values added and set on the raw list, a failing one removes its header', async () => {
    const res = await get(`${gw.base}/transform/t`);
    assert.equal(res.status, 200);
    assert.deepEqual(pairs(res.raw), ['x-multi: up1', 'content-type: text/plain', 'x-multi: up2', 'x-multi: /transform/t', 'vary: Accept-Encoding', 'x-t: t']);
  });

  it('applies every policy to the answer, in the upstream header order', async () => {
    const res = await get(`${gw.base}/policies/a`, { origin: ORIGIN, 'x-remove-me': 'gone', 'x-added': 'client' });
    assert.equal(res.status, 200);
    assert.equal(res.body, 'hello /policies/a');
    assert.deepEqual(pairs(res.raw), [
      'x-multi: up1',
      'content-type: text/plain',
      'x-multi: up2',
      'x-multi: gw', // add: after the name's last value
      'vary: Accept-Encoding, Origin', // cors: caches key on Origin
      'x-served-by: switchyard', // set: a new name at the end
      'access-control-allow-origin: https://app.example', // queued by cors
      'access-control-expose-headers: x-served-by',
    ]);
    // The request side: modified headers, the client's own x-added kept before the added one.
    const sent = seen.at(-1)!;
    assert.equal(sent['x-set'], 'req');
    assert.equal(sent['x-added'], 'client, req');
    assert.equal(sent['x-remove-me'], undefined);
  });

  it('a request without Origin gets no CORS headers; the header policies still apply', async () => {
    const res = await get(`${gw.base}/policies/b`);
    assert.equal(res.status, 200);
    assert.deepEqual(pairs(res.raw), ['x-multi: up1', 'content-type: text/plain', 'x-multi: up2', 'x-multi: gw', 'vary: Accept-Encoding', 'x-served-by: switchyard']);
  });

  it('the same route with a Reply-only hook sends the same header fields (grouped by name)', async () => {
    const direct = await get(`${gw.base}/policies/c`, { origin: ORIGIN });
    const reply = await get(`${gw.base}/reply/c`, { origin: ORIGIN });
    const sorted = (raw: string[]): string[] => pairs(raw).filter((p) => !p.startsWith('x-reply-hook:')).sort();
    assert.deepEqual(sorted(direct.raw), sorted(reply.raw));
    assert.equal(reply.headers['x-reply-hook'], 't');
  });

  it('a preflight is answered by cors, never forwarded', async () => {
    const before = seen.length;
    const res = await get(`${gw.base}/policies/p`, { origin: ORIGIN, 'access-control-request-method': 'POST' }, 'OPTIONS');
    assert.equal(res.status, 200);
    assert.equal(res.headers['access-control-allow-origin'], ORIGIN);
    assert.equal(res.headers['access-control-allow-methods'], 'GET,POST');
    assert.equal(res.headers['access-control-max-age'], '600');
    assert.equal(res.headers['x-served-by'], 'switchyard');
    assert.equal(seen.length, before);
  });

  it('a 429 of localRateLimit carries its headers, CORS and the response modifier', async () => {
    assert.equal((await get(`${gw.base}/limited/1`, { origin: ORIGIN })).status, 200);
    const res = await get(`${gw.base}/limited/2`, { origin: ORIGIN });
    assert.equal(res.status, 429);
    assert.equal(res.headers['x-ratelimit-limit'], '1');
    assert.equal(res.headers['x-ratelimit-remaining'], '0');
    assert.ok(Number(res.headers['retry-after']) > 0);
    assert.equal(res.headers['access-control-allow-origin'], ORIGIN);
    assert.equal(res.headers['x-served-by'], 'switchyard');
    assert.equal((JSON.parse(res.body) as { error: { type: string } }).error.type, 'rate_limited');
  });

  it('an upstream that refuses the connection: the 503 gets the response hooks and CORS headers', async () => {
    const res = await get(`${gw.base}/down/x`, { origin: ORIGIN });
    assert.equal(res.status, 503);
    assert.equal(res.headers['access-control-allow-origin'], ORIGIN);
    assert.equal(res.headers['x-served-by'], 'switchyard');
    assert.equal(res.headers['x-multi'], 'gw');
    assert.equal(res.headers.vary, 'Origin');
  });
});
