// HTTP/2 with prior knowledge on cleartext listeners (h2c, ADR 0158): a connection that opens with the HTTP/2 preface
// is served by the HTTP/2 session code of HTTPS listeners, on both cleartext server sides (the lean HTTP/1.1 parser
// and node:http alone). grpc-js insecure clients (unary, streaming, error statuses) to a cleartext gRPC server, a
// node:http2 client to MCP and `ai` routes, and HTTP/1.1 on the same port as before.
import assert from 'node:assert/strict';
import { connect as netConnect } from 'node:net';
import { connect as h2connect } from 'node:http2';
import type { ClientHttp2Session } from 'node:http2';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { RunningGateway } from '../helpers/gateway.ts';
import { logRecords, oneListenerConfig } from '../helpers/gateway.ts';
import { h2Exchange } from '../helpers/h2-client.ts';
import { fullPresetWith } from '../helpers/preset.ts';
import { mcpPreset } from '../mcp/harness.ts';
import { startSdkHttpServer } from '../mcp/support/sdk-http-server.ts';
import type { SdkHttpServer } from '../mcp/support/sdk-http-server.ts';
import { aiPreset, aiRoute, startMock } from '../ai/harness.ts';
import type { Mock } from '../ai/harness.ts';
import { assertStreamsAndStatuses, chatInTurns, echoClient, startEchoServer, unary } from '../helpers/grpc-echo.ts';
import type { EchoClient } from '../helpers/grpc-echo.ts';
import { SERVER_SIDES, startGatewayOnFreePorts, waitFor, within } from './proxy-support.ts';

const PREFACE = 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n';

/**
 * Raw bytes to the port, written in `parts` with a pause between, then the client's FIN: everything read until the
 * connection closes, and whether the server closed it (rather than the client, `ms` after connecting).
 */
function rawExchange(port: number, parts: readonly (string | Buffer)[], ms = 3_000): Promise<{ bytes: Buffer; closedByServer: boolean }> {
  return new Promise((resolve, reject) => {
    const socket = netConnect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let timedOut = false;
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => resolve({ bytes: Buffer.concat(chunks), closedByServer: !timedOut }));
    socket.setTimeout(ms, () => {
      timedOut = true;
      socket.destroy();
    });
    let i = 0;
    const next = (): void => {
      if (i < parts.length) socket.write(parts[i++]!, () => setTimeout(next, 50));
      else socket.end();
    };
    socket.on('connect', next);
  });
}

