// The lean HTTP/1.1 server side (ADR 0088) against node:http: the same raw bytes sent to a gateway with the lean side
// (the default) and to one with `SWITCHYARD_LEAN_HTTP=off` must read back the same bytes (Date and request ids
// aside), and the upstream (which echoes what it received) must have been sent the same request. The cases are the
// lean path's own (keep-alive, bodies, pipelining, HEAD, Connection: close, big and chunked answers, upstream
// failures) and every kind it hands to node:http (split heads, bodies in a later read, chunked and Expect requests,
// HTTP/1.0, smuggling shapes, malformed heads, 431, upgrades, other routes) on the first request or a later one.
import assert from 'node:assert/strict';
import { createServer as createHttpServer } from 'node:http';
import type { Server as HttpServer } from 'node:http';
import { connect, createServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startRoutesGateway } from '../helpers/gateway.ts';
import type { RoutesGateway } from '../helpers/gateway.ts';
import { RequestPipeline } from '../../kernel/runtime/request-pipeline.ts';
import { createHash } from 'node:crypto';
import { LeanAnswer } from '../../kernel/runtime/lean-answer.ts';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { definePolicy } from 'switchyard/sdk';
import type { PolicyInstance } from 'switchyard/sdk';
import { fullPreset } from '../../plugins/presets/full.ts';
import { startEnvoyServer } from '../helpers/envoy-grpc-servers.ts';
import type { TestEnvoyServer } from '../helpers/envoy-grpc-servers.ts';

