// The `a2a` policy reads a JSON POST's body to name its JSON-RPC method, up to 2 MiB, through `Exchange.peekBody`
// (ADR 0142): a longer body streams to the agent whole, framed as the client framed it, and is logged as a call of
// method `unknown`, whether it declared its length or came chunked (a chunked one was a 413). Checked against a
// plain agent that records what it received (byte count and SHA-256), on the lean HTTP/1.1 server side (the default)
// and on node:http (`SWITCHYARD_LEAN_HTTP=off`), with clients that stop or abort mid-body. A lean-safe test policy
// peeks a 16-byte limit, so the lean side's whole-read body (ADR 0088 addendum) is peeked too.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { definePolicy, localReply } from 'switchyard/sdk';
import type { PolicyInstance } from 'switchyard/sdk';
import { fullPreset } from '../../plugins/presets/full.ts';
import { chunkedBody, sha256, startBodyRecorder, waitFor } from '../helpers/body-recorder.ts';
import type { BodyRecorder, SeenBody } from '../helpers/body-recorder.ts';
import { logRecords, startRoutesGateway } from '../helpers/gateway.ts';
import type { RoutesGateway } from '../helpers/gateway.ts';

/** A JSON-RPC `SendMessage` call padded to about `size` bytes. */
function call(size: number, id = 1): Buffer {
  const head = { jsonrpc: '2.0', id, method: 'SendMessage', params: { message: { messageId: `m${id}`, role: 'ROLE_USER', parts: [{ text: '' }] } } };
  const bare = JSON.stringify(head).length;
  head.params.message.parts[0]!.text = 'x'.repeat(Math.max(0, size - bare));
  return Buffer.from(JSON.stringify(head));
}

const chunked = (body: Buffer) => chunkedBody(body);

const BIG = 3 * 1024 * 1024;

/** A test policy without settings whose request hook is `onRequest`. */
const testPolicy = (key: string, description: string, placed: { phase: 'mutate' | 'dispatch'; order?: number; requestStream?: false }, onRequest: PolicyInstance['onRequest']) =>
  definePolicy<Record<string, never>>({
    key,
    description,
    schema: { type: 'object', description: 'No settings.', additionalProperties: false },
    attach: ['routePolicies'],
    ...placed,
    compile: () => ({ onRequest }),
  });

/** Peeks at most 16 bytes of the body (a lean-safe policy) and says what it saw. */
const peek16 = testPolicy('testPeek16', 'Test: peeks the body with a 16-byte limit.', { phase: 'mutate', requestStream: false }, async (ex) => {
  const body = await ex.peekBody(16);
  ex.headers['x-peeked'] = body === undefined ? 'past' : String(body.length);
});

/** Refuses every request after the `a2a` policy classified it (a later policy's local answer). */
const denyAfter = testPolicy('testDenyAfterA2a', 'Test: answers 403 in the dispatch phase, after a2a.', { phase: 'dispatch', order: 50 }, () => localReply(403, 'no'));

/**
 * A chunked POST on a raw socket: `bytes` bytes of body in 64 KiB chunks, then `then`: `stall` sends nothing more,
 * `abort` destroys the socket. Resolves with what came back once the socket closed (or after `waitMs`).
 */
function partialUpload(port: number, path: string, bytes: number, then: 'stall' | 'abort', waitMs = 8000): Promise<{ text: string; closed: boolean; ms: number }> {
  const started = performance.now();
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let got = '';
    let done = false;
    const finish = (closed: boolean): void => {
      if (done) return;
      done = true;
      resolve({ text: got, closed, ms: performance.now() - started });
    };
    socket.on('data', (c: Buffer) => (got += c.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => finish(true));
    socket.write(`POST ${path} HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`);
    const piece = Buffer.alloc(65536, 0x20);
    let sent = 0;
    const next = (): void => {
      while (sent < bytes) {
        const n = Math.min(piece.length, bytes - sent);
        sent += n;
        socket.write(`${n.toString(16)}\r\n`);
        socket.write(piece.subarray(0, n));
        if (!socket.write('\r\n')) return void socket.once('drain', next);
      }
      if (then === 'abort') setTimeout(() => socket.destroy(), 200);
      else setTimeout(() => (finish(false), socket.destroy()), waitMs);
    };
    next();
  });
}

