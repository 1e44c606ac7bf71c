// Backend kinds for HTTP/2 clients (ADR 0141): an MCP backend (the official SDK's client, its fetch speaking h2) and
// an `ai` backend (chat completions, whole and streamed) through an HTTPS listener.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { connect as h2connect } from 'node:http2';
import type { ClientHttp2Session, IncomingHttpHeaders } from 'node:http2';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Agent, fetch as undiciFetch } from 'undici';
import type { RunningGateway } from '../helpers/gateway.ts';
import { httpsBind, logRecords } from '../helpers/gateway.ts';
import { makeTestPki } from '../helpers/pki.ts';
import type { TestPki } from '../helpers/pki.ts';
import { fullPresetWith } from '../helpers/preset.ts';
import { mcpPreset } from '../mcp/harness.ts';
import { startSdkHttpServer } from '../mcp/support/sdk-http-server.ts';
import type { SdkHttpServer } from '../mcp/support/sdk-http-server.ts';
import { aiPreset, aiRoute, startMock } from '../ai/harness.ts';
import type { Mock } from '../ai/harness.ts';
import { startGatewayOnFreePorts, waitFor } from './proxy-support.ts';

function post(session: ClientHttp2Session, path: string, body: unknown): Promise<{ headers: IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    const data = Buffer.from(JSON.stringify(body));
    const stream = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/json', 'content-length': String(data.length) });
    let headers: IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    stream.on('response', (h) => (headers = h));
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => resolve({ headers, text: Buffer.concat(chunks).toString() }));
    stream.on('error', reject);
    stream.end(data);
  });
}

describe('backend kinds over HTTP/2', () => {
  let pki: TestPki;
  let ca: string;
  let mcp: SdkHttpServer;
  let mock: Mock;
  let gw: RunningGateway;
  let port: number;
  let session: ClientHttp2Session;
  let agent: Agent;

  before(async () => {
    pki = makeTestPki({ serverName: 'localhost', serverAltNames: ['DNS:localhost', 'IP:127.0.0.1'], label: 'listener-h2-kinds' });
    ca = readFileSync(pki.ca, 'utf8');
    [mcp, mock] = await Promise.all([startSdkHttpServer(), startMock()]);
    ({ gw, ports: [port] } = await startGatewayOnFreePorts(
      1,
      ([p]) => ({
        config: { logging: { format: 'json' } },
        binds: [
          httpsBind(p!, { cert: pki.serverCert, key: pki.serverKey }, [
            { name: 'tools', matches: [{ path: { pathPrefix: '/mcp' } }], backends: [{ mcp: { targets: [{ name: 'sdk', mcp: { host: '127.0.0.1', port: mcp.port, path: '/mcp' } }] } }] },
            aiRoute('/llm', { name: 'mock', provider: { openAI: {} }, hostOverride: mock.hostPort }),
          ]),
        ],
      }),
      { preset: fullPresetWith(...mcpPreset, ...aiPreset) },
    ));
    session = h2connect(`https://localhost:${port}`, { ca });
    session.on('error', () => undefined);
    agent = new Agent({ allowH2: true, connect: { ca } });
  });
  after(async () => {
    session?.destroy();
    await agent?.close();
    await gw?.stop();
    await mcp?.stop();
    await mock?.stop();
    pki?.remove();
  });

  it('an MCP client over h2: initialize, list tools, call one', async () => {
    const client = new Client({ name: 'h2-test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`https://localhost:${port}/mcp`), {
      fetch: ((url: string | URL, init?: RequestInit) => undiciFetch(url, { ...(init as object), dispatcher: agent })) as unknown as typeof fetch,
    });
    await client.connect(transport);
    try {
      const tools = await client.listTools();
      assert.ok(tools.tools.some((t) => t.name.endsWith('whoami')), JSON.stringify(tools.tools.map((t) => t.name)));
      const name = tools.tools.find((t) => t.name.endsWith('whoami'))!.name;
      const result = await client.callTool({ name, arguments: {} });
      assert.equal(result.isError ?? false, false);
    } finally {
      await client.close();
    }
    await waitFor(() => logRecords(gw).some((r) => r.route === 'tools' && r['http.version'] === 'HTTP/2'), 5_000, 'the MCP log line');
  });

  it('an ai backend over h2: a chat completion whole and streamed', async () => {
    const whole = await post(session, '/llm/v1/chat/completions', { model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(whole.headers[':status'], 200, whole.text);
    assert.equal((JSON.parse(whole.text) as { choices: { message: { content: string } }[] }).choices[0]!.message.content, 'Hello from the mock!');
    const streamed = await post(session, '/llm/v1/chat/completions', { model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(streamed.headers[':status'], 200, streamed.text);
    assert.match(String(streamed.headers['content-type']), /text\/event-stream/);
    assert.match(streamed.text, /Hello/);
    assert.match(streamed.text, /data: \[DONE\]/);
  });
});