// Routes with policies that promise `requestStream: false` (ADR 0088 addendum) are served lean too: the bench's
// policies route (requestHeaderModifier, responseHeaderModifier, cors, localRateLimit), its jwt route (jwtAuth,
// authorization, localRateLimit), a route whose 1-token bucket answers 429, and a test policy that reads the body
// through `bufferBody` with a 16-byte limit. A test policy that reads `ex.req` as a stream keeps node:http.
// Session 12 (polcost): apiKey, basicAuth, directResponse, requestRedirect, urlRewrite, timeout, transformations,
// extAuthz (HTTP and gRPC), remoteRateLimit and requestMirror (against in-process services) promise it too, each with a route below (answers, refusals and
// rewrites byte for byte, and served lean).
const ISSUER = 'https://issuer.lean.test';
const AUDIENCE = 'lean-test';
const keys = await generateKeyPair('RS256');
const jwksDir = mkdtempSync(join(tmpdir(), 'lean-jwks-'));
const JWKS_FILE = join(jwksDir, 'jwks.json');
writeFileSync(JWKS_FILE, JSON.stringify({ keys: [{ ...(await exportJWK(keys.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' }] }));
const sign = (sub: string): Promise<string> =>
  new SignJWT({ groups: ['lean'] }).setProtectedHeader({ alg: 'RS256', kid: 'k1', typ: 'JWT' }).setIssuer(ISSUER).setAudience(AUDIENCE).setSubject(sub).setIssuedAt().setExpirationTime('1h').sign(keys.privateKey);
const TOKEN = await sign('lean-user');
const HTPASSWD_FILE = join(jwksDir, 'htpasswd');
writeFileSync(HTPASSWD_FILE, `lean:{SHA}${createHash('sha1').update('lean-pass').digest('base64')}\n`);
const basic = (user: string, password: string): string => `Authorization: Basic ${Buffer.from(`${user}:${password}`).toString('base64')}\r\n`;
const OTHER_TOKEN = await sign('someone-else');

/** A lean-safe test policy (no settings) whose request hook is `onRequest`. */
const leanSafe = (key: string, description: string, onRequest: PolicyInstance['onRequest']) =>
  definePolicy<Record<string, never>>({
    key,
    description,
    schema: { type: 'object', description: 'No settings.', additionalProperties: false },
    attach: ['routePolicies'],
    phase: 'mutate',
    requestStream: false,
    compile: () => ({ onRequest }),
  });

/** Reads the body through `bufferBody` (16-byte limit) and says how long it was. */
const bodyLength = leanSafe('testBodyLength', 'Test: reads the body through bufferBody.', async (ex) => {
  ex.headers['x-body-length'] = String((await ex.bufferBody(16)).length);
});

/** Sets the request's Content-Length past 64 KiB, as a third-party plugin may (the header modifiers refuse it, ADR 0125). */
const lengthSetter = leanSafe('testLengthSetter', 'Test: sets Content-Length to 70000.', (ex) => {
  ex.headers['content-length'] = '70000';
});

/** Reads `ex.req` as a stream (no `requestStream: false`): its route must stay node:http's. */
const streamReader = definePolicy<Record<string, never>>({
  key: 'testStreamReader',
  description: 'Test: reads the request as a stream.',
  schema: { type: 'object', description: 'No settings.', additionalProperties: false },
  attach: ['routePolicies'],
  phase: 'mutate',
  compile: () => ({
    async onRequest(ex) {
      const chunks: Buffer[] = [];
      await new Promise<void>((resolve) => {
        ex.req.on('data', (c: Buffer) => void chunks.push(c));
        ex.req.on('end', resolve);
      });
      const body = Buffer.concat(chunks);
      ex.headers['x-streamed'] = String(body.length);
      ex.setBody(body);
    },
  }),
});

/**
 * Requests the lean side served (the gateway runs in this process: its pipeline's prototype is counted), in all and by
 * the gateway port they came in on: a case runs on both gateways at once and each side's count is its own.
 */
let served = 0;
const servedOn = new Map<number, number>();
const serveLean = RequestPipeline.prototype.serveLean;
RequestPipeline.prototype.serveLean = function (this: RequestPipeline, ...args: Parameters<typeof serveLean>) {
  served++;
  countOn(servedOn, args[0].socket.localPort);
  return serveLean.apply(this, args);
};

function countOn(counts: Map<number, number>, port: number | undefined): void {
  if (port !== undefined) counts.set(port, (counts.get(port) ?? 0) + 1);
}

/** The size of `/p/huge`'s answer. */
const HUGE = 2 * 1024 * 1024;

/** Answers the lean side wrote itself, without node:http's ServerResponse (ADR 0093), by gateway port. */
const answeredOn = new Map<number, number>();
const writeCheckedHead = LeanAnswer.prototype.writeCheckedHead;
LeanAnswer.prototype.writeCheckedHead = function (this: LeanAnswer, ...args: Parameters<typeof writeCheckedHead>) {
  const wrote = writeCheckedHead.apply(this, args);
  if (wrote) countOn(answeredOn, this.socket.localPort);
  return wrote;
};

/** Upstream sockets by the `x-gw` tag of the request they carried, for the client-abort case. */
const tagged = new Map<string, Socket>();

/** Exact answers of the upstream by path prefix (the answer side's cases, ADR 0093). */
const ANSWERS: Record<string, string> = {
  '/p/16k': `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${16 * 1024}\r\n\r\n${'j'.repeat(16 * 1024)}`,
  '/p/204': 'HTTP/1.1 204 No Content\r\nX-A: 1\r\n\r\n',
  '/p/304': 'HTTP/1.1 304 Not Modified\r\nETag: "v1"\r\nContent-Length: 12\r\n\r\n',
  '/p/dated': 'HTTP/1.1 201 Created\r\nDate: Thu, 01 Jan 2026 00:00:00 GMT\r\nSet-Cookie: a=1\r\nX-Multi: one\r\nSet-Cookie: b=2\r\nContent-Length: 2\r\n\r\nok',
  '/p/upclose': 'HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok',
  '/p/1xx': 'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok',
  '/p/empty-chunked': 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
  '/p/status': 'HTTP/1.1 599 Whatever\r\nContent-Length: 0\r\n\r\n',
  '/p/xconn': 'HTTP/1.1 200 OK\r\nConnection: x-drop\r\nX-Drop: 1\r\nContent-Length: 2\r\n\r\nok',
  '/p/expect': 'HTTP/1.1 200 OK\r\nExpect: odd\r\nContent-Length: 2\r\n\r\nok',
};

/** Bytes of the chunked body at `from` up to its last chunk's empty trailer line; -1 while not all read yet. */
function chunkedLength(buf: Buffer, from: number): number {
  let at = from;
  for (;;) {
    const line = buf.indexOf('\r\n', at);
    if (line === -1) return -1;
    const size = parseInt(buf.subarray(at, line).toString('latin1'), 16);
    if (size === 0) {
      const trailer = buf.indexOf('\r\n\r\n', line);
      return trailer === -1 ? -1 : trailer + 4 - from;
    }
    at = line + 2 + size + 2;
    if (at > buf.length) return -1;
  }
}

/** An upstream that answers each request with the bytes it received (head and body, chunked or Content-Length). */
async function startEchoUpstream(): Promise<{ port: number; server: Server; sockets: Set<Socket> }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    let pending = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      for (let end = pending.indexOf('\r\n\r\n'); end !== -1; end = pending.indexOf('\r\n\r\n')) {
        const head = pending.subarray(0, end).toString('latin1');
        // A chunked body is echoed with its framing; read as a Content-Length of 0, it was taken for a request of its
        // own, answered or not depending on how the gateway's writes fell into this server's reads (a flaky case).
        const length = /\r\ntransfer-encoding: *chunked/i.test(head) ? chunkedLength(pending, end + 4) : Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
        if (length === -1 || pending.length < end + 4 + length) return;
        // The request id the gateway made is random (and of varying length): left out of the echo.
        const received = Buffer.from(pending.subarray(0, end + 4 + length).toString('latin1').replace(/\r\nx-request-id: [^\r]*/i, ''), 'latin1');
        pending = pending.subarray(end + 4 + length);
        const path = head.split(' ')[1] ?? '';
        if (path.startsWith('/p/fail')) return void socket.destroy();
        const tag = /\r\nx-gw: (\w+)/i.exec(head)?.[1];
        if (tag !== undefined) tagged.set(tag, socket);
        const exact = Object.keys(ANSWERS).find((prefix) => path.startsWith(prefix));
        if (exact !== undefined) {
          socket.write(ANSWERS[exact]!);
          if (exact === '/p/upclose') socket.end();
          continue;
        }
        if (path.startsWith('/p/cut-chunked')) {
          socket.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n');
          setTimeout(() => socket.destroy(), 30);
          return;
        }
        if (path.startsWith('/p/cut')) {
          socket.write('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789');
          setTimeout(() => socket.destroy(), 30);
          return;
        }
        if (path.startsWith('/p/eof')) {
          // No Content-Length, no chunking: the body runs until the upstream closes (sent on chunked).
          socket.write('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil ');
          setTimeout(() => socket.end('close'), 30);
          return;
        }
        if (path.startsWith('/p/stream')) {
          socket.write('HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n');
          setTimeout(() => socket.write('6\r\nsecond\r\n0\r\n\r\n'), 30);
          continue;
        }
        if (path.startsWith('/p/drip')) {
          // An answer that goes on until the gateway gives it up.
          socket.write('HTTP/1.1 200 OK\r\nContent-Length: 100000000\r\n\r\n');
          const drip = setInterval(() => (socket.destroyed ? clearInterval(drip) : socket.write(Buffer.alloc(1024, 'd'))), 10);
          return;
        }
        if (path.startsWith('/p/huge')) {
          // More than the socket's high-water mark in more than one read: the answer goes on after a 'drain'.
          socket.write(`HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ${HUGE}\r\n\r\n`);
          socket.write(Buffer.alloc(HUGE, 'h'));
        } else if (path.startsWith('/p/big')) {
          socket.write(`HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ${40 * 1024}\r\n\r\n${'b'.repeat(40 * 1024)}`);
        } else if (path.startsWith('/p/chunked')) {
          socket.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n');
        } else if (head.startsWith('HEAD ')) {
          socket.write(`HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ${received.length}\r\n\r\n`);
        } else {
          const answer = (): boolean => socket.write(Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ${received.length}\r\n\r\n`), received]));
          if (path.startsWith('/p/slow')) setTimeout(answer, 60);
          else answer();
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, server, sockets };
}

/** What a raw client reads back: everything until the server closes, or until it has been quiet for `quietMs`. */
function exchange(port: number, writes: readonly (string | Buffer)[], opts: { gapMs?: number; quietMs?: number; halfClose?: boolean } = {}): Promise<string> {
  const gap = opts.gapMs ?? 40;
  const quiet = opts.quietMs ?? 250;
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let timer: NodeJS.Timeout | undefined;
    let done = false;
    const finish = (how: string): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(Buffer.concat(chunks).toString('latin1') + `[${how}]`);
    };
    // Quiet for `quiet` ms and then for some turns of the event loop: on a loaded machine this process may not run
    // for longer than the window, and when it does its timers fire before the bytes that came in meanwhile are read
    // (the gateways and the upstream are in this process: each hop of an answer is a turn).
    const settle = (turns: number): void => {
      const seen = chunks.length;
      setImmediate(() => {
        if (done || chunks.length !== seen) return; // more came: `arm` waits again
        if (turns > 0) settle(turns - 1);
        else finish('open');
      });
    };
    const arm = (): void => {
      clearTimeout(timer);
      timer = setTimeout(() => settle(20), quiet);
    };
    socket.on('data', (c: Buffer) => {
      chunks.push(c);
      arm();
    });
    socket.on('end', () => finish('closed'));
    socket.on('error', () => finish('reset'));
    socket.on('connect', async () => {
      for (let i = 0; i < writes.length; i++) {
        if (i > 0) await new Promise((r) => setTimeout(r, gap));
        if (!socket.destroyed) socket.write(writes[i]!);
      }
      if (opts.halfClose) socket.end();
      arm();
    });
  });
}

/** Date and request ids differ between two runs; the gateway's own port is not in any of the bytes compared. */
function normalise(text: string): string {
  return text
    .replace(/^Date: .*$/gim, 'Date: <date>')
    .replace(/^x-request-id: .*$/gim, 'x-request-id: <id>')
    // Seconds to the rate limiter's next fill: a second boundary may fall between the two gateways' answers.
    .replace(/^(x-ratelimit-reset|retry-after): \d+$/gim, '$1: <s>')
    .replace(/"request_id":"[^"]*"/g, '"request_id":"<id>"');
}

const GET = (path: string, extra = ''): string => `GET ${path} HTTP/1.1\r\nHost: gw.test\r\n${extra}\r\n`;
const POST = (path: string, body: string, extra = ''): string => `POST ${path} HTTP/1.1\r\nHost: gw.test\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`;

/** Each case: the writes a client makes (separated by a short gap), and whether it then half-closes. */
const CASES: Record<string, { writes: (string | Buffer)[]; halfClose?: boolean; quietMs?: number; gapMs?: number }> = {
  'keep-alive GETs on one connection': { writes: [GET('/p/a'), GET('/p/b?x=1&y=%20z')] },
  'a POST body in the same read': { writes: [POST('/p/post', '{"model":"m","messages":[]}')] },
  'a POST body in a later read (node:http)': { writes: [POST('/p/post', '').replace('Content-Length: 0', 'Content-Length: 11'), 'hello world'] },
  'a head split across reads (node:http)': { writes: ['GET /p/split HTTP/1.1\r\nHo', 'st: gw.test\r\n\r\n'] },
  'two pipelined requests in one read': { writes: [GET('/p/one') + POST('/p/two', 'abc')] },
  'a pipelined request behind a slow answer': { writes: [GET('/p/slow') + GET('/p/after')] },
  'a pipelined malformed request behind a good one': { writes: [GET('/p/good') + 'GET /p/bad HTTP/1.1\r\nHost: gw.test\r\nX: a\nY: b\r\n\r\n'] },
  'a malformed request after a lean one (node:http from there)': { writes: [GET('/p/first'), 'GET /p/x HTTP/1.1\r\nHost: gw.test\r\nBad Name: v\r\n\r\n'] },
  'a lean request, then one for node:http, then a lean one': { writes: [GET('/p/1'), 'GET /p/2 HTTP/1.1\r\nHost: gw.test\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n', GET('/p/3')] },
  'Connection: close': { writes: [GET('/p/close', 'Connection: close\r\n')] },
  'Connection: keep-alive': { writes: [GET('/p/ka', 'Connection: keep-alive\r\n'), GET('/p/ka2')] },
  'Connection naming a header (node:http)': { writes: [GET('/p/cx', 'Connection: x-foo\r\nX-Foo: 1\r\n')] },
  HEAD: { writes: [`HEAD /p/head HTTP/1.1\r\nHost: gw.test\r\n\r\n`, GET('/p/after-head')] },
  'OPTIONS, DELETE, PUT, PATCH': { writes: ['OPTIONS /p/o HTTP/1.1\r\nHost: gw.test\r\n\r\n', 'DELETE /p/d HTTP/1.1\r\nHost: gw.test\r\n\r\n', POST('/p/put', 'x').replace('POST', 'PUT'), POST('/p/patch', 'y').replace('POST', 'PATCH')] },
  'a GET with a body': { writes: [`GET /p/gb HTTP/1.1\r\nHost: gw.test\r\nContent-Length: 3\r\n\r\nabc`] },
  'Content-Length: 0 and leading zeros': { writes: [`POST /p/z HTTP/1.1\r\nHost: gw.test\r\nContent-Length: 0\r\n\r\n`, `POST /p/z2 HTTP/1.1\r\nHost: gw.test\r\nContent-Length: 003\r\n\r\nabc`] },
  'header whitespace, empty values, case of names': { writes: [GET('/p/ws', 'X-A:   spaced   \r\nx-b:\ttabbed\t\r\nX-Empty:\r\nX-CASE: MiXeD\r\n')] },
  'a client x-request-id and x-forwarded-for': { writes: [GET('/p/rid', 'X-Request-Id: abc123\r\nX-Forwarded-For: 10.0.0.1\r\n')] },
  'a chunked request body (node:http)': { writes: ['POST /p/te HTTP/1.1\r\nHost: gw.test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n'] },
  'Content-Length and Transfer-Encoding (node:http refuses)': { writes: ['POST /p/s HTTP/1.1\r\nHost: gw.test\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'] },
  'two Content-Lengths (node:http refuses)': { writes: ['POST /p/s HTTP/1.1\r\nHost: gw.test\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab'] },
  'a Content-Length that is not digits (node:http refuses)': { writes: ['POST /p/s HTTP/1.1\r\nHost: gw.test\r\nContent-Length: +1\r\n\r\na'] },
  'obs-fold (node:http refuses)': { writes: ['GET /p/f HTTP/1.1\r\nHost: gw.test\r\nX-A: one\r\n two\r\n\r\n'] },
  'a bare LF (node:http)': { writes: ['GET /p/lf HTTP/1.1\nHost: gw.test\n\n'] },
  'a bare CR in a value (node:http refuses)': { writes: ['GET /p/cr HTTP/1.1\r\nHost: gw.test\r\nX-A: a\rb\r\n\r\n'] },
  'a NUL in a value (node:http refuses)': { writes: [Buffer.from('GET /p/nul HTTP/1.1\r\nHost: gw.test\r\nX-A: a\u0000b\r\n\r\n', 'latin1')] },
  'obs-text in a value (node:http)': { writes: [Buffer.from('GET /p/obs HTTP/1.1\r\nHost: gw.test\r\nX-A: caf\u00e9\r\n\r\n', 'latin1')] },
  'a space before the colon (node:http refuses)': { writes: ['GET /p/sp HTTP/1.1\r\nHost: gw.test\r\nX-A : v\r\n\r\n'] },
  'no Host (node:http refuses)': { writes: ['GET /p/nohost HTTP/1.1\r\nX-A: v\r\n\r\n'] },
  'two Hosts (node:http)': { writes: ['GET /p/hh HTTP/1.1\r\nHost: gw.test\r\nHost: other\r\n\r\n'] },
  'HTTP/1.0 (node:http)': { writes: ['GET /p/10 HTTP/1.0\r\nHost: gw.test\r\n\r\n'] },
  'HTTP/1.0 keep-alive (node:http)': { writes: ['GET /p/10 HTTP/1.0\r\nHost: gw.test\r\nConnection: keep-alive\r\n\r\n', GET('/p/11')] },
  'Expect: 100-continue (node:http)': { writes: ['POST /p/e HTTP/1.1\r\nHost: gw.test\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n', 'abc'] },
  'an upgrade request (node:http)': { writes: ['GET /p/ws HTTP/1.1\r\nHost: gw.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n'] },
  'an unknown method (node:http refuses)': { writes: ['FOO /p/m HTTP/1.1\r\nHost: gw.test\r\n\r\n'] },
  'CONNECT (node:http: 405)': { writes: ['CONNECT gw.test:443 HTTP/1.1\r\nHost: gw.test:443\r\n\r\n'] },
  'an absolute-form target (node:http)': { writes: ['GET http://gw.test/p/abs HTTP/1.1\r\nHost: other\r\n\r\n'] },
  'a fragment and odd characters in the target (node:http)': { writes: ['GET /p/q#frag HTTP/1.1\r\nHost: gw.test\r\n\r\n', 'GET /p/"quoted"|{} HTTP/1.1\r\nHost: gw.test\r\n\r\n'] },
  'a path refused by normalisation': { writes: [GET('/p/../../etc'), GET('/p/%2e%2e/x')] },
  // Request-target corners (ADR 0013, 0166): each side makes the same exchange of them, lean or handed to node:http.
  'absolute form without a path, with a port, upper-case scheme, https': { writes: ['GET http://gw.test HTTP/1.1\r\nHost: o\r\n\r\n', 'GET http://gw.test:80/p/a?x=1 HTTP/1.1\r\nHost: o\r\n\r\n', 'GET HTTPS://gw.test/p/b HTTP/1.1\r\nHost: o\r\n\r\n'] },
  'absolute form refused: no authority, userinfo, ftp': { writes: ['GET http:///p/x HTTP/1.1\r\nHost: gw.test\r\n\r\n', 'GET http://u:p@gw.test/p/x HTTP/1.1\r\nHost: gw.test\r\n\r\n', 'GET ftp://gw.test/p/x HTTP/1.1\r\nHost: gw.test\r\n\r\n'] },
  'asterisk form (400)': { writes: ['OPTIONS * HTTP/1.1\r\nHost: gw.test\r\n\r\n', 'GET * HTTP/1.1\r\nHost: gw.test\r\n\r\n'] },
  '%2F, %5C, %00 and overlong UTF-8 in the path (400)': { writes: [GET('/p/a%2Fb'), GET('/p/a%5cb'), GET('/p/a%00'), GET('/p/%C0%AE%C0%AE/x'), GET('/p/%E0%80%AF')] },
  'escapes kept and decoded, double slashes, dot segments out of a prefix': { writes: [GET('/p/%e2%9c%93/%41%7e/%ff'), GET('//p//a//b'), GET('/p/a/../../dr/x'), GET('/p/..'), GET('/px/../p/y'), GET('/p/x?q=/../dr')] },
  'a 16 KiB+ header (node:http: 431)': { writes: [GET('/p/big-head', `X-Big: ${'a'.repeat(20 * 1024)}\r\n`)] },
  'many headers (node:http)': { writes: [GET('/p/many', Array.from({ length: 120 }, (_, i) => `X-H${i}: ${i}\r\n`).join(''))] },
  'no route (404)': { writes: [GET('/nowhere'), GET('/p/after-404')] },
  'a route with a requestHeaderModifier': { writes: [GET('/hooked/x'), GET('/p/after-hooked')] },
  'a 40 KiB answer': { writes: [GET('/p/big')] },
  'a 2 MiB answer, then a request on the same connection': { writes: [GET('/p/huge'), GET('/p/after-huge')] },
  'a 16 KiB answer': { writes: [POST('/p/16k', '{"model":"m"}'), GET('/p/after-16k')] },
  'a HEAD of a 16 KiB answer': { writes: [`HEAD /p/16k HTTP/1.1\r\nHost: gw.test\r\n\r\n`, GET('/p/after-head')] },
  '204 and 304 answers': { writes: [GET('/p/204'), GET('/p/304'), `HEAD /p/204 HTTP/1.1\r\nHost: gw.test\r\n\r\n`, GET('/p/after')] },
  "the upstream's Date, repeated headers, a 201": { writes: [GET('/p/dated'), GET('/p/status')] },
  'the upstream closes its connection after its answer': { writes: [GET('/p/upclose'), GET('/p/after-upclose')] },
  'the upstream sends 1xx answers first': { writes: [GET('/p/1xx'), GET('/p/after-1xx')] },
  'an empty chunked answer, a streamed one, one until the upstream closes': { writes: [GET('/p/empty-chunked'), GET('/p/stream'), GET('/p/eof'), GET('/p/after-eof')] },
  "an answer's Connection naming a header, an answer with Expect (node:http writes them)": { writes: [GET('/p/xconn'), GET('/p/expect')] },
  // The next request well after the cut: one arriving as the gateway closes makes the client read a reset or a close
  // by the kernel's timing, on either side.
  'the upstream closes mid-body (Content-Length)': { writes: [GET('/p/cut'), GET('/p/after-cut')], gapMs: 200 },
  'the upstream closes mid-body (chunked)': { writes: [GET('/p/cut-chunked'), GET('/p/after-cut')], gapMs: 200 },
  'keep-alive, then Connection: close, then one more': { writes: [GET('/p/ka1'), GET('/p/ka2', 'Connection: close\r\n'), GET('/p/never')] },
  'a pipelined pair, the second closing': { writes: [GET('/p/16k') + GET('/p/stream', 'Connection: close\r\n')] },
  'a chunked answer': { writes: [GET('/p/chunked'), GET('/p/after-chunked')] },
  'the upstream fails (502)': { writes: [GET('/p/fail'), GET('/p/after-fail')] },
  'the client half-closes after its request': { writes: [GET('/p/slow')], halfClose: true },
  'the client half-closes with nothing sent': { writes: [], halfClose: true },
  'garbage': { writes: ['\r\n\r\nhello\r\n\r\n'] },
  'a leading CRLF before the request line (node:http)': { writes: ['\r\n' + GET('/p/crlf')] },
  'the policies route': { writes: [GET('/pol/a', 'X-Remove-Me: 1\r\nOrigin: https://app.lean.test\r\n'), POST('/pol/b', '{"a":1}', 'Origin: https://other.test\r\n')] },
  'the policies route: a cors preflight': { writes: ['OPTIONS /pol/pre HTTP/1.1\r\nHost: gw.test\r\nOrigin: https://app.lean.test\r\nAccess-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: content-type\r\n\r\n', GET('/pol/after')] },
  'localRateLimit: 200, then 429': { writes: [GET('/rl/a'), GET('/rl/b'), GET('/rl/c')] },
  'the jwt route: a good token': { writes: [GET('/jwt/a', `Authorization: Bearer ${TOKEN}\r\n`), POST('/jwt/b', 'xyz', `Authorization: Bearer ${TOKEN}\r\n`)] },
  'the jwt route: no token (401), a bad one (401), the wrong subject (403)': { writes: [GET('/jwt/none'), GET('/jwt/bad', 'Authorization: Bearer abc.def.ghi\r\n'), GET('/jwt/other', `Authorization: Bearer ${OTHER_TOKEN}\r\n`)] },
  'a policy reading the body through bufferBody': { writes: [GET('/body/none'), POST('/body/small', 'hello'), POST('/body/large', 'x'.repeat(20)), GET('/body/after')] },
  'a policy reading the request as a stream (node:http)': { writes: [POST('/stream/a', 'hello'), GET('/p/after-stream')] },
  'apiKey: a good key, a wrong one (401), none (401)': { writes: [GET('/key/a', 'X-Api-Key: k-lean-123\r\n'), GET('/key/b', 'X-Api-Key: nope\r\n'), POST('/key/c', 'abc')] },
  'basicAuth: good credentials, a wrong password (401), none (401)': { writes: [GET('/basic/a', basic('lean', 'lean-pass')), GET('/basic/b', basic('lean', 'wrong')), GET('/basic/c')] },
  'directResponse (a body sent is not read)': { writes: [GET('/dr/a'), POST('/dr/b', '{"ignored":true}'), GET('/p/after-dr')] },
  'requestRedirect': { writes: [GET('/redir/a?x=1'), POST('/redir/b', 'abc')] },
  'urlRewrite: a prefix rewrite': { writes: [GET('/rw/a?q=1'), POST('/rw/b', 'abc')] },
  'timeout: a requestTimeout the answer beats': { writes: [GET('/to/a'), POST('/to/b', 'abc')] },
  'transformations: CEL header edits both ways': { writes: [GET('/tf/a', 'X-In: one\r\n'), POST('/tf/b', 'abc')] },
  'requestMirror: a GET and a POST, mirrored': { writes: [GET('/mirror/a'), POST('/mirror/b', 'mirrored body')] },
  'extAuthz (gRPC): allowed, denied (403), allowed with a body': { writes: [GET('/authzg/a', 'X-User: ok\r\n'), GET('/authzg/b', 'X-User: no\r\n'), POST('/authzg/c', 'abc', 'X-User: ok\r\n')] },
  'remoteRateLimit: allowed, over the limit (429), allowed with a body': { writes: [GET('/rrl/a', 'X-User: ok\r\n'), GET('/rrl/b', 'X-User: blocked\r\n'), POST('/rrl/c', 'abc', 'X-User: ok\r\n')] },
  'extAuthz (HTTP): allowed, denied (403 with the service\'s body), allowed with a body': { writes: [GET('/authz/a', 'Authorization: Bearer let-me-in\r\n'), GET('/authz/b'), POST('/authz/c', 'abc', 'Authorization: Bearer let-me-in\r\n')] },
};

/** What the policy cases must read back (both sides read the same): the policies did their work. */
const EXPECTED: Record<string, RegExp[]> = {
  'the policies route': [/x-added: req\r\nx-set: req/, /x-served-by: switchyard/, /access-control-allow-origin: https:\/\/app\.lean\.test/i],
  'the policies route: a cors preflight': [/^HTTP\/1\.1 20\d [^]*access-control-allow-methods: GET, ?POST/i],
  'localRateLimit: 200, then 429': [/^HTTP\/1\.1 200 [^]*HTTP\/1\.1 429 [^]*HTTP\/1\.1 429 /],
  'the jwt route: a good token': [/^HTTP\/1\.1 200 [^]*GET \/jwt\/a[^]*HTTP\/1\.1 200 [^]*POST \/jwt\/b[^]*\r\n\r\nxyz/],
  'the jwt route: no token (401), a bad one (401), the wrong subject (403)': [/^HTTP\/1\.1 401 [^]*HTTP\/1\.1 401 [^]*HTTP\/1\.1 403 /],
  'a policy reading the body through bufferBody': [/x-body-length: 0\r\n[^]*x-body-length: 5\r\n[^]*\r\n\r\nhello[^]*HTTP\/1\.1 413 [^]*GET \/body\/after/],
  'a policy reading the request as a stream (node:http)': [/x-streamed: 5\r\n[^]*\r\n\r\nhello[^]*GET \/p\/after-stream/],
  'apiKey: a good key, a wrong one (401), none (401)': [/^HTTP\/1\.1 200 [^]*GET \/key\/a[^]*HTTP\/1\.1 401 [^]*HTTP\/1\.1 401 /],
  'basicAuth: good credentials, a wrong password (401), none (401)': [/^HTTP\/1\.1 200 [^]*GET \/basic\/a[^]*HTTP\/1\.1 401 [^]*HTTP\/1\.1 401 /],
  'directResponse (a body sent is not read)': [/^HTTP\/1\.1 203 [^]*\r\n\r\ndirectHTTP\/1\.1 203 [^]*\r\n\r\ndirectHTTP\/1\.1 200 [^]*GET \/p\/after-dr/],
  'requestRedirect': [/^HTTP\/1\.1 301 [^]*location: https:\/\/gw\.test\/redir\/a\?x=1\r\n[^]*HTTP\/1\.1 301 /i],
  'urlRewrite: a prefix rewrite': [/GET \/p\/rewritten\/a\?q=1 [^]*POST \/p\/rewritten\/b [^]*\r\n\r\nabc/],
  'timeout: a requestTimeout the answer beats': [/^HTTP\/1\.1 200 [^]*GET \/to\/a[^]*HTTP\/1\.1 200 [^]*POST \/to\/b/],
  'extAuthz (gRPC): allowed, denied (403), allowed with a body': [/^HTTP\/1\.1 200 [^]*GET \/authzg\/a[^]*HTTP\/1\.1 403 [^]*HTTP\/1\.1 200 [^]*POST \/authzg\/c[^]*\r\n\r\nabc/],
  'remoteRateLimit: allowed, over the limit (429), allowed with a body': [/^HTTP\/1\.1 200 [^]*GET \/rrl\/a[^]*HTTP\/1\.1 429 [^]*HTTP\/1\.1 200 [^]*POST \/rrl\/c[^]*\r\n\r\nabc/],
  'extAuthz (HTTP): allowed, denied (403 with the service\'s body), allowed with a body': [/^HTTP\/1\.1 200 [^]*GET \/authz\/a[^]*HTTP\/1\.1 403 [^]*denied by the test service[^]*HTTP\/1\.1 200 [^]*POST \/authz\/c[^]*\r\n\r\nabc/],
  'transformations: CEL header edits both ways': [/GET \/tf\/a[^]*x-tf: one-v\r\n[^]*POST \/tf\/b[^]*x-tf: -v\r\n/, /x-tf-back: \/tf\/a\r\n[^]*x-tf-back: \/tf\/b\r\n/],
};

describe('lean HTTP/1.1 server side reads back what node:http reads back (ADR 0088)', () => {
  let upstream: Awaited<ReturnType<typeof startEchoUpstream>>;
  let authz: HttpServer;
  let envoy: TestEnvoyServer;
  let mirror: HttpServer;
  /** What the mirror received: method, path and body of each copy. */
  const mirrored: string[] = [];
  let lean: RoutesGateway;
  let node: RoutesGateway;

  before(async () => {
    upstream = await startEchoUpstream();
    // extAuthz's HTTP service: allows one bearer token, denies anything else with a body of its own.
    authz = createHttpServer((req, res) => {
      if (req.headers.authorization === 'Bearer let-me-in') return void res.end();
      res.writeHead(403, { 'content-type': 'text/plain' }).end('denied by the test service');
    });
    await new Promise<void>((resolve) => authz.listen(0, '127.0.0.1', resolve));
    // requestMirror's target: records each copy.
    mirror = createHttpServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        mirrored.push(`${req.method} ${req.url} ${Buffer.concat(chunks).toString()}`);
        res.end();
      });
    });
    await new Promise<void>((resolve) => mirror.listen(0, '127.0.0.1', resolve));
    // extAuthz's gRPC service and a rate limit service, both without state (the two gateways ask them in turn).
    envoy = await startEnvoyServer({
      Check: (req) => ({ status: { code: req.attributes.request.http.headers['x-user'] === 'ok' ? 0 : 7 } }),
      ShouldRateLimit: (req) => {
        const over = req.descriptors.some((d) => d.entries.some((e) => e.value === 'blocked'));
        const status = { code: over ? 2 : 1, current_limit: { requests_per_unit: 10, unit: 2 }, limit_remaining: over ? 0 : 9, duration_until_reset: { seconds: 42, nanos: 0 } };
        return { overall_code: status.code, statuses: req.descriptors.map(() => status) };
      },
    });
    const routes = [
      { name: 'plain', matches: [{ path: { pathPrefix: '/p' } }], backends: [{ host: `127.0.0.1:${upstream.port}` }] },
      { name: 'hooked', matches: [{ path: { pathPrefix: '/hooked' } }], policies: { requestHeaderModifier: { set: { 'x-hooked': 'yes' } } }, backends: [{ host: `127.0.0.1:${upstream.port}` }] },
      {
        name: 'pol',
        matches: [{ path: { pathPrefix: '/pol' } }],
        policies: {
          requestHeaderModifier: { add: { 'x-added': 'req' }, set: { 'x-set': 'req' }, remove: ['x-remove-me'] },
          responseHeaderModifier: { set: { 'x-served-by': 'switchyard' }, remove: ['x-powered-by'] },
          cors: { allowOrigins: ['https://app.lean.test'], allowMethods: ['GET', 'POST'], allowHeaders: ['content-type'], exposeHeaders: ['x-served-by'], maxAge: '600s' },
          localRateLimit: [{ maxTokens: 1_000_000, tokensPerFill: 1_000_000, fillInterval: '1s' }],
        },
        backends: [{ host: `127.0.0.1:${upstream.port}` }],
      },
      { name: 'rl', matches: [{ path: { pathPrefix: '/rl' } }], policies: { localRateLimit: [{ maxTokens: 1, tokensPerFill: 1, fillInterval: '1000s' }] }, backends: [{ host: `127.0.0.1:${upstream.port}` }] },
      {
        name: 'jwt',
        matches: [{ path: { pathPrefix: '/jwt' } }],
        policies: {
          jwtAuth: { mode: 'strict', issuer: ISSUER, audiences: [AUDIENCE], jwks: { file: JWKS_FILE } },
          authorization: { rules: [{ require: 'jwt.sub == "lean-user"' }, { require: '"lean" in jwt.groups' }] },
          localRateLimit: [{ maxTokens: 1_000_000, tokensPerFill: 1_000_000, fillInterval: '1s' }],
        },
        backends: [{ host: `127.0.0.1:${upstream.port}` }],
      },
      { name: 'body', matches: [{ path: { pathPrefix: '/body' } }], policies: { testBodyLength: {} }, backends: [{ host: `127.0.0.1:${upstream.port}` }] },
      { name: 'cl', matches: [{ path: { pathPrefix: '/cl' } }], policies: { testLengthSetter: {} }, backends: [{ host: `127.0.0.1:${upstream.port}` }] },
      { name: 'stream', matches: [{ path: { pathPrefix: '/stream' } }], policies: { testStreamReader: {} }, backends: [{ host: `127.0.0.1:${upstream.port}` }] },
      { name: 'key', matches: [{ path: { pathPrefix: '/key' } }], policies: { apiKey: { mode: 'strict', keys: [{ key: 'k-lean-123' }] } }, backends: [{ host: `127.0.0.1:${upstream.port}` }] },
      { name: 'basic', matches: [{ path: { pathPrefix: '/basic' } }], policies: { basicAuth: { mode: 'strict', htpasswd: { file: HTPASSWD_FILE } } }, backends: [{ host: `127.0.0.1:${upstream.port}` }] },
      { name: 'dr', matches: [{ path: { pathPrefix: '/dr' } }], policies: { directResponse: { status: 203, body: 'direct' } }, backends: [{ host: `127.0.0.1:${upstream.port}` }] },
      { name: 'redir', matches: [{ path: { pathPrefix: '/redir' } }], policies: { requestRedirect: { scheme: 'https', status: 301 } }, backends: [{ host: `127.0.0.1:${upstream.port}` }] },
      { name: 'rw', matches: [{ path: { pathPrefix: '/rw' } }], policies: { urlRewrite: { path: { prefix: '/p/rewritten' } } }, backends: [{ host: `127.0.0.1:${upstream.port}` }] },
      { name: 'to', matches: [{ path: { pathPrefix: '/to' } }], policies: { timeout: { requestTimeout: '5s' } }, backends: [{ host: `127.0.0.1:${upstream.port}` }] },
      {
        name: 'tf',
        matches: [{ path: { pathPrefix: '/tf' } }],
        policies: { transformations: { request: { set: { 'x-tf': '("x-in" in request.headers ? request.headers["x-in"] : "") + "-v"' } }, response: { set: { 'x-tf-back': 'request.path' } } } },
        backends: [{ host: `127.0.0.1:${upstream.port}` }],
      },
      { name: 'mirror', matches: [{ path: { pathPrefix: '/mirror' } }], policies: { requestMirror: { backend: { host: `127.0.0.1:${(mirror.address() as AddressInfo).port}` } } }, backends: [{ host: `127.0.0.1:${upstream.port}` }] },
      { name: 'authzg', matches: [{ path: { pathPrefix: '/authzg' } }], policies: { extAuthz: { host: envoy.address } }, backends: [{ host: `127.0.0.1:${upstream.port}` }] },
      {
        name: 'rrl',
        matches: [{ path: { pathPrefix: '/rrl' } }],
        policies: { remoteRateLimit: { host: envoy.address, domain: 'lean', descriptors: [{ entries: [{ key: 'user', value: 'request.headers["x-user"]' }] }] } },
        backends: [{ host: `127.0.0.1:${upstream.port}` }],
      },
      {
        name: 'authz',
        matches: [{ path: { pathPrefix: '/authz' } }],
        policies: { extAuthz: { host: `127.0.0.1:${(authz.address() as AddressInfo).port}`, protocol: { http: {} } } },
        backends: [{ host: `127.0.0.1:${upstream.port}` }],
      },
    ];
    const preset = [...fullPreset, bodyLength, streamReader, lengthSetter];
    lean = await startRoutesGateway(routes, { preset });
    node = await startRoutesGateway(routes, { preset, env: { ...process.env, SWITCHYARD_LEAN_HTTP: 'off' } });
  });
  after(async () => {
    await lean?.stop();
    await node?.stop();
    for (const s of upstream?.sockets ?? []) s.destroy();
    await new Promise((r) => upstream?.server.close(r));
    await envoy?.stop();
    mirror?.closeAllConnections();
    await new Promise((r) => mirror?.close(r));
    authz?.closeAllConnections();
    await new Promise((r) => authz?.close(r));
  });

  for (const [name, c] of Object.entries(CASES)) {
    it(name, async () => {
      const [a, b] = await Promise.all([exchange(lean.port, c.writes, c), exchange(node.port, c.writes, c)]);
      assert.equal(normalise(a), normalise(b));
      for (const expected of EXPECTED[name] ?? []) assert.match(a, expected);
    });
  }

  // The cases above would pass with everything handed off: these say which requests the lean side served itself.
  const LEAN_SERVED: Record<string, number> = {
    'keep-alive GETs on one connection': 2,
    'a POST body in the same read': 1,
    'a POST body in a later read (node:http)': 0,
    'two pipelined requests in one read': 2,
    'a pipelined request behind a slow answer': 2,
    'a lean request, then one for node:http, then a lean one': 1,
    'no route (404)': 0,
    'a route with a requestHeaderModifier': 2,
    'HTTP/1.0 (node:http)': 0,
    'a 40 KiB answer': 1,
    'a 2 MiB answer, then a request on the same connection': 2,
    'a 16 KiB answer': 2,
    '204 and 304 answers': 4,
    'the upstream closes mid-body (chunked)': 1,
    'the upstream fails (502)': 2,
    'the policies route': 2,
    'the policies route: a cors preflight': 2,
    'localRateLimit: 200, then 429': 3,
    'the jwt route: a good token': 2,
    'the jwt route: no token (401), a bad one (401), the wrong subject (403)': 3,
    'a policy reading the body through bufferBody': 4,
    'a policy reading the request as a stream (node:http)': 0,
    'apiKey: a good key, a wrong one (401), none (401)': 3,
    'basicAuth: good credentials, a wrong password (401), none (401)': 3,
    'directResponse (a body sent is not read)': 3,
    'requestRedirect': 2,
    'urlRewrite: a prefix rewrite': 2,
    'timeout: a requestTimeout the answer beats': 2,
    'transformations: CEL header edits both ways': 2,
    'extAuthz (HTTP): allowed, denied (403 with the service\'s body), allowed with a body': 3,
    'extAuthz (gRPC): allowed, denied (403), allowed with a body': 3,
    'requestMirror: a GET and a POST, mirrored': 2,
    'remoteRateLimit: allowed, over the limit (429), allowed with a body': 3,
  };
  // And which answers the lean side wrote itself (ADR 0093); the rest went to node:http's response before their first
  // byte: a Reply (errors, 404, a policy's early answer), response hooks, a head it leaves to node:http.
  const LEAN_ANSWERED: Record<string, number> = {
    'keep-alive GETs on one connection': 2,
    'two pipelined requests in one read': 2,
    'a 16 KiB answer': 2,
    'a HEAD of a 16 KiB answer': 2,
    '204 and 304 answers': 4,
    "the upstream's Date, repeated headers, a 201": 2,
    'the upstream closes its connection after its answer': 2,
    'the upstream sends 1xx answers first': 2,
    'an empty chunked answer, a streamed one, one until the upstream closes': 4,
    "an answer's Connection naming a header, an answer with Expect (node:http writes them)": 0,
    'the upstream closes mid-body (Content-Length)': 1,
    'keep-alive, then Connection: close, then one more': 2,
    'a pipelined pair, the second closing': 2,
    'a 2 MiB answer, then a request on the same connection': 2,
    'the upstream fails (502)': 1,
    'a route with a requestHeaderModifier': 2,
    'the policies route': 2,
    'the jwt route: a good token': 2,
    'the jwt route: no token (401), a bad one (401), the wrong subject (403)': 0,
  };
  for (const [name, count] of Object.entries(LEAN_ANSWERED)) {
    it(`answered lean: ${count} of "${name}"`, async () => {
      const [leanBefore, nodeBefore] = [answeredOn.get(lean.port) ?? 0, answeredOn.get(node.port) ?? 0];
      await Promise.all([exchange(lean.port, CASES[name]!.writes, CASES[name]), exchange(node.port, CASES[name]!.writes, CASES[name])]);
      assert.equal((answeredOn.get(lean.port) ?? 0) - leanBefore, count);
      assert.equal(answeredOn.get(node.port) ?? 0, nodeBefore, 'SWITCHYARD_LEAN_HTTP=off answers nothing lean');
    });
  }

  // The client leaves in the middle of an answer: the upstream's request is given up (its connection closed), on
  // both sides, and the access log says so alike (the last test compares the lines).
  it('the client closes mid-answer: the upstream connection is let go', async () => {
    for (const [gw, tag] of [[lean, 'lean'], [node, 'node']] as const) {
      const socket = connect(gw.port, '127.0.0.1');
      socket.write(GET('/p/drip', `X-Gw: ${tag}\r\n`));
      await new Promise((resolve) => socket.once('data', resolve));
      socket.destroy();
      const until = performance.now() + 5000;
      while (!tagged.get(tag)?.destroyed && performance.now() < until) await new Promise((r) => setTimeout(r, 20));
      assert.equal(tagged.get(tag)?.destroyed, true, `${tag}: the upstream connection closed`);
    }
  });

  for (const [name, count] of Object.entries(LEAN_SERVED)) {
    it(`served lean: ${count} of "${name}"`, async () => {
      const [leanBefore, nodeBefore] = [servedOn.get(lean.port) ?? 0, servedOn.get(node.port) ?? 0];
      await Promise.all([exchange(lean.port, CASES[name]!.writes, CASES[name]), exchange(node.port, CASES[name]!.writes, CASES[name])]);
      assert.equal((servedOn.get(lean.port) ?? 0) - leanBefore, count);
      assert.equal(servedOn.get(node.port) ?? 0, nodeBefore, 'SWITCHYARD_LEAN_HTTP=off serves nothing lean');
    });
  }

  // Not the same bytes: node:http streams the 5-byte body under the 70000 a policy set (undici refuses the length
  // mismatch: 502); the lean request has no stream, so its body read whole is sent (framed by its own length). It
  // must not hang (a LeanRequest handed to undici as a stream would).
  it('a policy setting Content-Length past 64 KiB: the lean side sends the body it read', async () => {
    const before = served;
    const [a, b] = await Promise.all([exchange(lean.port, [POST('/cl/x', 'hello')], { quietMs: 1500 }), exchange(node.port, [POST('/cl/x', 'hello')], { quietMs: 1500 })]);
    assert.equal(served - before, 1);
    assert.match(a, /^HTTP\/1\.1 200 [^]*POST \/cl\/x[^]*\r\n\r\nhello\[open\]$/);
    assert.match(b, /^HTTP\/1\.1 502 [^]*CONTENT_LENGTH_MISMATCH/);
  });

  it('requestMirror mirrors the body the lean side read, as node:http\'s side does', async () => {
    const before = served;
    await exchange(lean.port, [POST('/mirror/copy', 'the body')]);
    assert.equal(served - before, 1);
    await exchange(node.port, [POST('/mirror/copy', 'the body')]);
    const copies = (): number => mirrored.filter((m) => m === 'POST /mirror/copy the body').length;
    const until = performance.now() + 5000;
    while (copies() < 2 && performance.now() < until) await new Promise((r) => setTimeout(r, 20));
    assert.equal(copies(), 2, mirrored.join('\n'));
  });

  it('the access log has the same lines (status, method, path) on both', async () => {
    const lines = (gw: RoutesGateway): string[] =>
      gw.logs
        .filter((l) => /status[=:]/.test(l) && !/bind listening/.test(l) && !/path=\/cl\//.test(l))
        .map((l) => l.replace(/^\S+ /, '').replace(/(duration|request\.id|bind)=\S*/g, '$1=<x>'))
        .sort();
    assert.deepEqual(lines(lean), lines(node));
  });
});

describe('lean HTTP/1.1 server side: the headers deadline as node:http keeps it (ADR 0088)', () => {
  let upstream: Awaited<ReturnType<typeof startEchoUpstream>>;
  let lean: RoutesGateway;
  let node: RoutesGateway;

  before(async () => {
    upstream = await startEchoUpstream();
    const routes = [{ name: 'plain', matches: [{ path: { pathPrefix: '/p' } }], backends: [{ host: `127.0.0.1:${upstream.port}` }] }];
    lean = await startRoutesGateway(routes, { config: { headerTimeout: '400ms' } });
    node = await startRoutesGateway(routes, { config: { headerTimeout: '400ms' }, env: { ...process.env, SWITCHYARD_LEAN_HTTP: 'off' } });
  });
  after(async () => {
    await lean?.stop();
    await node?.stop();
    for (const s of upstream?.sockets ?? []) s.destroy();
    await new Promise((r) => upstream?.server.close(r));
  });

  const cases: Record<string, (string | Buffer)[]> = {
    'a connection that sends nothing gets 408': [],
    'a head never finished gets 408': ['GET /p/x HTTP/1.1\r\nHost: gw.test\r\n'],
    'an idle keep-alive connection is not cut by the deadline': [GET('/p/a')],
  };
  for (const [name, writes] of Object.entries(cases)) {
    it(name, async () => {
      const started = performance.now();
      const [a, b] = await Promise.all([exchange(lean.port, writes, { quietMs: 1500 }), exchange(node.port, writes, { quietMs: 1500 })]);
      assert.equal(normalise(a), normalise(b));
      if (writes.length === 0) assert.match(a, /^HTTP\/1\.1 408 [^]*\[closed\]$/);
      assert.ok(performance.now() - started < 5000);
    });
  }
});
