// A streamable-HTTP target that answers POSTs with one JSON body (the SDK's `enableJsonResponse`) sends nothing until
// its answer is ready. The gateway noted a request as on its way (for cancellation, and to start the client's event
// stream) only once the target's answer had come: a client's cancellation never reached such a target.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { connectClient, startMcpGateway, waitFor } from './harness.ts';
import type { McpGateway } from './harness.ts';
import { startSdkHttpServer } from './support/sdk-http-server.ts';
import type { SdkHttpServer } from './support/sdk-http-server.ts';

describe('mcp: cancelling a call to a target that answers with JSON', () => {
  let target: SdkHttpServer;
  let gw: McpGateway;
  before(async () => {
    target = await startSdkHttpServer({ json: true });
    gw = await startMcpGateway({ targets: [{ name: 'json', mcp: { host: '127.0.0.1', port: target.port } }] });
  });
  after(async () => {
    await gw?.stop();
    await target?.stop();
  });

  it("the client's cancellation reaches the target while it works", async () => {
    const { client, transport } = await connectClient(gw.mcpUrl);
    try {
      const done = await client.callTool({ name: 'slow', arguments: { ms: 50 } });
      assert.deepEqual(done.content, [{ type: 'text', text: 'slept 50' }]);
      const abort = new AbortController();
      const call = client.callTool({ name: 'slow', arguments: { ms: 8000 } }, undefined, { signal: abort.signal });
      setTimeout(() => abort.abort(), 500);
      await assert.rejects(call);
      await waitFor(() => target.cancelled.includes(8000), 'the target to see the cancellation', 5000);
      assert.ok(!target.finished.includes(8000), 'the call did not run to its end');
    } finally {
      await transport.terminateSession().catch(() => undefined);
      await client.close();
    }
  });
});
