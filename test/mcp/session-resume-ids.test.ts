// Two gateways holding one session key share a client's session, and with it the target's streamable-HTTP upstream
// session: the ids they send the target must never collide there (the MCP spec: a request id is not reused within a
// session). Each started from 0, so the resuming gateway's first request reused the id of `initialize`, and two calls
// in flight at once on both gateways had the same id: the target answered one of them only.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { FIXTURE, NODE, connectClient, startMcpGateway } from './harness.ts';
import type { McpGateway } from './harness.ts';
import { startSdkHttpServer } from './support/sdk-http-server.ts';
import type { SdkHttpServer } from './support/sdk-http-server.ts';

const KEY = randomBytes(32).toString('hex');

describe('mcp sessions resumed on another gateway: request ids in the shared upstream session', () => {
  let target: SdkHttpServer;
  let a: McpGateway;
  let b: McpGateway;
  before(async () => {
    target = await startSdkHttpServer();
    const mcp = { targets: [{ name: 'alpha', mcp: { host: '127.0.0.1', port: target.port } }, { name: 'local', stdio: { cmd: NODE, args: [FIXTURE] } }] };
    a = await startMcpGateway(mcp, { staticConfig: { session: { key: KEY } } });
    b = await startMcpGateway(mcp, { staticConfig: { session: { key: KEY } } });
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await target?.stop();
  });

  it('never reuse an id, and calls in flight on both gateways are both answered', async () => {
    const onA = await connectClient(a.mcpUrl);
    const sessionId = onA.transport.sessionId!;
    const onB = await connectClient(b.mcpUrl, { sessionId });
    try {
      const text = (r: Awaited<ReturnType<typeof onA.client.callTool>>): string => (r.content as { text: string }[])[0]!.text;
      await onA.client.callTool({ name: 'alpha_whoami', arguments: {} });
      await onB.client.callTool({ name: 'alpha_whoami', arguments: {} });
      // In flight together, on both gateways.
      const [slowA, slowB] = await Promise.all([
        onA.client.callTool({ name: 'alpha_slow', arguments: { ms: 600 } }, undefined, { timeout: 10_000 }),
        onB.client.callTool({ name: 'alpha_slow', arguments: { ms: 300 } }, undefined, { timeout: 10_000 }),
      ]);
      assert.equal(text(slowA), 'slept 600');
      assert.equal(text(slowB), 'slept 300');
      await onA.client.callTool({ name: 'alpha_whoami', arguments: {} });

      const sessions = [...target.ids.keys()].filter((k) => k !== 'initialize');
      assert.equal(sessions.length, 1, 'one upstream session, shared by both gateways');
      const seen = [...target.ids.get('initialize')!, ...target.ids.get(sessions[0]!)!];
      assert.equal(seen.length, 6, `initialize and five calls: ${seen.join(',')}`);
      assert.equal(new Set(seen).size, seen.length, `ids reused in the upstream session: ${seen.join(',')}`);
    } finally {
      await onA.transport.terminateSession().catch(() => undefined);
      await onA.client.close();
      await onB.client.close();
    }
  });
});
