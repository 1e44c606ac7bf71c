// What of the client's request headers reaches an MCP target (plugins/lib/mcp/client-headers.ts: one list for the
// `mcp` backend and the `openapi` transport). A client that sends `Expect: 100-continue` (curl does for larger
// bodies) was answered 500: the header went on to undici, which refuses it (UND_ERR_NOT_SUPPORTED).
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { INIT, messagesOf, startEverything, startMcpGateway } from './harness.ts';
import type { McpGateway, UpstreamServer } from './harness.ts';

/** POST `body` the way curl does with `Expect: 100-continue`: headers first, the body once the gateway says continue. */
function postExpecting(url: URL, body: string): Promise<{ status: number; text: string; continued: boolean }> {
  return new Promise((resolve, reject) => {
    let continued = false;
    const req = request(
      url,
      { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', expect: '100-continue', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (s: string) => (text += s));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text, continued }));
      },
    );
    req.on('continue', () => {
      continued = true;
      req.end(body);
    });
    req.on('error', reject);
  });
}

describe('client headers and an MCP target', () => {
  let up: UpstreamServer;
  let gw: McpGateway;
  before(async () => {
    up = await startEverything('streamableHttp');
    gw = await startMcpGateway({ targets: [{ name: 'everything', mcp: { host: `http://127.0.0.1:${up.port}/mcp` } }] });
  });
  after(async () => {
    await gw?.stop();
    await up?.stop();
  });

  it('`Expect: 100-continue` is answered by the gateway and not passed on: initialize succeeds', async () => {
    const out = await postExpecting(gw.mcpUrl, INIT());
    assert.equal(out.continued, true, 'the gateway sent 100 Continue');
    assert.equal(out.status, 200, out.text);
    const [answer] = messagesOf(out.text) as { result?: { serverInfo?: { name?: string } } }[];
    assert.ok(answer?.result?.serverInfo, out.text);
  });
});
