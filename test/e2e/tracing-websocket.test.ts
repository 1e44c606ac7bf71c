// WebSocket upgrades in traces (issue 12 item 1; ADR 0055): a SERVER span per upgrade request continuing the
// client's traceparent, ended with the status the client got once the handshake is over (not when the connection
// closes), and a CLIENT span for the upstream handshake whose traceparent the upstream receives. Read back from a
// real Jaeger started here.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import WebSocket, { WebSocketServer } from 'ws';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { locateJaeger, parentOf, startJaeger, tag } from '../helpers/jaeger.ts';
import type { JaegerSpan, RunningJaeger } from '../helpers/jaeger.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { startRawUpstream } from '../helpers/raw-upstream.ts';
import type { RawUpstream } from '../helpers/raw-upstream.ts';

// Spans leave 50 ms after their batch's first, not a second (OTEL_BSP_SCHEDULE_DELAY): each test waits for its trace.
process.env.OTEL_BSP_SCHEDULE_DELAY = '50';

const found = locateJaeger();
const CLIENT_SPAN = '00f067aa0ba902b7';

/** Open a WebSocket with a traceparent; resolves with the socket once open, or with the HTTP status of a refusal. */
function open(url: string, traceparent: string): Promise<WebSocket | number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers: { traceparent } });
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res) => {
      res.resume();
      resolve(res.statusCode!);
    });
    ws.once('error', reject);
  });
}

