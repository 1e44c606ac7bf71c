import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Readable } from 'node:stream';
import { request } from 'undici';
import { oneListenerConfig, startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { RawClient } from './proxy-support.ts';

/** Upstream behaviour scripted per request count on a path: each entry is what the nth request gets. */
type Step = { status?: number; delayMs?: number; reset?: boolean };

describe('timeout and retry', () => {
  let gw: RunningGateway;
  let port: number;
  let upstream: TestUpstream;
  const scripts = new Map<string, Step[]>();
  const counts = new Map<string, number>();

  before(async () => {
    port = await freePort();
    upstream = await startUpstream((req, res, body) => {
      const path = req.url!.split('?')[0]!;
      const n = counts.get(path) ?? 0;
      counts.set(path, n + 1);
      const script = scripts.get(path) ?? [];
      const step = script[Math.min(n, script.length - 1)] ?? {};
      if (step.reset) {
        req.socket.destroy();
        return;
      }
      const send = () => {
        if (res.destroyed) return;
        res.writeHead(step.status ?? 200, { 'content-type': 'text/plain' });
        res.end(`attempt ${n} len ${body.length}`);
      };
      if (step.delayMs) setTimeout(send, step.delayMs);
      else send();
    });
    const route = (name: string, policies: Record<string, unknown>) => ({
      name,
      matches: [{ path: { pathPrefix: `/${name}` } }],
      policies,
      backends: [{ host: `127.0.0.1:${upstream.port}` }],
    });
    gw = await startGateway(oneListenerConfig(port, [
      route('request-timeout', { timeout: { requestTimeout: '150ms' } }),
      route('attempt-timeout', { timeout: { backendRequestTimeout: '100ms' } }),
      route('retry-codes', { retry: { attempts: 2, codes: [503] } }),
      route('retry-exhausted', { retry: { attempts: 2, codes: [502] } }),
      route('retry-reset', { retry: { attempts: 1, codes: [] } }),
      // 400 ms per attempt: the second attempt's answer must beat it on a loaded machine too (100 ms was flaky there).
      route('retry-timeout', { retry: { attempts: 1, codes: [] }, timeout: { backendRequestTimeout: '400ms' } }),
      route('retry-bounded', { retry: { attempts: 10, codes: [] }, timeout: { requestTimeout: '300ms', backendRequestTimeout: '100ms' } }),
      route('retry-big-body', { retry: { attempts: 3, codes: [503] } }),
      route('retry-storm', { retry: { attempts: 3, codes: [503] } }),
      route('retry-chunked', { retry: { attempts: 2, codes: [503] }, timeout: { streamIdleTimeout: '1s' } }),
      {
        name: 'retry-chunked-two',
        matches: [{ path: { pathPrefix: '/retry-chunked-two' } }],
        policies: { retry: { attempts: 1, codes: [503] } },
        backends: [{ host: `127.0.0.1:${upstream.port}` }, { host: `localhost:${upstream.port}` }],
      },
      // A backoff past the request deadline, with and without a per-attempt deadline.
      route('retry-backoff-late', { retry: { attempts: 2, codes: [503], backoff: '600ms' }, timeout: { requestTimeout: '200ms', backendRequestTimeout: '5s' } }),
      route('retry-backoff-plain', { retry: { attempts: 2, codes: [503], backoff: '600ms' }, timeout: { requestTimeout: '200ms' } }),
    ]));
  });
  after(async () => {
    await gw.stop();
    await upstream.close();
  });

  const call = async (path: string, body?: string | Buffer, headers?: Record<string, string>) => {
    const started = performance.now();
    const res = await request(`${gw.url(port)}${path}`, { method: body ? 'POST' : 'GET', body, headers });
    const text = await res.body.text();
    return { status: res.statusCode, text, ms: performance.now() - started };
  };
  const received = (path: string) => upstream.received.filter((r) => r.url.startsWith(path));

  it('requestTimeout answers 504 at the deadline', async () => {
    scripts.set('/request-timeout', [{ delayMs: 1000 }]);
    const r = await call('/request-timeout');
    assert.equal(r.status, 504);
    assert.equal(JSON.parse(r.text).error.type, 'request_timeout');
    assert.ok(r.ms >= 140 && r.ms < 800, `took ${r.ms}ms`);
  });

  it('backendRequestTimeout answers 504 per attempt', async () => {
    scripts.set('/attempt-timeout', [{ delayMs: 1000 }]);
    const r = await call('/attempt-timeout');
    assert.equal(r.status, 504);
    assert.equal(JSON.parse(r.text).error.type, 'upstream_timeout');
    assert.ok(r.ms >= 90 && r.ms < 800, `took ${r.ms}ms`);
  });

  it('retries listed statuses, replaying the body, with an x-retry-attempt counter', async () => {
    scripts.set('/retry-codes', [{ status: 503 }, { status: 503 }, { status: 200 }]);
    // A client's own counter is not passed on: the upstream would take the first try for a retry.
    const r = await call('/retry-codes', 'payload-123', { 'x-retry-attempt': '9' });
    assert.equal(r.status, 200);
    assert.equal(r.text, 'attempt 2 len 11');
    const got = received('/retry-codes');
    assert.equal(got.length, 3);
    assert.deepEqual(got.map((g) => g.body.toString()), ['payload-123', 'payload-123', 'payload-123']);
    assert.deepEqual(got.map((g) => g.headers['x-retry-attempt']), [undefined, '1', '2']);
    assert.ok(gw.logs.some((l) => l.includes('route=retry-codes') && l.includes('retry.attempt=2')), 'the access log shows the retry count');
  });

  it('returns the last upstream answer when retries are exhausted (attempts = retries after the first try)', async () => {
    scripts.set('/retry-exhausted', [{ status: 502 }]);
    const r = await call('/retry-exhausted');
    assert.equal(r.status, 502);
    assert.equal(received('/retry-exhausted').length, 3);
  });

  it('retries a dropped connection', async () => {
    scripts.set('/retry-reset', [{ reset: true }, { status: 200 }]);
    const r = await call('/retry-reset');
    assert.equal(r.status, 200);
    assert.equal(received('/retry-reset').length, 2);
  });

  it('retries a backend timeout', async () => {
    scripts.set('/retry-timeout', [{ delayMs: 2000 }, { status: 200 }]);
    const r = await call('/retry-timeout');
    assert.equal(r.status, 200);
    assert.equal(r.text, 'attempt 1 len 0');
  });

  it('retries stay inside the request timeout', async () => {
    scripts.set('/retry-bounded', [{ delayMs: 1000 }]);
    const r = await call('/retry-bounded');
    assert.equal(r.status, 504);
    assert.ok(r.ms >= 280 && r.ms < 900, `took ${r.ms}ms`);
    assert.ok(received('/retry-bounded').length <= 4);
  });

  it('does not retry a body over the replay buffer', async () => {
    scripts.set('/retry-big-body', [{ status: 503 }]);
    const r = await call('/retry-big-body', Buffer.alloc(100 * 1024, 1));
    assert.equal(r.status, 503);
    assert.equal(received('/retry-big-body').length, 1);
    assert.equal(received('/retry-big-body')[0]!.body.length, 100 * 1024);
  });

  for (const name of ['retry-backoff-late', 'retry-backoff-plain']) {
    it(`no retry is sent after the request deadline answered the client during the backoff (${name})`, async () => {
      scripts.set(`/${name}`, [{ status: 503 }]);
      const r = await call(`/${name}`, 'not-idempotent');
      assert.equal(r.status, 504);
      assert.ok(r.ms < 550, `took ${r.ms}ms`);
      // Past the backoff: the client was answered 504, so a POST sent again now would be a side effect it never sees.
      await new Promise((resolve) => setTimeout(resolve, 900));
      assert.equal(received(`/${name}`).length, 1);
    });
  }

  it('a failing upstream gets at most 20% more requests in retries, never fewer than 3 at once', async () => {
    // Envoy's retry budget defaults: without one, 40 clients made 40 x (attempts + 1) requests of a failing upstream.
    scripts.set('/retry-storm', [{ status: 503, delayMs: 150 }]);
    const answers = await Promise.all(Array.from({ length: 40 }, () => call('/retry-storm')));
    assert.ok(answers.every((a) => a.status === 503));
    const sent = received('/retry-storm').length;
    // 40 first tries; at most max(3, 20% of 40) = 8 requests retrying at once, each up to 3 times.
    assert.ok(sent >= 40 + 3 && sent <= 40 + 8 * 3, `${sent} requests upstream`);
    const metrics = await (await request(`${gw.statsUrl}/metrics`)).body.text();
    const overflow = /^switchyard_upstream_retries_overflow_total\{backend="[^"]+"\} (\d+)$/m.exec(metrics);
    assert.ok(overflow && Number(overflow[1]) >= 40 - 8, 'the refused retries are counted');
    counts.delete('/retry-storm');
    scripts.set('/retry-storm', [{ status: 503 }, { status: 200 }]);
    assert.equal((await call('/retry-storm')).status, 200, 'a lone request is retried as before');
  });

  it('a chunked body within the replay buffer is retried like a sized one', async () => {
    // It was streamed, so never retried: a POST from a client that does not know its length up front got the 503.
    scripts.set('/retry-chunked/small', [{ status: 503 }, { status: 503 }, { status: 200 }]);
    const body = Readable.from([Buffer.from('chunk-one;'), Buffer.from('chunk-two')]);
    const res = await request(`${gw.url(port)}/retry-chunked/small`, { method: 'POST', body });
    assert.equal(res.statusCode, 200);
    assert.equal(await res.body.text(), 'attempt 2 len 19');
    const got = received('/retry-chunked/small');
    assert.deepEqual(got.map((g) => g.body.toString()), ['chunk-one;chunk-two', 'chunk-one;chunk-two', 'chunk-one;chunk-two']);
    // The first attempt streamed it (chunked, ADR 0152) unless it was all at the gateway by then (sized, ADR 0156).
    assert.deepEqual(got.slice(1).map((g) => g.headers['content-length']), ['19', '19']);
  });

  it('a chunked body within the replay buffer goes to another backend on a retry', async () => {
    scripts.set('/retry-chunked-two/small', [{ status: 503 }, { status: 200 }]);
    const body = Readable.from([Buffer.from('part-a;'), Buffer.from('part-b')]);
    const res = await request(`${gw.url(port)}/retry-chunked-two/small`, { method: 'POST', body });
    assert.equal(res.statusCode, 200);
    await res.body.text();
    const got = received('/retry-chunked-two/small');
    assert.deepEqual(got.map((g) => g.body.toString()), ['part-a;part-b', 'part-a;part-b']);
    assert.deepEqual(got.map((g) => g.headers.host!.split(':')[0]).sort(), ['127.0.0.1', 'localhost']);
  });

  it('a chunked body past the replay buffer is streamed whole and not retried', async () => {
    scripts.set('/retry-chunked/big', [{ status: 503 }, { status: 200 }]);
    const parts = Array.from({ length: 12 }, (_, i) => Buffer.alloc(8 * 1024, 97 + i));
    const res = await request(`${gw.url(port)}/retry-chunked/big`, { method: 'POST', body: Readable.from(parts) });
    assert.equal(res.statusCode, 503);
    await res.body.text();
    const got = received('/retry-chunked/big');
    assert.equal(got.length, 1);
    assert.ok(got[0]!.body.equals(Buffer.concat(parts)), 'every byte, in order');
  });

  it('a chunked upload that stops on a retry route gets 408 after the stream idle deadline', async () => {
    const client = new RawClient(port);
    await client.connected;
    try {
      const started = performance.now();
      client.write('POST /retry-chunked/stalled HTTP/1.1\r\nHost: gw\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n');
      const answer = await client.read({ ms: 8000 });
      assert.equal(answer.status, 408, answer.body);
      assert.match(answer.body, /request_timeout/);
      assert.ok(performance.now() - started < 6000);
      assert.equal(received('/retry-chunked/stalled').length, 0, 'no request ended upstream');
    } finally {
      client.destroy();
    }
  });

  it('a sized upload past the replay buffer that stops gets 408 after the stream idle deadline', async () => {
    // Streamed through the retry path without a `backendRequestTimeout`, it waited for ever.
    const client = new RawClient(port);
    await client.connected;
    try {
      const started = performance.now();
      client.write(`POST /retry-chunked/sized-stall HTTP/1.1\r\nHost: gw\r\nContent-Length: 100000\r\n\r\n${'a'.repeat(70_000)}`);
      const answer = await client.read({ ms: 8000 });
      assert.equal(answer.status, 408, answer.body);
      assert.ok(performance.now() - started < 6000);
    } finally {
      client.destroy();
    }
  });

  it('a zero timeout is a config error', async () => {
    await assert.rejects(
      gw.gateway.compile(`binds:\n- port: ${port}\n  listeners:\n  - routes:\n    - policies:\n        timeout: { requestTimeout: 0s }\n`),
      /:6:36: `requestTimeout` must be greater than zero/,
    );
  });
});
