// A request body of unknown length on a route with `retry` (ADR 0152): it streams to the first attempt as it
// arrives, a copy of at most 64 KiB kept for a retry; a body past that, or a retry needed before it ended, is not
// retried, and the access log says why.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createServer } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { oneListenerConfig, startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { RawClient, waitFor } from './proxy-support.ts';
import type { Answer } from './proxy-support.ts';

/** One request as the upstream got it, its body growing as it arrives. */
interface Seen {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  body: Buffer;
  ended: boolean;
}

/** A chunked request head for `path` on the gateway. */
const head = (path: string): string => `POST ${path} HTTP/1.1\r\nHost: gw\r\nTransfer-Encoding: chunked\r\n\r\n`;
const chunk = (bytes: Buffer | string): string => `${Buffer.byteLength(bytes).toString(16)}\r\n${bytes.toString('latin1')}\r\n`;

describe('retry: a body of unknown length streams, a copy kept for the retry (ADR 0152)', () => {
  let gw: RunningGateway;
  let port: number;
  let upstream: Server;
  /** Listens on `latePort` only once a test starts it: until then connections to it are refused. */
  let late: Server | undefined;
  let latePort: number;
  const seen: Seen[] = [];
  const of = (path: string): Seen[] => seen.filter((s) => s.path === path);

  before(async () => {
    port = await freePort();
    latePort = await freePort();
    upstream = createServer((req, res) => {
      const path = req.url!;
      const entry: Seen = { path, headers: req.headers, body: Buffer.alloc(0), ended: false };
      const n = of(path).length;
      seen.push(entry);
      const answer = (status: number): void => {
        res.writeHead(status, { 'content-type': 'text/plain' });
        res.end(`attempt ${n} len ${entry.body.length}`);
      };
      // Answers at once, the body unread (as a proxy in front of an overloaded service does).
      if (path === '/s/instant-503' && n === 0) return answer(503);
      req.on('data', (c: Buffer) => {
        const first = entry.body.length === 0;
        entry.body = Buffer.concat([entry.body, c]);
        // Answers before the body ended: the retry would be needed before the gateway had the whole body.
        if (first && path === '/s/early-503') answer(503);
      });
      req.on('end', () => {
        entry.ended = true;
        if (path === '/s/early-503') return;
        answer(path === '/s/streams' || path.startsWith('/fo/') || n > 0 ? 200 : 503);
      });
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const up = (upstream.address() as AddressInfo).port;
    gw = await startGateway(oneListenerConfig(port, [
      // Two backends: the retry goes to the other one (the pipeline's failover, ADR 0023).
      { name: 'two', matches: [{ path: { pathPrefix: '/two' } }], policies: { retry: { attempts: 1, codes: [503] } }, backends: [{ host: `127.0.0.1:${up}` }, { host: `localhost:${up}` }] },
      { name: 'dead', matches: [{ path: { pathPrefix: '/dead' } }], policies: { retry: { attempts: 2, codes: [] }, timeout: { streamIdleTimeout: '1s' } }, backends: [{ host: '127.0.0.1:1' }] },
      { name: 'dead-deadline', matches: [{ path: { pathPrefix: '/deadline' } }], policies: { retry: { attempts: 2, codes: [] }, timeout: { requestTimeout: '500ms', streamIdleTimeout: '10s' } }, backends: [{ host: '127.0.0.1:1' }] },
      // Refused until a test starts listening on its port.
      { name: 'late', matches: [{ path: { pathPrefix: '/late' } }], policies: { retry: { attempts: 1, codes: [] } }, backends: [{ host: `127.0.0.1:${latePort}` }] },
      // The refusing backend is picked first (almost always); the retry goes to the other (ADR 0023).
      { name: 'fo', matches: [{ path: { pathPrefix: '/fo' } }], policies: { retry: { attempts: 1, codes: [] } }, backends: [{ host: '127.0.0.1:1', weight: 1000 }, { host: `127.0.0.1:${up}` }] },
      {
        name: 'stream-retry',
        matches: [{ path: { pathPrefix: '/s' } }],
        policies: { retry: { attempts: 2, codes: [503] }, timeout: { streamIdleTimeout: '3s' } },
        backends: [{ host: `127.0.0.1:${up}` }],
      },
    ]));
  });
  after(async () => {
    await gw.stop();
    late?.closeAllConnections();
    await new Promise<void>((resolve) => (late ? late.close(() => resolve()) : resolve()));
    upstream.closeAllConnections();
    await new Promise<void>((resolve) => upstream.close(() => resolve()));
  });

  /** One request on a connection of its own: `send` writes it (and waits as it likes), then the answer is read. */
  const upload = async (send: (client: RawClient) => Promise<void> | void): Promise<Answer> => {
    const client = new RawClient(port);
    await client.connected;
    try {
      await send(client);
      return await client.read({ ms: 5_000 });
    } finally {
      client.destroy();
    }
  };
  /** The access log line of `path`, once written. */
  const logLine = async (path: string): Promise<string> => {
    await waitFor(() => gw.logs.some((l) => l.includes(`http.path=${path} `)), 3_000, 'the access log line');
    return gw.logs.find((l) => l.includes(`http.path=${path} `))!;
  };
  /** Wait until the upstream got some of `path`'s body. */
  const upstreamHas = (path: string): Promise<void> => waitFor(() => (of(path)[0]?.body.length ?? 0) > 0, 3_000, `the first bytes of ${path} upstream`);

  it("a chunked upload's first bytes reach the upstream before the client sends the rest", async () => {
    // They waited at the gateway until 64 KiB or the end arrived (ADR 0125's replay read).
    const answer = await upload(async (client) => {
      client.write(head('/s/streams') + chunk('first;'));
      await upstreamHas('/s/streams');
      assert.equal(of('/s/streams')[0]!.body.toString(), 'first;');
      client.write(chunk('second') + '0\r\n\r\n');
    });
    assert.equal(answer.status, 200, answer.body);
    assert.equal(answer.body, 'attempt 0 len 12');
  });

  it('a chunked upload the upstream answers 503 after reading it whole is retried with the same bytes', async () => {
    const parts = Array.from({ length: 16 }, () => randomBytes(1 + Math.floor(Math.random() * 3000)));
    const whole = Buffer.concat(parts);
    const answer = await upload(async (client) => {
      client.write(head('/s/whole-503') + chunk(parts[0]!));
      // Streamed: the first part is upstream before the client sends more.
      await upstreamHas('/s/whole-503');
      client.write(parts.slice(1).map((p) => chunk(p)).join('') + '0\r\n\r\n');
    });
    assert.equal(answer.status, 200, answer.body);
    assert.equal(answer.body, `attempt 1 len ${whole.length}`);
    const got = of('/s/whole-503');
    assert.equal(got.length, 2);
    assert.ok(got[0]!.body.equals(whole) && got[1]!.body.equals(whole), 'both attempts got every byte, in order');
    assert.equal(got[0]!.headers['transfer-encoding'], 'chunked', 'the first attempt streamed');
    assert.equal(got[1]!.headers['content-length'], String(whole.length), 'the retry is sent from the copy, sized');
    assert.equal(got[1]!.headers['x-retry-attempt'], '1');
  });

  it('a chunked body past 64 KiB that gets a 503 is not retried; the access log says why', async () => {
    const parts = Array.from({ length: 10 }, () => randomBytes(8 * 1024));
    const answer = await upload((client) => client.write(head('/s/big') + parts.map((p) => chunk(p)).join('') + '0\r\n\r\n'));
    assert.equal(answer.status, 503, answer.body);
    const got = of('/s/big');
    assert.equal(got.length, 1);
    assert.ok(got[0]!.body.equals(Buffer.concat(parts)), 'every byte, in order');
    const line = await logLine('/s/big');
    assert.match(line, /retry\.skipped=buffer_limit/);
    assert.doesNotMatch(line, /retry\.attempt=/);
  });

  it("a retry needed before the body ended is not sent: the first answer is the client's, the reason logged", async () => {
    const answer = await upload(async (client) => {
      client.write(head('/s/early-503') + chunk('early;'));
      await upstreamHas('/s/early-503');
    });
    assert.equal(answer.status, 503, answer.body);
    assert.equal(answer.body, 'attempt 0 len 6');
    assert.equal(of('/s/early-503').length, 1, 'not sent again');
    assert.match(await logLine('/s/early-503'), /retry\.skipped=request_not_complete/);
  });

  it('a 503 sent before the upstream read a body the gateway has whole: retried with every byte', async () => {
    const body = randomBytes(30_000);
    const answer = await upload((client) => client.write(head('/s/instant-503') + chunk(body) + '0\r\n\r\n'));
    assert.equal(answer.status, 200, answer.body);
    assert.equal(answer.body, `attempt 1 len ${body.length}`);
    assert.ok(of('/s/instant-503')[1]!.body.equals(body));
  });

  it('Expect: 100-continue on a chunked upload: 100 Continue first, then the body streams and is retried', async () => {
    const answer = await upload(async (client) => {
      client.write('POST /s/expect HTTP/1.1\r\nHost: gw\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n');
      assert.equal((await client.read({ interim: true, ms: 5_000 })).status, 100);
      client.write(chunk('after-continue') + '0\r\n\r\n');
    });
    assert.equal(answer.status, 200, answer.body);
    assert.equal(answer.body, 'attempt 1 len 14');
    assert.deepEqual(of('/s/expect').map((s) => s.body.toString()), ['after-continue', 'after-continue']);
    assert.ok(of('/s/expect').every((s) => s.headers.expect === undefined), 'the gateway answered the expectation');
  });

  it('with two backends: a chunked body within 64 KiB goes to the other on a 503, a longer one is not sent again', async () => {
    const small = randomBytes(5000);
    const big = randomBytes(70 * 1024);
    for (const [path, body] of [['/two/small', small], ['/two/big', big]] as const) {
      const answer = await upload(async (client) => {
        client.write(head(path) + chunk(body.subarray(0, 1000)));
        await upstreamHas(path);
        client.write(chunk(body.subarray(1000)) + '0\r\n\r\n');
      });
      assert.equal(answer.status, body === small ? 200 : 503, answer.body);
      assert.equal(of(path).length, body === small ? 2 : 1);
      for (const seen of of(path)) assert.ok(seen.body.equals(body), 'every byte, in order');
    }
    assert.match(await logLine('/two/big'), /retry\.skipped=buffer_limit/);
  });

  /** A chunked upload sent in `parts` with a pause before each after the first, ended when `end` says so. */
  const slowly = (path: string, parts: readonly Buffer[], end = true, between?: (i: number) => Promise<void>) =>
    upload(async (client) => {
      client.write(head(path) + chunk(parts[0]!));
      for (let i = 1; i < parts.length; i++) {
        await (between?.(i) ?? sleep(100));
        client.write(chunk(parts[i]!));
      }
      if (end) {
        await sleep(100);
        client.write('0\r\n\r\n');
      }
    });

  it('an unreachable upstream: the retries wait for a body still arriving and send it whole (ADR 0156)', async () => {
    // ADR 0152 sent no retry of a body still arriving, also when nothing of it had reached the upstream.
    for (const [path, rest] of [['/dead/whole', '0\r\n\r\n'], ['/dead/arriving', '']] as const) {
      const answer = await (rest === '' ? slowly(path, [Buffer.from('some;'), Buffer.from('more')]) : upload((client) => client.write(head(path) + chunk('some;') + rest)));
      assert.equal(answer.status, 503, answer.body);
      assert.match(answer.body, /upstream_unavailable/);
      const line = await logLine(path);
      assert.match(line, /retry\.attempt=2/);
      assert.doesNotMatch(line, /retry\.skipped/);
    }
  });

  it('a refused first attempt: the retry gets the whole slow upload, byte for byte (ADR 0156)', async () => {
    const parts = Array.from({ length: 4 }, () => randomBytes(1 + Math.floor(Math.random() * 5000)));
    const got: { headers: IncomingHttpHeaders; body: Buffer }[] = [];
    const answer = await slowly('/late/upload', parts, true, async (i) => {
      if (i > 1) return sleep(100);
      // The first attempt was refused by now (a connection to a closed local port fails at once); the retry will not be.
      await sleep(300);
      late = createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          got.push({ headers: req.headers, body: Buffer.concat(chunks) });
          res.end('late ok');
        });
      });
      await new Promise<void>((resolve) => late!.listen(latePort, '127.0.0.1', resolve));
    });
    assert.equal(answer.status, 200, answer.body);
    assert.equal(answer.body, 'late ok');
    assert.equal(got.length, 1);
    assert.ok(got[0]!.body.equals(Buffer.concat(parts)), 'every byte, in order');
    assert.equal(got[0]!.headers['content-length'], String(Buffer.concat(parts).length), 'sent from the copy, sized');
    assert.equal(got[0]!.headers['x-retry-attempt'], '1');
    assert.match(await logLine('/late/upload'), /retry\.attempt=1/);
  });

  it('a refused first backend: the other backend gets the whole slow upload, byte for byte (ADR 0156)', async () => {
    const parts = Array.from({ length: 4 }, () => randomBytes(1 + Math.floor(Math.random() * 5000)));
    const answer = await slowly('/fo/upload', parts);
    assert.equal(answer.status, 200, answer.body);
    const got = of('/fo/upload');
    assert.equal(got.length, 1);
    assert.ok(got[0]!.body.equals(Buffer.concat(parts)), 'every byte, in order');
  });

  it('an unreachable upstream: waiting for the body ends at 64 KiB (the first failure stands) and at the stream idle deadline (408)', async () => {
    const big = await slowly('/dead/big', [Buffer.from('first;'), randomBytes(70 * 1024)]);
    assert.equal(big.status, 503, big.body);
    const line = await logLine('/dead/big');
    assert.match(line, /retry\.skipped=buffer_limit/);
    assert.doesNotMatch(line, /retry\.attempt=/);
    const started = performance.now();
    const stalled = await slowly('/dead/stalled', [Buffer.from('first;')], false);
    assert.equal(stalled.status, 408, stalled.body);
    assert.ok(performance.now() - started < 4_000, 'answered at the 1 s stream idle deadline');
    // The route's request deadline ends the wait too: its 504, no attempt after it.
    const cut = performance.now();
    const deadline = await slowly('/deadline/stalled', [Buffer.from('first;')], false);
    assert.equal(deadline.status, 504, deadline.body);
    assert.ok(performance.now() - cut < 4_000, 'answered at the 500 ms request deadline');
    assert.doesNotMatch(await logLine('/deadline/stalled'), /retry\.attempt=/);
  });

});