for (const side of SERVER_SIDES) {
  describe(`h2c with prior knowledge on a cleartext listener (${side.name})`, () => {
    let upstream: { server: grpc.Server; port: number };
    let mcp: SdkHttpServer;
    let mock: Mock;
    let gw: RunningGateway;
    let port: number;
    let client: EchoClient;
    let session: ClientHttp2Session;

    before(async () => {
      [upstream, mcp, mock] = await Promise.all([startEchoServer(grpc.ServerCredentials.createInsecure()), startSdkHttpServer(), startMock()]);
      ({ gw, ports: [port] } = await startGatewayOnFreePorts(
        1,
        ([p]) =>
          oneListenerConfig(
            p!,
            [
              { name: 'grpc', matches: [{ path: { pathPrefix: '/test.Echo/' } }], backends: [{ host: `127.0.0.1:${upstream.port}`, policies: { http: { version: 'HTTP/2.0' } } }] },
              { name: 'tools', matches: [{ path: { pathPrefix: '/mcp' } }], backends: [{ mcp: { targets: [{ name: 'sdk', mcp: { host: '127.0.0.1', port: mcp.port, path: '/mcp' } }] } }] },
              aiRoute('/llm', { name: 'mock', provider: { openAI: {} }, hostOverride: mock.hostPort }),
              { name: 'plain', matches: [{ path: { pathPrefix: '/plain' } }], policies: { directResponse: { status: 200, body: 'plain answer' } } },
            ],
            { config: { logging: { format: 'json' } } },
          ),
        { preset: fullPresetWith(...mcpPreset, ...aiPreset), env: side.env },
      ));
      client = echoClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
      session = h2connect(`http://127.0.0.1:${port}`);
      session.on('error', () => undefined);
    });
    after(async () => {
      client?.close();
      session?.destroy();
      await gw?.stop();
      upstream?.server.forceShutdown();
      await mcp?.stop();
      await mock?.stop();
    });

    it('a grpc-js insecure client: a unary call with its trailers', async () => {
      const answer = await within(unary(client, 'Echo', { hello: 'h2c' }), 10_000, 'the unary call');
      assert.equal(answer.error, undefined, answer.error?.message);
      assert.deepEqual(answer.value, { echo: { hello: 'h2c' } });
      assert.deepEqual(answer.trailers?.get('x-trailer'), ['from-upstream']);
    });

    it('a grpc-js insecure client: server streaming, a bidirectional call in turns, an error status as sent', async () => {
      await assertStreamsAndStatuses([client], within);
      assert.deepEqual(await within(chatInTurns(client, [1, 2, 3]), 10_000, 'the bidirectional call'), [{ heard: 1 }, { heard: 2 }, { heard: 3 }]);
    });

    it('node:http2 with prior knowledge: an ai route, whole and streamed, logged as HTTP/2', async () => {
      const request = { ':method': 'POST', ':path': '/llm/v1/chat/completions', 'content-type': 'application/json' };
      const whole = await h2Exchange(session, request, JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }] }));
      assert.equal(whole.headers[':status'], 200, whole.text);
      assert.equal((JSON.parse(whole.text) as { choices: { message: { content: string } }[] }).choices[0]!.message.content, 'Hello from the mock!');
      const streamed = await h2Exchange(session, request, JSON.stringify({ model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'hello' }] }));
      assert.equal(streamed.headers[':status'], 200, streamed.text);
      assert.match(streamed.text, /data: \[DONE\]/);
      await waitFor(() => logRecords(gw).some((r) => r.route === 'llm' && r['http.version'] === 'HTTP/2'), 5_000, 'the ai log line');
    });

    it('an MCP client whose fetch speaks h2c: initialize, list tools, call one', async () => {
      const { Agent, fetch: undiciFetch } = await import('undici');
      // undici speaks h2c to an origin only through its connector's `useH2c` (ADR 0151).
      const agent = new Agent({ connect: { useH2c: true } as object, allowH2: true });
      const mcpClient = new Client({ name: 'h2c-test', version: '1.0.0' });
      const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`), {
        fetch: ((url: string | URL, init?: RequestInit) => undiciFetch(url, { ...(init as object), dispatcher: agent })) as unknown as typeof fetch,
      });
      try {
        await mcpClient.connect(transport);
        const tools = await mcpClient.listTools();
        const name = tools.tools.find((t) => t.name.endsWith('whoami'))?.name;
        assert.ok(name, JSON.stringify(tools.tools.map((t) => t.name)));
        const result = await mcpClient.callTool({ name, arguments: {} });
        assert.equal(result.isError ?? false, false);
      } finally {
        await mcpClient.close();
        await agent.close();
      }
      await waitFor(() => logRecords(gw).some((r) => r.route === 'tools' && r['http.version'] === 'HTTP/2'), 5_000, 'the MCP log line');
    });

    it("a preface written in pieces is still HTTP/2, the client's FIN closes it; HTTP/1.1 on the same port is unchanged", async () => {
      const settings = Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]);
      const { bytes, closedByServer } = await rawExchange(port, [PREFACE.slice(0, 5), PREFACE.slice(5, 17), Buffer.concat([Buffer.from(PREFACE.slice(17)), settings])]);
      // The server's SETTINGS frame (type 4 on stream 0) comes first, not an HTTP/1.1 status line.
      assert.ok(bytes.length >= 9, `got ${bytes.length} bytes`);
      assert.equal(bytes[3], 4, bytes.toString('latin1'));
      assert.notEqual(bytes.subarray(0, 5).toString('latin1'), 'HTTP/');
      // node:http's connections are half-open; an h2 session is not (left so, it stayed open until the drain deadline).
      assert.ok(closedByServer, 'the server closed the connection after the FIN');
      const res = await fetch(`http://127.0.0.1:${port}/plain`);
      assert.equal(res.status, 200);
      assert.equal(await res.text(), 'plain answer');
    });

    it('the preface after an HTTP/1.1 request on the same connection is no HTTP/2: refused as before', async () => {
      const bytes = (await rawExchange(port, [`GET /plain HTTP/1.1\r\nHost: a\r\n\r\n`, PREFACE])).bytes.toString('latin1');
      assert.match(bytes, /^HTTP\/1\.1 200 OK/);
      assert.match(bytes, /plain answer[\s\S]*HTTP\/1\.1 400 Bad Request/);
    });
  });
}