for (const side of ['lean', 'node'] as const) {
  describe(`a2a: bodies past the 2 MiB read limit stream through (${side} server side)`, () => {
    let agent: BodyRecorder;
    let seen: SeenBody[] = [];
    let gw: RoutesGateway;

    before(async () => {
      agent = await startBodyRecorder((res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { task: { id: 't', contextId: 'c', status: { state: 'TASK_STATE_COMPLETED' } } } }));
      });
      seen = agent.seen;
      const host = `127.0.0.1:${agent.port}`;
      gw = await startRoutesGateway(
        [
          { name: 'peek', matches: [{ path: { pathPrefix: '/peek' } }], policies: { testPeek16: {} }, backends: [{ host }] },
          // The route's stream idle deadline bounds an upload that stops once it streams (408, ADR 0117).
          // Nothing listens on port 1: the gateway answers 503 itself, before the body streams.
          { name: 'dead', matches: [{ path: { pathPrefix: '/dead' } }], policies: { a2a: {} }, backends: [{ host: '127.0.0.1:1' }] },
          // A retrying route copies a chunked body as it streams, up to its 64 KiB replay buffer (ADR 0152), after the peek.
          { name: 'retry', matches: [{ path: { pathPrefix: '/retry' } }], policies: { a2a: {}, retry: { attempts: 1, codes: [503] } }, backends: [{ host }] },
          { name: 'deadline', matches: [{ path: { pathPrefix: '/deadline' } }], policies: { a2a: {}, timeout: { requestTimeout: '1s' } }, backends: [{ host }] },
          { name: 'deny', matches: [{ path: { pathPrefix: '/deny' } }], policies: { a2a: {}, testDenyAfterA2a: {} }, backends: [{ host }] },
          { name: 'agent', policies: { a2a: {}, timeout: { streamIdleTimeout: '1s' } }, backends: [{ host }] },
        ],
        {
          preset: [...fullPreset, peek16, denyAfter],
          // The idle sweep closes a connection whose body stopped arriving before it is sent (ADR 0092).
          config: { logging: { format: 'json', level: 'info' }, defaultTimeouts: { streamIdleTimeout: '1s' } },
          env: side === 'node' ? { ...process.env, SWITCHYARD_LEAN_HTTP: 'off' } : process.env,
        },
      );
    });

    after(async () => {
      await gw?.stop();
      await agent?.close();
    });

    const logged = (path: string): Promise<Record<string, unknown>> =>
      waitFor(() => logRecords(gw).find((r) => (r.msg === 'request' || r.message === 'request') && r['http.path'] === path), `the access log of ${path}`);
    const seenAt = (path: string): Promise<SeenBody> => waitFor(() => seen.find((s) => s.url === path && (s.complete || s.bytes > 0)), `the agent's request to ${path}`);

    it('a 3 MiB chunked JSON-RPC body reaches the agent whole and chunked; logged as an A2A call of method unknown', async () => {
      const body = call(BIG);
      const res = await request(`${gw.base}/big/chunked`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: chunked(body) });
      const text = await res.body.text();
      assert.equal(res.statusCode, 200, text);
      const got = await seenAt('/big/chunked');
      assert.equal(got.complete, true);
      assert.equal(got.bytes, body.length);
      assert.equal(got.sha256, sha256(body));
      assert.equal(got.headers['transfer-encoding'], 'chunked');
      assert.equal(got.headers['content-length'], undefined);
      const record = await logged('/big/chunked');
      assert.equal(record.protocol, 'a2a');
      assert.equal(record['a2a.method'], 'unknown');
      assert.equal(record['http.status'], 200);
    });

    it('on a retrying route too: the 3 MiB chunked body reaches the agent whole', async () => {
      const body = call(BIG, 8);
      const res = await request(`${gw.base}/retry/chunked`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: chunked(body) });
      assert.equal(res.statusCode, 200, await res.body.text());
      const got = await seenAt('/retry/chunked');
      assert.equal(got.sha256, sha256(body));
      assert.equal(got.bytes, body.length);
    });

    it('a 3 MiB body of declared length reaches the agent whole with that length; logged as method unknown', async () => {
      const body = call(BIG, 2);
      const res = await request(`${gw.base}/big/sized`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      assert.equal(res.statusCode, 200, await res.body.text());
      const got = await seenAt('/big/sized');
      assert.equal(got.sha256, sha256(body));
      assert.equal(got.headers['content-length'], String(body.length));
      assert.equal(got.headers['transfer-encoding'], undefined);
      const record = await logged('/big/sized');
      assert.equal(record['a2a.method'], 'unknown');
    });

    it('a body of exactly 2 MiB, chunked, is read and its method named; the agent gets the same bytes', async () => {
      const body = call(2 * 1024 * 1024, 3);
      assert.equal(body.length, 2 * 1024 * 1024);
      const res = await request(`${gw.base}/edge/chunked`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: chunked(body) });
      assert.equal(res.statusCode, 200, await res.body.text());
      const got = await seenAt('/edge/chunked');
      assert.equal(got.sha256, sha256(body));
      assert.equal((await logged('/edge/chunked'))['a2a.method'], 'SendMessage');
    });

    for (const framing of ['sized', 'chunked'] as const) {
      it(`a small ${framing} call still has its method named`, async () => {
        const body = call(2000, 4);
        const path = `/small/${framing}`;
        const res = await request(`${gw.base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: framing === 'sized' ? body : chunked(body) });
        assert.equal(res.statusCode, 200, await res.body.text());
        assert.equal((await seenAt(path)).sha256, sha256(body));
        assert.equal((await logged(path))['a2a.method'], 'SendMessage');
      });
    }

    it('an agent that cannot be reached: 503 with Connection: close (the rest of the body was never read)', async () => {
      const body = call(BIG, 6);
      const res = await request(`${gw.base}/dead/big`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: chunked(body) });
      assert.equal(res.statusCode, 503);
      assert.equal(res.headers.connection, 'close');
      await res.body.text();
      assert.equal((await logged('/dead/big'))['a2a.method'], 'unknown');
    });

    it('a later policy answers: Connection: close, since the rest of the body was never read', async () => {
      const res = await request(`${gw.base}/deny/big`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: chunked(call(BIG, 7)) });
      assert.equal(res.statusCode, 403);
      assert.equal(res.headers.connection, 'close');
      await res.body.text();
      assert.equal(seen.filter((s) => s.url === '/deny/big').length, 0);
    });

    it('a client that stops mid-body under the limit has its connection closed by the idle deadline; nothing reaches the agent', async () => {
      const out = await partialUpload(gw.port, '/stall/under', 1024 * 1024, 'stall');
      assert.equal(out.closed, true, 'the gateway closed the connection');
      assert.ok(out.ms < 7000, `closed after ${out.ms} ms`);
      assert.equal(seen.filter((s) => s.url === '/stall/under').length, 0);
    });

    it("the route's request deadline ends a read that stalls: 504, the connection closed", async () => {
      const out = await partialUpload(gw.port, '/deadline/under', 512 * 1024, 'stall');
      assert.match(out.text, /^HTTP\/1\.1 504 [^]*connection: close/i, out.text.slice(0, 300));
      assert.equal(out.closed, true);
      assert.ok(out.ms < 4000, `answered after ${out.ms} ms`);
      assert.equal(seen.filter((s) => s.url === '/deadline/under').length, 0);
    });

    it('a client that stops mid-body past the limit: the agent got the bytes sent so far, cut; the client gets 408', async () => {
      const sent = 2.5 * 1024 * 1024;
      const out = await partialUpload(gw.port, '/stall/past', sent, 'stall');
      assert.match(out.text, /^HTTP\/1\.1 408 /, out.text.slice(0, 200));
      const got = await waitFor(() => seen.find((s) => s.url === '/stall/past' && s.bytes === sent), 'the agent to receive the bytes sent');
      assert.equal(got.complete, false);
      assert.equal((await logged('/stall/past'))['a2a.method'], 'unknown');
    });

    it('a client that aborts mid-body past the limit: the agent sees its request cut; the gateway goes on serving', async () => {
      const sent = 2.5 * 1024 * 1024;
      const out = await partialUpload(gw.port, '/abort/past', sent, 'abort');
      assert.equal(out.closed, true);
      const got = await waitFor(() => seen.find((s) => s.url === '/abort/past' && s.bytes === sent), 'the agent to receive the bytes sent');
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(got.complete, false, 'the agent never saw the body end');
      const record = await logged('/abort/past');
      assert.equal(record['a2a.method'], 'unknown');
      const res = await request(`${gw.base}/after/abort`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: call(100, 5) });
      assert.equal(res.statusCode, 200, await res.body.text());
    });

    it('a client that aborts mid-body under the limit: nothing reaches the agent; logged as an A2A call', async () => {
      const out = await partialUpload(gw.port, '/abort/under', 512 * 1024, 'abort');
      assert.equal(out.closed, true);
      const record = await logged('/abort/under');
      assert.equal(record.protocol, 'a2a');
      assert.equal(seen.filter((s) => s.url === '/abort/under').length, 0);
    });

    it('peekBody on a lean-safe route: a body within the limit is given, a longer one streams whole', async () => {
      const small = await request(`${gw.base}/peek/small`, { method: 'POST', body: 'sixteen bytes ok' });
      assert.equal(small.statusCode, 200, await small.body.text());
      assert.equal((await seenAt('/peek/small')).headers['x-peeked'], '16');
      const body = Buffer.alloc(1000, 0x61);
      for (const [path, sent] of [['/peek/sized', body], ['/peek/chunked', chunked(body)]] as const) {
        const res = await request(`${gw.base}${path}`, { method: 'POST', body: sent });
        assert.equal(res.statusCode, 200, await res.body.text());
        const got = await seenAt(path);
        assert.equal(got.headers['x-peeked'], 'past', path);
        assert.equal(got.sha256, sha256(body), path);
      }
    });
  });
}
