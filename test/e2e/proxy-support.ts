// Small helpers shared by the proxy-*.test.ts files (not a test file itself).
import assert from 'node:assert/strict';
import { createHook } from 'node:async_hooks';
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { RequestListener, Server } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { request } from 'undici';
import { definePolicy } from 'switchyard/sdk';
import { oneListenerConfig, startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { after, afterEach, before } from 'node:test';

/**
 * `testReplyHeader`: a response hook with no `onResponseHeaders`, so its route answers through a Reply (the direct
 * forward's fallback, ADR 0051/0071). Sets `x-reply-hook: <value>`. Give it with `fullPreset` to the gateway.
 */
export const replyHeaderPolicy = definePolicy<{ value: string }>({
  key: 'testReplyHeader',
  description: 'Test: sets a response header through a Reply.',
  schema: { type: 'object', description: 'The value.', properties: { value: { type: 'string', description: 'Header value.' } }, required: ['value'], additionalProperties: false },
  attach: ['routePolicies', 'backendPolicies'],
  phase: 'mutate',
  compile: (config) => ({
    onResponse(_ex, reply) {
      reply.headers['x-reply-hook'] = config.value;
    },
  }),
});

export const sha256 = (data: Buffer | string): string => createHash('sha256').update(data).digest('hex');

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Reject when `promise` takes longer than `ms` (a hang becomes a readable failure instead of a test timeout). */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing after ${ms}ms`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/** Poll until `check` returns true, or fail after `ms`. */
export async function waitFor(check: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** One keep-alive GET on an open socket (plain or TLS); resolves with the first response's status line. */
export function requestOn(socket: Socket, path: string, host = 'h'): Promise<string> {
  return new Promise((resolve, reject) => {
    let data = '';
    const onData = (c: Buffer): void => {
      data += c.toString('latin1');
      const end = data.indexOf('\r\n\r\n');
      if (end === -1) return;
      const length = Number(/content-length: (\d+)/i.exec(data)?.[1] ?? 0);
      if (data.length < end + 4 + length) return;
      socket.off('data', onData);
      resolve(data.slice(0, data.indexOf('\r\n')));
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
  });
}

export interface RawResponse {
  status: number;
  /** Header lines as sent, names lower-cased, in order (repeated headers stay separate). */
  headers: [string, string][];
  body: Buffer;
}

export const header = (res: RawResponse, name: string): string[] => res.headers.filter(([n]) => n === name).map(([, v]) => v);

function dechunk(data: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = data.indexOf('\r\n', at);
    if (eol === -1) break;
    const size = parseInt(data.subarray(at, eol).toString('latin1'), 16);
    if (!size) break;
    parts.push(data.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
  return Buffer.concat(parts);
}

/**
 * Send a hand-written HTTP/1.1 request on a fresh socket (so hop-by-hop headers that HTTP clients refuse to send
 * can be tested) and read the response until the server closes the connection. `head` is the request line and
 * headers without the blank line; `Connection: close` is the caller's job.
 */
export function rawRequest(port: number, head: string, body: Buffer | string = ''): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('end', () => {
      let data = Buffer.concat(chunks);
      // Skip interim responses (100 Continue).
      while (/^HTTP\/1\.[01] 1\d\d /.test(data.subarray(0, 13).toString('latin1'))) data = data.subarray(data.indexOf('\r\n\r\n') + 4);
      const split = data.indexOf('\r\n\r\n');
      if (split === -1) return reject(new Error(`no response head in ${JSON.stringify(data.toString('latin1'))}`));
      const lines = data.subarray(0, split).toString('latin1').split('\r\n');
      const status = Number(lines[0]!.split(' ')[1]);
      const headers = lines.slice(1).map((line) => {
        const colon = line.indexOf(':');
        return [line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()] as [string, string];
      });
      const rest = data.subarray(split + 4);
      const chunked = headers.some(([n, v]) => n === 'transfer-encoding' && /chunked/i.test(v));
      resolve({ status, headers, body: chunked ? dechunk(rest) : rest });
    });
    socket.write(`${head.replace(/\r?\n/g, '\r\n').trimEnd()}\r\n\r\n`);
    if (body.length) socket.write(body);
  });
}

/**
 * The two server sides a cleartext bind may run (ADR 0088): the lean HTTP/1.1 parser in front of node:http (the
 * default), and node:http alone (`SWITCHYARD_LEAN_HTTP=off`). Edge-case suites run against both.
 */
export const SERVER_SIDES = [
  { name: 'lean HTTP/1.1 on', env: { ...process.env, SWITCHYARD_LEAN_HTTP: 'on' } },
  { name: 'node:http only', env: { ...process.env, SWITCHYARD_LEAN_HTTP: 'off' } },
] as const;

/** One answer read by `RawClient`: status line, headers and body as the client got them. */
export interface Answer {
  /** The status line, e.g. `HTTP/1.1 200 OK`. */
  line: string;
  status: number;
  /** Names lower-cased, in order, repeated headers kept apart. */
  headers: [string, string][];
  /** The body, de-chunked (latin1). */
  body: string;
  /** Trailer fields after a chunked body, as sent. */
  trailers: string[];
}

export const values = (a: Answer, name: string): string[] => a.headers.filter(([n]) => n === name).map(([, v]) => v);

/**
 * One client connection for hand-written HTTP/1.1: writes whatever bytes it is given (pipelined requests, a
 * request cut in pieces) and reads answers one at a time, framed as each head says (Content-Length, chunked with
 * trailers, or up to the close). Interim (1xx) answers are skipped unless asked for.
 */
export class RawClient {
  readonly socket: Socket;
  private buffered = Buffer.alloc(0);
  private waiting: (() => void) | null = null;
  ended = false;
  readonly connected: Promise<void>;

  constructor(port: number) {
    this.socket = connect(port, '127.0.0.1');
    this.socket.setNoDelay(true);
    this.connected = new Promise((resolve) => this.socket.once('connect', () => resolve()));
    this.socket.on('data', (c: Buffer) => {
      this.buffered = Buffer.concat([this.buffered, c]);
      this.waiting?.();
    });
    const end = (): void => {
      this.ended = true;
      this.waiting?.();
    };
    this.socket.on('end', end);
    this.socket.on('close', end);
    this.socket.on('error', () => undefined);
  }

  private async until(ready: () => boolean, ms: number): Promise<void> {
    while (!ready()) {
      if (this.ended) throw new Error(`connection ended with ${JSON.stringify(this.buffered.toString('latin1'))}`);
      await within(new Promise<void>((resolve) => (this.waiting = resolve)), ms, 'the answer');
    }
  }

  /** Write bytes as they are. */
  write(data: string | Buffer): void {
    this.socket.write(typeof data === 'string' ? Buffer.from(data, 'latin1') : data);
  }

  /** Send `head` (request line and headers, no blank line) and read its answer. */
  send(head: string, opts: { head?: boolean; ms?: number } = {}): Promise<Answer> {
    this.write(`${head}\r\n\r\n`);
    return this.read(opts);
  }

  /** Read the next answer; `head` for the answer to a HEAD request (no body), `interim` to return a 1xx too. */
  async read(opts: { head?: boolean; interim?: boolean; ms?: number } = {}): Promise<Answer> {
    const ms = opts.ms ?? 5000;
    for (;;) {
      await this.until(() => this.buffered.indexOf('\r\n\r\n') !== -1, ms);
      const split = this.buffered.indexOf('\r\n\r\n');
      const lines = this.buffered.subarray(0, split).toString('latin1').split('\r\n');
      this.buffered = this.buffered.subarray(split + 4);
      const line = lines[0]!;
      const status = Number(line.split(' ')[1]);
      const headers = lines.slice(1).map((l) => {
        const colon = l.indexOf(':');
        return [l.slice(0, colon).toLowerCase(), l.slice(colon + 1).trim()] as [string, string];
      });
      const answer: Answer = { line, status, headers, body: '', trailers: [] };
      if (status < 200) {
        if (opts.interim) return answer;
        continue;
      }
      const get = (name: string): string | undefined => headers.find(([n]) => n === name)?.[1];
      if (opts.head || status === 204 || status === 304) return answer;
      if (/chunked/i.test(get('transfer-encoding') ?? '')) {
        await this.readChunked(answer, ms);
      } else if (get('content-length') !== undefined) {
        const n = Number(get('content-length'));
        await this.until(() => this.buffered.length >= n, ms);
        answer.body = this.buffered.subarray(0, n).toString('latin1');
        this.buffered = this.buffered.subarray(n);
      } else {
        // Delimited by the close.
        await this.closed(ms);
        answer.body = this.buffered.toString('latin1');
        this.buffered = Buffer.alloc(0);
      }
      return answer;
    }
  }

  private async readChunked(answer: Answer, ms: number): Promise<void> {
    const line = async (): Promise<string> => {
      await this.until(() => this.buffered.indexOf('\r\n') !== -1, ms);
      const eol = this.buffered.indexOf('\r\n');
      const text = this.buffered.subarray(0, eol).toString('latin1');
      this.buffered = this.buffered.subarray(eol + 2);
      return text;
    };
    for (;;) {
      const size = parseInt(await line(), 16);
      if (!size) break;
      await this.until(() => this.buffered.length >= size + 2, ms);
      answer.body += this.buffered.subarray(0, size).toString('latin1');
      this.buffered = this.buffered.subarray(size + 2);
    }
    for (let t = await line(); t !== ''; t = await line()) answer.trailers.push(t);
  }

  /** Bytes received and not read as an answer yet. */
  unread(): string {
    return this.buffered.toString('latin1');
  }

  /** Resolves once the server has closed the connection (fails after `ms`). */
  closed(ms = 5000): Promise<void> {
    if (this.ended) return Promise.resolve();
    return within(
      new Promise<void>((resolve) => {
        this.socket.once('end', resolve);
        this.socket.once('close', resolve);
      }),
      ms,
      'the close',
    );
  }

  destroy(): void {
    this.socket.destroy();
  }
}

/**
 * Start a gateway whose config needs `count` bind ports. freePort() can race with other test files (the OS may
 * hand the same port to someone else before the gateway binds it), so EADDRINUSE is retried with new ports.
 */
export async function startGatewayOnFreePorts(
  count: number,
  build: (ports: number[]) => Record<string, unknown>,
  options?: Parameters<typeof startGateway>[1],
): Promise<{ gw: RunningGateway; ports: number[] }> {
  for (let attempt = 1; ; attempt++) {
    const ports: number[] = [];
    for (let i = 0; i < count; i++) ports.push(await freePort());
    try {
      return { gw: await startGateway(build(ports), options), ports };
    } catch (err) {
      if (attempt >= 5 || !/EADDRINUSE/.test(String((err as Error)?.message))) throw err;
    }
  }
}

/** A node:http upstream on a free port of 127.0.0.1: its `host:port`, closed with its connections. */
export interface HttpUpstream {
  readonly server: Server;
  readonly host: string;
  close(): Promise<void>;
}

export async function startHttpUpstream(handler: RequestListener): Promise<HttpUpstream> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    server,
    host: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** How many undici requests (`UNDICI_REQUEST` async resources) were made while `run` ran. */
export async function undiciRequestsDuring(run: () => Promise<void>): Promise<number> {
  let made = 0;
  const hook = createHook({
    init(_id, type) {
      if (type === 'UNDICI_REQUEST') made++;
    },
  });
  hook.enable();
  try {
    await run();
  } finally {
    hook.disable();
  }
  return made;
}

/**
 * How many undici requests the gateway made to answer `times` GETs of `url` (each 200): the direct path makes none.
 * The test's own `request()` calls are counted too, and subtracted.
 */
export async function requestHandlersFor(url: string, times: number, headers?: Record<string, string>): Promise<number> {
  const made = await undiciRequestsDuring(async () => {
    for (let i = 0; i < times; i++) {
      const res = await request(url, { headers });
      assert.equal(res.statusCode, 200);
      await res.body.text();
    }
  });
  return made - times;
}

/** What `plainRouteSuite` gives the cases of its suite (set once its `before` hook ran). */
export interface PlainRouteSuite {
  readonly up: TestUpstream;
  /** The gateway (its log lines, its stats address) and its bind port. */
  readonly gw: RunningGateway;
  readonly port: number;
  /** A raw client of the gateway, closed after the suite. */
  client(): RawClient;
}

/**
 * For a suite of raw-socket cases against one plain route (test/e2e/http1-*.test.ts): an upstream whose answer is
 * `answer(method, url, body)` (latin1, with its length), a gateway on `side`, and after every case a check that the
 * same gateway still serves a plain request on a new connection. Call it inside the suite's `describe`.
 */
export function plainRouteSuite(side: (typeof SERVER_SIDES)[number], answer: (method: string, url: string, body: Buffer) => string): PlainRouteSuite {
  let up: TestUpstream | undefined;
  let gw: RunningGateway | undefined;
  let port = 0;
  const clients: RawClient[] = [];
  before(async () => {
    up = await startUpstream((req, res, body) => {
      const text = answer(req.method!, req.url!, body);
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(text, 'latin1') });
      res.end(text, 'latin1');
    });
    ({ gw, ports: [port] } = await startGatewayOnFreePorts(1, ([p]) => oneListenerConfig(p!, [{ name: 'plain', backends: [{ host: `127.0.0.1:${up!.port}` }] }], { config: { logging: { format: 'json' } } }), { env: side.env }));
  });
  after(async () => {
    for (const c of clients) c.destroy();
    await gw?.stop();
    await up?.close();
  });
  const suite: PlainRouteSuite = {
    get up() {
      return up!;
    },
    get gw() {
      return gw!;
    },
    get port() {
      return port;
    },
    client() {
      const c = new RawClient(port);
      clients.push(c);
      return c;
    },
  };
  afterEach(async () => {
    const a = await suite.client().send('GET /after HTTP/1.1\r\nHost: h\r\nConnection: close');
    assert.equal(a.status, 200, 'the gateway still serves');
    assert.equal(a.body, answer('GET', '/after', Buffer.alloc(0)));
  });
  return suite;
}
