// One stdio target (server-everything): the gateway is transparent — initialize answered by the target as-is,
// names unchanged — and relays lists, calls, prompts, resources, progress, logging and list-changed notifications.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { LoggingMessageNotificationSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { connectClient, everythingStdio, startMcpGateway, waitFor } from './harness.ts';
import type { McpGateway } from './harness.ts';

describe('mcp backend, one stdio target', () => {
  let gw: McpGateway;
  before(async () => {
    gw = await startMcpGateway({ targets: [everythingStdio()] });
  });
  after(() => gw.stop());

  it('forwards the target initialize answer as-is and returns a sealed session id', async () => {
    const { client, transport } = await connectClient(gw.mcpUrl);
    try {
      assert.equal(client.getServerVersion()?.name, 'mcp-servers/everything');
      assert.match(client.getInstructions() ?? '', /Everything Server/);
      assert.ok(client.getServerCapabilities()?.tools);
      assert.equal(transport.protocolVersion, '2025-11-25');
      assert.match(transport.sessionId ?? '', /^[A-Za-z0-9_-]{40,}$/, 'an opaque base64url id');
    } finally {
      await transport.terminateSession();
      await client.close();
    }
  });

  it('lists and calls tools, prompts and resources with their own names', async () => {
    const { client, transport } = await connectClient(gw.mcpUrl);
    try {
      const tools = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(tools.includes('echo') && tools.includes('get-sum'), tools.join(','));
      assert.ok(!tools.some((t) => t.startsWith('everything_')));
      const echo = await client.callTool({ name: 'echo', arguments: { message: 'hello' } });
      assert.deepEqual(echo.content, [{ type: 'text', text: 'Echo: hello' }]);
      const sum = await client.callTool({ name: 'get-sum', arguments: { a: 2, b: 40 } });
      assert.match(JSON.stringify(sum.content), /42/);

      const prompts = (await client.listPrompts()).prompts.map((p) => p.name);
      assert.ok(prompts.includes('simple-prompt'), prompts.join(','));
      const args = await client.getPrompt({ name: 'args-prompt', arguments: { city: 'Paris', state: 'TX' } });
      assert.match(JSON.stringify(args.messages), /Paris/);

      const resources = (await client.listResources()).resources;
      assert.ok(resources.length > 0);
      const first = resources[0]!;
      assert.ok(!first.uri.includes('+'), first.uri);
      const read = await client.readResource({ uri: first.uri });
      assert.equal(read.contents[0]!.uri, first.uri);
      const templates = (await client.listResourceTemplates()).resourceTemplates;
      assert.ok(templates.some((t) => t.uriTemplate.startsWith('demo://')));

      const completion = await client.complete({ ref: { type: 'ref/prompt', name: 'completable-prompt' }, argument: { name: 'department', value: 'E' } });
      assert.ok(Array.isArray(completion.completion.values));
      assert.deepEqual(await client.ping(), {});
    } finally {
      await transport.terminateSession();
      await client.close();
    }
  });

  it('relays progress notifications of a long call and its final answer', async () => {
    const { client, transport } = await connectClient(gw.mcpUrl);
    try {
      const progress: { progress: number; total?: number }[] = [];
      const result = await client.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 0.3, steps: 3 } }, undefined, {
        onprogress: (p) => progress.push(p),
      });
      assert.deepEqual(
        progress.map((p) => p.progress),
        [1, 2, 3],
      );
      assert.match(JSON.stringify(result.content), /Long running operation completed/);
    } finally {
      await transport.terminateSession();
      await client.close();
    }
  });

  it('relays logging messages and list-changed notifications', async () => {
    const { client, transport } = await connectClient(gw.mcpUrl, { capabilities: { sampling: {} } });
    const logs: unknown[] = [];
    let listChanged = 0;
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void logs.push(n.params));
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => void listChanged++);
    try {
      // server-everything registers its sampling tool once it knows the client can sample, and says so.
      await waitFor(() => listChanged > 0, 'notifications/tools/list_changed');
      const tools = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(tools.includes('trigger-sampling-request'));
      await client.callTool({ name: 'toggle-simulated-logging', arguments: {} });
      await waitFor(() => logs.length > 0, 'notifications/message');
      assert.match(JSON.stringify(logs[0]), /message/);
      await client.callTool({ name: 'toggle-simulated-logging', arguments: {} });
    } finally {
      await transport.terminateSession();
      await client.close();
    }
  });

  it('captures the target process stderr in the gateway log', () => {
    assert.ok(gw.logs.some((l) => l.includes('stdio target stderr') && l.includes('Starting default (STDIO) server')));
  });
});
