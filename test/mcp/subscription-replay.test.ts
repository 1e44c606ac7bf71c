// Resource subscriptions are replayed to a target that starts afresh: a stdio child restarted after a crash (at once,
// without waiting for a client request), an `sse` target whose server came back, and a session resumed by another
// gateway process (the re-sealed session id carries the subscribed URIs). server-everything sends
// `notifications/resources/updated` for subscribed URIs once `toggle-subscriber-updates` is on (at once, then every
// 5 s), so updates after the restart prove the new process holds the subscription.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { alive, connectClient, everythingStdio, startEverything, startMcpGateway, waitFor } from './harness.ts';
import type { McpGateway, UpstreamServer } from './harness.ts';

const KEY = randomBytes(32).toString('hex');

/** Collect the URIs of resource-updated notifications the client receives, with their arrival times. */
function updates(client: Client): { uri: string; at: number }[] {
  const got: { uri: string; at: number }[] = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void got.push({ uri: n.params.uri, at: Date.now() }));
  return got;
}

const toggle = (client: Client, name = 'toggle-subscriber-updates'): Promise<unknown> => client.callTool({ name, arguments: {} });
const replayed = (gw: McpGateway): number => gw.logs.filter((l) => l.includes('replayed resource subscriptions to a restarted MCP target')).length;

describe('mcp subscription replay: a stdio target restarted after a crash', () => {
  let gw: McpGateway;
  before(async () => {
    gw = await startMcpGateway({ targets: [everythingStdio()] });
  });
  after(() => gw?.stop());

  it('restarts the killed child by itself, subscribes again, and updates keep coming', async () => {
    const { client, transport } = await connectClient(gw.mcpUrl);
    const got = updates(client);
    try {
      const uri = (await client.listResources()).resources[0]!.uri;
      const other = 'demo://resource/dynamic/text/7';
      await client.subscribeResource({ uri });
      await client.subscribeResource({ uri: other });
      await client.unsubscribeResource({ uri: other }); // only the live subscription is replayed
      await toggle(client);
      await waitFor(() => got.some((g) => g.uri === uri), 'the first update');
      const pid = gw.stdioPids().at(-1)!;
      process.kill(pid, 'SIGKILL');
      await waitFor(() => !alive(pid), 'the child to die');
      // No request from the client: the gateway restarts the child because it has subscriptions, and replays them.
      await waitFor(() => gw.stdioPids().length === 2 && replayed(gw) === 1, 'the eager restart and the replay');
      const record = gw.logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((r) => r.msg === 'replayed resource subscriptions to a restarted MCP target');
      assert.equal(record?.subscriptions, 1);
      assert.equal(record?.failed, 0);
      // The new child does not know the toggle (process state): turn it on there, and updates for the URI come again.
      const restartedAt = Date.now();
      await toggle(client);
      await waitFor(() => got.some((g) => g.uri === uri && g.at >= restartedAt), 'an update from the restarted child', 8000);
      assert.ok(!got.some((g) => g.uri === other), 'the unsubscribed URI is not replayed');
    } finally {
      await transport.terminateSession();
      await client.close();
    }
  });

  it('refuses to subscribe to a URI over 2,048 characters (-32602), before the target sees it', async () => {
    const { client, transport } = await connectClient(gw.mcpUrl);
    try {
      // The SDK reports the HTTP 400 and the JSON-RPC error it carries.
      await assert.rejects(client.subscribeResource({ uri: `demo://resource/${'x'.repeat(100_000)}` }), /-32602.*at most 2048 characters/s);
      assert.ok((await client.listResources()).resources.length > 0, 'the session goes on');
    } finally {
      await transport.terminateSession();
      await client.close();
    }
  });
});

describe('mcp subscription replay: an sse target whose server restarts', () => {
  let upstream: UpstreamServer;
  let gw: McpGateway;
  before(async () => {
    upstream = await startEverything('sse');
    gw = await startMcpGateway({ targets: [{ name: 'everything', sse: { host: '127.0.0.1', port: upstream.port, path: '/sse' } }] });
  });
  after(async () => {
    await gw?.stop();
    await upstream?.stop();
  });

  it('reconnects when the server is back, subscribes again, and updates keep coming', async () => {
    const { client, transport } = await connectClient(gw.mcpUrl);
    const got = updates(client);
    try {
      const uri = 'demo://resource/dynamic/text/1';
      await client.subscribeResource({ uri });
      await toggle(client);
      await waitFor(() => got.length > 0, 'the first update');
      const port = upstream.port;
      await upstream.stop();
      upstream = await startEverything('sse', port);
      await waitFor(() => replayed(gw) === 1, 'the reconnect and the replay', 20_000);
      const back = Date.now();
      await toggle(client);
      await waitFor(() => got.some((g) => g.uri === uri && g.at >= back), 'an update from the restarted server', 8000);
    } finally {
      await transport.terminateSession();
      await client.close();
    }
  });
});

describe('mcp subscription replay: a session resumed by another gateway process', () => {
  let a: McpGateway;
  let b: McpGateway;
  before(async () => {
    const mcp = { targets: [everythingStdio()] };
    a = await startMcpGateway(mcp, { staticConfig: { session: { key: KEY } } });
    b = await startMcpGateway(mcp, { staticConfig: { session: { key: KEY } } });
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
  });

  it('carries the subscriptions in the re-sealed session id; the other gateway subscribes its fresh child', async () => {
    const first = await connectClient(a.mcpUrl);
    const initialId = first.transport.sessionId!;
    const uri = 'demo://resource/dynamic/text/3';
    await first.client.subscribeResource({ uri });
    const sealed = first.transport.sessionId!;
    assert.notEqual(sealed, initialId, 'the subscribe answer carried a new session id, and the SDK client adopted it');
    assert.ok(sealed.length < 2048, `the id stays header-sized (${sealed.length})`);
    await first.client.close(); // no DELETE: the session lives on

    const second = await connectClient(b.mcpUrl, { sessionId: sealed });
    const got = updates(second.client);
    try {
      // A resumed client skips initialize, so its SDK transport opens the GET stream when told the session is ready.
      await second.transport.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      await waitFor(() => replayed(b) === 1, 'gateway b to start its child and subscribe it');
      assert.equal(b.stdioPids().length, 1);
      await toggle(second.client);
      await waitFor(() => got.some((g) => g.uri === uri), 'an update on gateway b', 8000);
      // The older id (from initialize) still names the same session on b: no second session, no second child.
      const res = await fetch(b.mcpUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', 'mcp-session-id': initialId },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
      });
      assert.equal(res.status, 200);
      assert.equal(b.stdioPids().length, 1);
    } finally {
      await second.transport.terminateSession();
      await second.client.close();
    }
  });
});
