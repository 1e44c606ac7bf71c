// The in-process MCP server of an OpenAPI target, driven with JSON-RPC messages as the mcp backend sends them.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import type { CallToolResult, JSONRPCMessage, Tool } from '@modelcontextprotocol/sdk/types.js';
import { OpenApiSession } from './session.ts';
import type { ToolHandler } from './session.ts';

const TOOL: Tool = { name: 'getPetById', description: 'Returns a single pet', inputSchema: { type: 'object', properties: {} } };

/** A handler whose calls wait until the test releases them; records the signals it got. */
function fakeHandler(): ToolHandler & { signals: AbortSignal[]; release(): void } {
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const signals: AbortSignal[] = [];
  return {
    serverInfo: { name: 'openapi', version: '1.0.0', title: 'Petstore' },
    tools: [TOOL],
    hasTool: (name) => name === TOOL.name,
    async callTool(name, args, signal): Promise<CallToolResult> {
      signals.push(signal);
      await gate;
      return { content: [{ type: 'text', text: JSON.stringify({ name, args }) }], structuredContent: { name, args } };
    },
    signals,
    release: () => release(),
  };
}

/** A started session plus a way to wait for the next message it sends. */
async function open(handler: ToolHandler = fakeHandler()) {
  const session = new OpenApiSession(handler);
  const inbox: JSONRPCMessage[] = [];
  const waiters: ((m: JSONRPCMessage) => void)[] = [];
  session.onmessage = (m) => {
    const w = waiters.shift();
    if (w) w(m);
    else inbox.push(m);
  };
  await session.start();
  const next = (): Promise<JSONRPCMessage> => (inbox.length ? Promise.resolve(inbox.shift()!) : new Promise((resolve) => waiters.push(resolve)));
  const request = async (id: number, method: string, params?: Record<string, unknown>): Promise<Record<string, any>> => {
    await session.send({ jsonrpc: '2.0', id, method, ...(params ? { params } : {}) });
    const reply = (await next()) as Record<string, any>;
    assert.equal(reply.id, id);
    return reply;
  };
  return { session, inbox, next, request };
}

