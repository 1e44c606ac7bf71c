// Default deadlines (ADR 0019): an upstream that accepts a request and never answers gets a 504 after the default
// response deadline, even on a route without a `timeout` policy; a streamed response is not cut while bytes flow,
// only after a silence longer than the stream idle deadline; the route's `timeout` policy replaces the default; LLM
// calls through the `ai` backend take the same path with their own (longer) default. When clients give up, the
// upstream connections of their requests are closed at once, counted at the upstream server.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { stringify } from 'yaml';
import type { RunningGateway } from '../helpers/gateway.ts';
import { sleep, startGatewayOnFreePorts, waitFor, within } from './proxy-support.ts';

/** An upstream that counts its TCP connections and scripts its answer by path. */
interface CountingUpstream {
  readonly port: number;
  readonly opened: number;
  readonly closed: number;
  /** Requests that arrived, by path. */
  readonly arrived: Map<string, number>;
  close(): Promise<void>;
}

async function startCountingUpstream(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<CountingUpstream> {
  let opened = 0;
  let closed = 0;
  const arrived = new Map<string, number>();
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    arrived.set(req.url!, (arrived.get(req.url!) ?? 0) + 1);
    handler(req, res);
  });
  // No server-side timeouts: only the gateway may end these connections.
  server.requestTimeout = 0;
  server.headersTimeout = 0;
  server.keepAliveTimeout = 0;
  server.on('connection', (socket: Socket) => {
    opened++;
    sockets.add(socket);
    socket.once('close', () => {
      closed++;
      sockets.delete(socket);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    get opened() {
      return opened;
    },
    get closed() {
      return closed;
    },
    arrived,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

const HEADERS_DEADLINE_MS = 300;
const IDLE_DEADLINE_MS = 400;
// Longer than the plain deadline plus undici's timer resolution (about a second), so the two are told apart.
const LLM_DEADLINE_MS = 2000;

describe('default deadlines', () => {
  let gw: RunningGateway;
  let port: number;
  let up: CountingUpstream;
  let build: (port: number, headersDeadlineMs: number) => Record<string, unknown>;

  before(async () => {
    up = await startCountingUpstream((req, res) => {
      req.resume();
      const path = req.url!.split('?')[0]!;
      if (path.endsWith('/hang') || path === '/v1/chat/completions') return; // accepts, never answers
      switch (path) {
        case '/sse': {
          // An event every 100 ms for 1.5 s: longer than both deadlines in total, never silent for long.
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          let n = 0;
          const timer = setInterval(() => {
            res.write(`data: ${++n}\n\n`);
            if (n === 15) {
              clearInterval(timer);
              res.end();
            }
          }, 100);
          res.on('close', () => clearInterval(timer));
          return;
        }
        case '/v1/messages':
          // An LLM provider that starts its answer, then goes silent.
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': '200' });
          res.write('{"id":"msg_1",');
          return;
        case '/stall': {
          // One event, then silence.
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write('data: first\n\n');
          return;
        }
        case '/a2a/slow':
          // A blocking A2A call: the agent answers once its task is done.
          setTimeout(() => {
            if (!res.destroyed) res.end(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { kind: 'task', id: 't1', status: { state: 'completed' } } }));
          }, 700);
          return;
        case '/slow/answer':
          setTimeout(() => {
            if (!res.destroyed) res.end('slow but allowed');
          }, 700);
          return;
        default:
          res.end('ok');
      }
    });
    const host = `127.0.0.1:${up.port}`;
    build = (p: number, headersDeadlineMs: number) => ({
      config: {
        // As the test helper sets them, so a reload changes nothing else in `config:`.
        adminAddr: '127.0.0.1:0',
        statsAddr: '127.0.0.1:0',
        readinessAddr: '127.0.0.1:0',
        defaultTimeouts: {
          backendRequestTimeout: `${headersDeadlineMs}ms`,
          llmBackendRequestTimeout: `${LLM_DEADLINE_MS}ms`,
          a2aBackendRequestTimeout: `${LLM_DEADLINE_MS}ms`,
          streamIdleTimeout: `${IDLE_DEADLINE_MS}ms`,
        },
      },
      binds: [
        {
          port: p,
          listeners: [
            {
              routes: [
                // The route's own timeout replaces the default response deadline.
                { name: 'slow', matches: [{ path: { pathPrefix: '/slow' } }], policies: { timeout: { backendRequestTimeout: '5s' } }, backends: [{ host }] },
                { name: 'long', matches: [{ path: { pathPrefix: '/long' } }], policies: { timeout: { requestTimeout: '60s' } }, backends: [{ host }] },
                { name: 'llm', matches: [{ path: { pathPrefix: '/v1' } }], backends: [{ ai: { name: 'llm', provider: { openAI: {} }, hostOverride: host } }] },
                { name: 'half', matches: [{ path: { pathPrefix: '/half' } }], backends: [{ ai: { name: 'half', provider: { anthropic: { model: 'claude-x' } }, hostOverride: host } }] },
                { name: 'agent', matches: [{ path: { pathPrefix: '/a2a' } }], policies: { a2a: {} }, backends: [{ host }] },
                { name: 'plain', backends: [{ host }] },
              ],
            },
          ],
        },
      ],
    });
    ({ gw, ports: [port] } = await startGatewayOnFreePorts(1, ([p]) => build(p!, HEADERS_DEADLINE_MS)));
  });
  after(async () => {
    await gw?.stop();
    await up?.close();
  });

  /** An OpenAI chat request on `path`. */
  const chat = (path: string) =>
    request(`${gw.url(port)}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-x', messages: [{ role: 'user', content: 'hi' }] }),
    });

  it('answers 504 when the upstream accepts and never answers (no timeout policy on the route)', async () => {
    const started = performance.now();
    const res = await within(request(`${gw.url(port)}/hang`), 5000, 'the gateway to give up on a silent upstream');
    const elapsed = performance.now() - started;
    assert.equal(res.statusCode, 504);
    const body = (await res.body.json()) as { error: { type: string; message: string } };
    assert.equal(body.error.type, 'upstream_timeout');
    assert.match(body.error.message, /did not answer within 300ms \(the default deadline/);
    assert.ok(elapsed >= HEADERS_DEADLINE_MS - 20, `answered after ${elapsed}ms, before the deadline`);
    // The upstream's connection for that request is closed, not left to hang.
    await waitFor(() => up.closed === up.opened, 2000, 'the upstream connection to close');
  });

  it('gives A2A routes their own default (a blocking SendMessage waits for the agent\'s task)', async () => {
    const send = (path: string) =>
      request(`${gw.url(port)}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: { role: 'user', parts: [{ kind: 'text', text: 'hi' }], messageId: 'm1' } } }),
      });
    // Past the plain 300 ms, within the A2A default.
    const slow = await within(send('/a2a/slow'), 5000, 'the agent\'s answer');
    assert.equal(slow.statusCode, 200);
    assert.match(await slow.body.text(), /completed/);
    const started = performance.now();
    const hung = await within(send('/a2a/hang'), 8000, 'the A2A deadline');
    assert.equal(hung.statusCode, 504);
    await hung.body.text();
    assert.ok(performance.now() - started >= LLM_DEADLINE_MS - 50, 'the A2A default, not the plain one, bounded it');
  });

  it('lets a route `timeout` policy replace the default', async () => {
    const res = await within(request(`${gw.url(port)}/slow/answer`), 5000, 'the slow answer');
    assert.equal(res.statusCode, 200);
    assert.equal(await res.body.text(), 'slow but allowed');
  });

  it('does not cut an SSE stream while events flow', async () => {
    const res = await within(request(`${gw.url(port)}/sse`), 5000, 'the stream head');
    assert.equal(res.statusCode, 200);
    const text = await within(res.body.text(), 5000, 'the whole stream');
    const events = text.split('\n\n').filter(Boolean);
    assert.equal(events.length, 15, `got ${JSON.stringify(text)}`);
    assert.equal(events[14], 'data: 15');
  });

  it('cuts a stream that stays silent longer than the idle deadline', async () => {
    const res = await within(request(`${gw.url(port)}/stall`), 5000, 'the stream head');
    assert.equal(res.statusCode, 200);
    const started = performance.now();
    let got = '';
    await within(
      (async () => {
        try {
          for await (const chunk of res.body) got += (chunk as Buffer).toString();
          assert.fail('the stalled stream ended cleanly; it must be cut (truncated)');
        } catch (err) {
          if ((err as Error).name === 'AssertionError') throw err;
        }
      })(),
      5000,
      'the stalled stream to be cut',
    );
    assert.equal(got, 'data: first\n\n');
    assert.ok(performance.now() - started >= IDLE_DEADLINE_MS - 50);
  });

  it('gives LLM calls through the `ai` backend a default deadline on the same path', async () => {
    const closedBefore = up.closed;
    const started = performance.now();
    const res = await within(chat('/v1/chat/completions'), 5000, 'the gateway to give up on a silent LLM provider');
    assert.equal(res.statusCode, 504);
    await res.body.text();
    assert.ok(performance.now() - started >= LLM_DEADLINE_MS - 20, 'the LLM default applies, not the plain one');
    // The connection given up on is closed (the lean client answers the 504 as it closes it, ADR 0084: the upstream
    // may see the close just after the client saw the 504; the next test counts connections from here).
    await waitFor(() => up.closed > closedBefore, 2000, 'the LLM call’s upstream connection to close');
  });

  it('an LLM answer whose body goes silent longer than the idle deadline: 504 in the client\'s shape', async () => {
    const closedBefore = up.closed;
    const res = await within(chat('/half/v1/chat/completions'), 5000, 'the gateway to give up on a provider gone silent');
    assert.equal(res.statusCode, 504);
    const body = (await res.body.json()) as { error: { type: string; message: string } };
    assert.equal(body.error.type, 'server_error');
    assert.equal(body.error.message, 'failed to process LLM response: the provider went silent longer than the stream idle timeout');
    await waitFor(() => up.closed > closedBefore, 2000, 'the silent provider’s connection to close');
  });

  it('closes every upstream connection at once when 30 clients give up', async () => {
    const before = { opened: up.opened, closed: up.closed, arrived: up.arrived.get('/long/hang') ?? 0 };
    // Half the clients reset their connection, half close it cleanly (FIN), as client-side timeouts do.
    const sockets: Socket[] = [];
    for (let i = 0; i < 30; i++) {
      sockets.push(
        await new Promise<Socket>((resolve, reject) => {
          const s = connect(port, '127.0.0.1', () => {
            s.write(`GET /long/hang HTTP/1.1\r\nHost: h\r\n\r\n`);
            resolve(s);
          });
          s.on('error', reject);
        }),
      );
    }
    await waitFor(() => (up.arrived.get('/long/hang') ?? 0) - before.arrived === 30, 5000, 'all 30 requests to reach the upstream');
    const openBefore = before.opened - before.closed;
    assert.equal(up.opened - up.closed - openBefore, 30, 'one upstream connection per waiting request');
    await sleep(50);
    sockets.forEach((s, i) => (i % 2 ? s.resetAndDestroy() : s.end()));
    await waitFor(() => up.closed - before.closed >= 30, 1500, `the 30 upstream connections to close (closed ${up.closed - before.closed})`);
    // Nothing is left open for them: no connection made again for an aborted request (undici#5845) lingers until
    // the pool's keep-alive timeout.
    await sleep(500);
    assert.equal(up.opened - up.closed, openBefore, `upstream connections still open: ${up.opened - up.closed - openBefore} more than before`);
    for (const s of sockets) s.destroy();
  });

  it('applies a changed default on reload, without asking for a restart', async () => {
    assert.equal(await gw.gateway.reload(stringify(build(port, 1500))), true);
    const started = performance.now();
    const res = await within(request(`${gw.url(port)}/hang`), 5000, 'the new deadline');
    assert.equal(res.statusCode, 504);
    assert.match(((await res.body.json()) as { error: { message: string } }).error.message, /within 1500ms/);
    assert.ok(performance.now() - started >= 1480);
    assert.ok(!gw.logs.some((l) => l.includes('take effect after a restart')), 'no restart warning for defaultTimeouts');
  });
});