describe('tracing: WebSocket upgrades', { skip: 'skip' in found ? found.skip : false }, () => {
  let jaeger: RunningJaeger;
  let httpServer: Server;
  let wsServer: WebSocketServer;
  let refusing: TestUpstream;
  let wrongSwitch: RawUpstream;
  let gw: RunningGateway;
  let port: number;
  const handshakes: IncomingHttpHeaders[] = [];

  before(async () => {
    jaeger = await startJaeger(found as { bin: string });
    httpServer = createServer((_req, res) => res.writeHead(426).end());
    wsServer = new WebSocketServer({ server: httpServer });
    wsServer.on('connection', (ws, req) => {
      handshakes.push(req.headers);
      ws.on('message', (data) => ws.send(`echo:${String(data)}`));
    });
    await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
    refusing = await startUpstream((_req, res) => res.writeHead(404, { 'content-type': 'text/plain' }).end('no websockets here'));
    // Answers 101 without naming a protocol: the gateway refuses the switch with a 502 (ADR 0118).
    wrongSwitch = await startRawUpstream(() => 'HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n\r\n');
    port = await freePort();
    const upstreamPort = (httpServer.address() as { port: number }).port;
    gw = await startGateway({
      config: { tracing: { otlpEndpoint: jaeger.otlpHttp, otlpProtocol: 'http', serviceName: 'switchyard-ws' } },
      binds: [
        {
          port,
          listeners: [
            {
              routes: [
                { name: 'wrong', matches: [{ path: { pathPrefix: '/wrong' } }], backends: [{ host: wrongSwitch.host }] },
                { name: 'refuse', matches: [{ path: { pathPrefix: '/refuse' } }], backends: [{ host: `127.0.0.1:${refusing.port}` }] },
                { name: 'ws', matches: [{ path: { pathPrefix: '/ws' } }], backends: [{ host: `127.0.0.1:${upstreamPort}` }] },
              ],
            },
          ],
        },
      ],
    });
  });

  after(async () => {
    await gw?.stop();
    for (const c of wsServer?.clients ?? []) c.terminate();
    wsServer?.close();
    await new Promise<void>((resolve) => (httpServer ? httpServer.close(() => resolve()) : resolve()));
    await refusing?.close();
    await wrongSwitch?.close();
    await jaeger?.stop();
  });

  const byKind = (spans: JaegerSpan[], kind: string): JaegerSpan[] => spans.filter((s) => tag(s, 'span.kind') === kind);

  it('an accepted upgrade: SERVER span (route, 101) under the client span, ended at the handshake; CLIENT span to the upstream', async () => {
    const trace = '5bf92f3577b34da6a3ce929d0e0e4736';
    const ws = await open(`ws://127.0.0.1:${port}/ws/chat`, `00-${trace}-${CLIENT_SPAN}-01`);
    assert.ok(ws instanceof WebSocket, `expected the upgrade, got ${String(ws)}`);
    ws.send('hi');
    const [reply] = (await once(ws, 'message')) as [Buffer];
    assert.equal(String(reply), 'echo:hi');
    // The connection stays open: the span is exported anyway, as it covers the handshake only.
    const stored = await jaeger.waitForTrace(trace, 2);
    const [server] = byKind(stored.spans, 'server');
    assert.ok(server, 'a SERVER span');
    assert.equal(server.operationName, 'GET /ws/*');
    assert.equal(parentOf(server), CLIENT_SPAN);
    assert.equal(tag(server, 'http.response.status_code'), 101);
    assert.equal(tag(server, 'route'), 'ws');
    assert.equal(tag(server, 'url.path'), '/ws/chat');
    const [client] = byKind(stored.spans, 'client');
    assert.ok(client, 'a CLIENT span for the upstream handshake');
    assert.equal(parentOf(client), server.spanID);
    assert.equal(tag(client, 'http.response.status_code'), 101);
    assert.equal(String(handshakes.at(-1)!.traceparent), `00-${trace}-${client.spanID}-01`);
    assert.equal(ws.readyState, WebSocket.OPEN, 'the span was exported while the connection is open');
    ws.close();
  });

  it("the connection's own span (ADR 0055): from the 101 to the close, under the SERVER span, with the close code and bytes", async () => {
    const trace = '8bf92f3577b34da6a3ce929d0e0e4736';
    const ws = await open(`ws://127.0.0.1:${port}/ws/held`, `00-${trace}-${CLIENT_SPAN}-01`);
    assert.ok(ws instanceof WebSocket, `expected the upgrade, got ${String(ws)}`);
    ws.send('hi');
    await once(ws, 'message');
    await new Promise((resolve) => setTimeout(resolve, 150));
    ws.close(4000, 'bye');
    await once(ws, 'close');
    const stored = await jaeger.waitForTrace(trace, 3);
    const [server] = byKind(stored.spans, 'server');
    const [connection] = byKind(stored.spans, 'internal');
    assert.ok(connection, `an INTERNAL span for the connection: ${stored.spans.map((x) => x.operationName).join(', ')}`);
    assert.equal(connection.operationName, 'websocket /ws/*');
    assert.equal(parentOf(connection), server!.spanID);
    assert.equal(tag(connection, 'websocket.close.code'), 4000);
    assert.equal(tag(connection, 'websocket.close.reason'), 'bye');
    assert.equal(tag(connection, 'upgrade.closed_by'), 'client');
    assert.equal(tag(connection, 'upgrade.bytes.received'), 8 + 11); // 'hi' and the close (4000 'bye'), masked
    assert.equal(tag(connection, 'upgrade.bytes.sent'), 2 + 'echo:hi'.length + 2 + 5);
    // Jaeger durations are in microseconds: the connection lasted the 150 ms the client held it, the handshake not.
    assert.ok(connection.duration >= 150_000, `connection span ${connection.duration}µs`);
    assert.ok(server!.duration < connection.duration, 'the SERVER span covers the handshake only');
    // The access log's connection line points at this span.
    const line = gw.logs.find((l) => l.includes('upgrade closed') && l.includes('http.path=/ws/held '));
    assert.ok(line, 'an upgrade closed line');
    assert.match(line, new RegExp(`trace_id=${trace} span_id=${connection.spanID} `));
  });

  it('an abnormal end (no Close frame) is an ERROR span with code 1006', async () => {
    const trace = '9bf92f3577b34da6a3ce929d0e0e4736';
    const ws = await open(`ws://127.0.0.1:${port}/ws/dropped`, `00-${trace}-${CLIENT_SPAN}-01`);
    assert.ok(ws instanceof WebSocket);
    ws.terminate();
    const stored = await jaeger.waitForTrace(trace, 3);
    const [connection] = byKind(stored.spans, 'internal');
    assert.equal(tag(connection!, 'websocket.close.code'), 1006);
    assert.equal(tag(connection!, 'error.type'), '1006');
    assert.equal(tag(connection!, 'otel.status_code'), 'ERROR');
  });

  it('a refused upgrade: both spans carry the upstream status the client got', async () => {
    const trace = '6bf92f3577b34da6a3ce929d0e0e4736';
    const status = await open(`ws://127.0.0.1:${port}/refuse/x`, `00-${trace}-${CLIENT_SPAN}-01`);
    assert.equal(status, 404);
    const stored = await jaeger.waitForTrace(trace, 2);
    const [server] = byKind(stored.spans, 'server');
    const [client] = byKind(stored.spans, 'client');
    assert.equal(tag(server!, 'http.response.status_code'), 404);
    assert.equal(tag(client!, 'http.response.status_code'), 404);
    assert.equal(parentOf(client!), server!.spanID);
  });

  it("a 101 that switches to no protocol: the CLIENT span is an ERROR that says why (the client got 502)", async () => {
    const trace = 'abf92f3577b34da6a3ce929d0e0e4736';
    const status = await open(`ws://127.0.0.1:${port}/wrong/x`, `00-${trace}-${CLIENT_SPAN}-01`);
    assert.equal(status, 502);
    const stored = await jaeger.waitForTrace(trace, 2);
    const [server] = byKind(stored.spans, 'server');
    const [client] = byKind(stored.spans, 'client');
    assert.equal(tag(server!, 'http.response.status_code'), 502);
    assert.equal(tag(client!, 'http.response.status_code'), 101);
    assert.equal(tag(client!, 'otel.status_code'), 'ERROR');
    assert.match(String(tag(client!, 'otel.status_description')), /101 switching without naming a protocol/);
    assert.match(String(tag(client!, 'otel.status_description')), new RegExp(`127\\.0\\.0\\.1:${wrongSwitch.port}`));
  });

  it('an upgrade no route takes: a SERVER span with the 404 the gateway answered', async () => {
    const trace = '7bf92f3577b34da6a3ce929d0e0e4736';
    const status = await open(`ws://127.0.0.1:${port}/nowhere`, `00-${trace}-${CLIENT_SPAN}-01`);
    assert.equal(status, 404);
    const stored = await jaeger.waitForTrace(trace, 1);
    assert.equal(stored.spans.length, 1);
    assert.equal(tag(stored.spans[0]!, 'http.response.status_code'), 404);
  });
});