describe('OpenApiSession', () => {
  it('initialize echoes a supported protocol version and offers tools only', async () => {
    const { request } = await open();
    const reply = await request(1, 'initialize', { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 't', version: '1' } });
    assert.deepEqual(reply, {
      jsonrpc: '2.0',
      id: 1,
      result: { protocolVersion: '2025-03-26', capabilities: { tools: {} }, serverInfo: { name: 'openapi', version: '1.0.0', title: 'Petstore' } },
    });
    const other = await request(2, 'initialize', { protocolVersion: '1999-01-01', capabilities: {}, clientInfo: { name: 't', version: '1' } });
    assert.equal(other.result.protocolVersion, LATEST_PROTOCOL_VERSION);
  });

  it('answers after send resolves, never during it', async () => {
    const { session, inbox } = await open();
    await session.send({ jsonrpc: '2.0', id: 1, method: 'ping' });
    assert.equal(inbox.length, 0);
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(inbox, [{ jsonrpc: '2.0', id: 1, result: {} }]);
  });

  it('tools/list, empty prompt and resource lists, logging/setLevel, ignored notifications', async () => {
    const { session, request, inbox } = await open();
    await session.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    assert.deepEqual((await request(1, 'tools/list')).result, { tools: [TOOL] });
    assert.deepEqual((await request(2, 'prompts/list')).result, { prompts: [] });
    assert.deepEqual((await request(3, 'resources/list')).result, { resources: [] });
    assert.deepEqual((await request(4, 'resources/templates/list', { cursor: 'x' })).result, { resourceTemplates: [] });
    assert.deepEqual((await request(5, 'logging/setLevel', { level: 'debug' })).result, {});
    assert.equal(inbox.length, 0);
  });

  it('tools/call runs the tool; unknown tools and bad params are -32602; unknown methods -32601', async () => {
    const handler = fakeHandler();
    handler.release();
    const { request } = await open(handler);
    const ok = await request(1, 'tools/call', { name: 'getPetById', arguments: { path: { petId: 1 } } });
    assert.deepEqual(ok.result.structuredContent, { name: 'getPetById', args: { path: { petId: 1 } } });
    assert.deepEqual((await request(2, 'tools/call', { name: 'nope', arguments: {} })).error, { code: -32602, message: 'Unknown tool: nope' });
    assert.equal((await request(3, 'tools/call', { arguments: {} })).error.code, -32602);
    assert.equal((await request(4, 'tools/call', { name: 'getPetById', arguments: [1] })).error.code, -32602);
    assert.deepEqual((await request(5, 'completion/complete', {})).error, { code: -32601, message: 'Method not found: completion/complete' });
    // A call without arguments gets {}.
    assert.deepEqual((await request(6, 'tools/call', { name: 'getPetById' })).result.structuredContent, { name: 'getPetById', args: {} });
  });

  it('notifications/cancelled aborts the call and suppresses its answer', async () => {
    const handler = fakeHandler();
    const { session, inbox, request } = await open(handler);
    await session.send({ jsonrpc: '2.0', id: 'slow', method: 'tools/call', params: { name: 'getPetById', arguments: {} } });
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(handler.signals.length, 1);
    await session.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'slow', reason: 'user' } });
    assert.equal(handler.signals[0]!.aborted, true);
    handler.release();
    assert.deepEqual((await request(9, 'ping')).result, {});
    assert.equal(inbox.length, 0);
  });

  it('close aborts calls in flight, reports onclose once and refuses further messages', async () => {
    const handler = fakeHandler();
    const { session, inbox } = await open(handler);
    let closed = 0;
    session.onclose = () => closed++;
    await session.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'getPetById' } });
    await new Promise((resolve) => setImmediate(resolve));
    await session.close();
    await session.close();
    assert.equal(closed, 1);
    assert.equal(handler.signals[0]!.aborted, true);
    handler.release();
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(inbox.length, 0);
    await assert.rejects(session.send({ jsonrpc: '2.0', id: 2, method: 'ping' }), /closed/);
    await assert.rejects(session.start(), /closed/);
    assert.equal(session.sessionId, undefined);
  });

  it('a handler whose tools can change offers listChanged and tells the session once it is initialized, until it closes (ADR 0137)', async () => {
    const listeners = new Set<() => void>();
    const handler: ToolHandler = {
      ...fakeHandler(),
      onToolsChanged: (listener) => {
        listeners.add(listener);
        return () => void listeners.delete(listener);
      },
    };
    const { session, request, inbox } = await open(handler);
    const settle = async (): Promise<void> => {
      for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
    };
    // Before initialize nothing is sent (MCP: no notifications before the handshake).
    for (const l of listeners) l();
    await settle();
    assert.equal(inbox.length, 0);
    const init = await request(1, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } });
    assert.deepEqual(init.result.capabilities, { tools: { listChanged: true } });
    for (const l of listeners) l();
    await settle();
    assert.deepEqual(inbox.splice(0), [{ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }]);
    await session.close();
    assert.equal(listeners.size, 0);
  });

  it('a resumed session (setProtocolVersion, no initialize) is told of changes too', async () => {
    const listeners = new Set<() => void>();
    const handler: ToolHandler = { ...fakeHandler(), onToolsChanged: (listener) => (listeners.add(listener), () => void listeners.delete(listener)) };
    const session = new OpenApiSession(handler);
    const inbox: JSONRPCMessage[] = [];
    session.onmessage = (m) => inbox.push(m);
    session.setProtocolVersion();
    await session.start();
    for (const l of listeners) l();
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(inbox, [{ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }]);
    await session.close();
  });

  it('a handler that throws becomes -32603', async () => {
    const handler: ToolHandler = { ...fakeHandler(), callTool: async () => Promise.reject(new Error('kaput')) };
    const { request } = await open(handler);
    assert.deepEqual((await request(1, 'tools/call', { name: 'getPetById' })).error, { code: -32603, message: 'kaput' });
  });
});
