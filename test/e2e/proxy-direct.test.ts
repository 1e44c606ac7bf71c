// The plain `host` route forwards through undici's dispatch API straight into the client's response (ADR 0051,
// issue 15 item 2): no `request()` handler, no Readable body, no promise per request. These tests pin that down
// and the edges that path handles itself: informational answers, the route's request timeout before and during
// the answer, an upstream that breaks off its body, a client that leaves, and the fallback for routes whose
// response hooks need the reply as an object.
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { startRoutesGateway } from '../helpers/gateway.ts';
import type { RoutesGateway } from '../helpers/gateway.ts';
import { fullPreset } from '../../plugins/presets/full.ts';
import { replyHeaderPolicy, requestHandlersFor, sleep, startHttpUpstream, waitFor, within } from './proxy-support.ts';
import type { HttpUpstream } from './proxy-support.ts';

describe('direct forwarding on the plain host route', () => {
  let gw: RoutesGateway;
  let upstream: HttpUpstream;
  /** Requests the upstream saw end before it answered them (the gateway gave up on them). */
  const abandoned: string[] = [];

  function handler(req: IncomingMessage, res: ServerResponse): void {
    const path = req.url ?? '/';
    req.on('close', () => {
      if (!res.writableFinished) abandoned.push(path);
    });
    if (path.includes('early-hints')) {
      res.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' });
      setTimeout(() => res.writeHead(200, { 'content-type': 'text/plain', 'x-final': 'yes' }).end('after hints'), 20);
    } else if (path.includes('never')) {
      // Never answers: the route's request timeout must cut it.
    } else if (path.includes('trickle')) {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first ');
      // ...and nothing more: the route's request timeout fires mid-body.
    } else if (path.startsWith('/break')) {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '1000' });
      res.write('only part of it');
      setTimeout(() => req.socket.destroy(), 30);
    } else {
      res.writeHead(200, { 'content-type': 'text/plain', 'x-upstream': 'plain' }).end(`hello ${path}`);
    }
  }

  before(async () => {
    upstream = await startHttpUpstream(handler);
    const host = upstream.host;
    gw = await startRoutesGateway([
      { name: 'timed', matches: [{ path: { pathPrefix: '/timed' } }], policies: { timeout: { requestTimeout: '300ms' } }, backends: [{ host }] },
      {
        name: 'hooked',
        matches: [{ path: { pathPrefix: '/hooked' } }],
        // A response hook with no `onResponseHeaders` (header edits alone keep the direct path: ADR 0071).
        policies: { testReplyHeader: { value: 'yes' } },
        backends: [{ host }],
      },
      { name: 'plain', backends: [{ host }] },
    ], { preset: [...fullPreset, replyHeaderPolicy] });
  });
  after(async () => {
    await gw?.stop();
    await upstream?.close();
  });

  it('a plain route forwards without a request() handler per request; a route with response hooks (a Reply) neither, since ADR 0156', async () => {
    assert.equal(await requestHandlersFor(`${gw.base}/plain/x`, 20), 0);
    assert.equal(await requestHandlersFor(`${gw.base}/hooked/x`, 20), 0);
    const res = await request(`${gw.base}/hooked/y`);
    assert.equal(res.headers['x-reply-hook'], 'yes');
    assert.equal(await res.body.text(), 'hello /hooked/y');
  });

  it('the answer comes back whole: status, headers, body, and the access log line', async () => {
    const res = await request(`${gw.base}/plain/whole`, { method: 'POST', body: 'ping', headers: { 'x-request-id': 'direct-whole' } });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['x-upstream'], 'plain');
    assert.equal(res.headers['content-type'], 'text/plain');
    assert.equal(await res.body.text(), 'hello /plain/whole');
    await waitFor(() => gw.logs.some((l) => /request\.id=direct-whole/.test(l)), 2000, 'the access log line');
    const line = gw.logs.find((l) => /request\.id=direct-whole/.test(l))!;
    assert.match(line, /http\.status=200/);
    assert.doesNotMatch(line, / error=/);
  });

  it('an informational answer (103 Early Hints) is not relayed as the answer: the final 200 is', async () => {
    const res = await request(`${gw.base}/early-hints`);
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['x-final'], 'yes');
    assert.equal(await res.body.text(), 'after hints');
  });

  it('the route request timeout before the answer: 504 request_timeout, and the upstream request is given up', async () => {
    const res = await within(request(`${gw.base}/timed/never`, { headers: { 'x-request-id': 'direct-never' } }), 5000, 'the timeout answer');
    assert.equal(res.statusCode, 504);
    assert.equal(((await res.body.json()) as { error: { type: string } }).error.type, 'request_timeout');
    await waitFor(() => abandoned.includes('/timed/never'), 5000, 'the upstream request to be closed');
    await waitFor(() => gw.logs.some((l) => /request\.id=direct-never/.test(l)), 2000, 'the access log line');
    assert.match(gw.logs.find((l) => /request\.id=direct-never/.test(l))!, /http\.status=504/);
  });

  it('the route request timeout mid-body: the client sees a truncated answer, the log says why', async () => {
    const res = await within(request(`${gw.base}/timed/trickle`, { headers: { 'x-request-id': 'direct-trickle' } }), 5000, 'the head');
    assert.equal(res.statusCode, 200);
    await assert.rejects(within(res.body.text(), 5000, 'the truncated body'), (err: Error) => !/nothing after/.test(err.message));
    await waitFor(() => abandoned.includes('/timed/trickle'), 5000, 'the upstream request to be closed');
    await waitFor(() => gw.logs.some((l) => /request\.id=direct-trickle/.test(l)), 2000, 'the access log line');
    assert.match(gw.logs.find((l) => /request\.id=direct-trickle/.test(l))!, /error="?request timeout while streaming the response/);
  });

  it('an upstream that breaks off its body: the client sees a truncated answer, the log says the upstream failed', async () => {
    const res = await within(request(`${gw.base}/break`, { headers: { 'x-request-id': 'direct-break' } }), 5000, 'the head');
    assert.equal(res.statusCode, 200);
    await assert.rejects(within(res.body.text(), 5000, 'the truncated body'), (err: Error) => !/nothing after/.test(err.message));
    await waitFor(() => gw.logs.some((l) => /request\.id=direct-break/.test(l)), 2000, 'the access log line');
    assert.match(gw.logs.find((l) => /request\.id=direct-break/.test(l))!, /error="?upstream stream failed/);
    // The gateway still serves.
    const next = await request(`${gw.base}/plain/afterwards`);
    assert.equal(await next.body.text(), 'hello /plain/afterwards');
  });

  it('a client that leaves mid-body makes the gateway give up the upstream request', async () => {
    const controller = new AbortController();
    const res = await within(request(`${gw.base}/trickle-left`, { signal: controller.signal }), 5000, 'the head');
    assert.equal(res.statusCode, 200);
    res.body.on('error', () => undefined);
    await sleep(20);
    controller.abort();
    await waitFor(() => abandoned.includes('/trickle-left'), 5000, 'the upstream request to be closed');
  });
});
