// The session relay against in-process fake targets: what the gateway rewrites in messages from targets
// (resource URIs, log sources, server-request ids), how answers route back, progress and cancellation.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import type { Exchange, Logger, PolicySet } from 'switchyard/sdk';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { McpUpstream } from '../../lib/mcp/upstream-contract.ts';
import type { RpcMessage } from './jsonrpc.ts';
import type { Responder } from './responder.ts';
import { McpSession } from './session.ts';
import type { BackendRuntime } from './session.ts';
import { sealSession, unsealSession } from './session-token.ts';
import { SseStream } from './sse-stream.ts';
import { declaredNames } from './target.ts';

const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => quiet, isEnabled: () => false };
const noPolicies: PolicySet = {
  keys: [],
  facets: {},
  has: () => false,
  facet: () => undefined,
  layer: (over) => over,
  hasRequestHooks: false,
  runRequestHooks: () => Promise.reject(new Error('no request hooks')),
  attemptHook: () => undefined,
};
const client = { headers: undefined, exchange: { get: () => undefined } as unknown as Exchange, shared: false };

class FakeUpstream implements McpUpstream {
  onmessage?: (message: JSONRPCMessage) => void;
  onclose?: () => void;
  readonly sent: RpcMessage[] = [];
  /** Answer for a request; undefined means the test answers it itself. */
  answer: (m: RpcMessage) => Record<string, unknown> | undefined = (m) =>
    m.method === 'initialize'
      ? { protocolVersion: '2025-06-18', capabilities: { tools: {}, resources: {} }, serverInfo: { name: 'fake', version: '1' } }
      : m.method === 'tools/list'
        ? { tools: [{ name: 't', inputSchema: { type: 'object' } }] }
        : undefined;
  async start(): Promise<void> {}
  async send(m: JSONRPCMessage): Promise<void> {
    const msg = m as RpcMessage;
    this.sent.push(msg);
    if (msg.id === undefined || msg.method === undefined) return;
    const result = this.answer(msg);
    if (result) queueMicrotask(() => this.emit({ jsonrpc: '2.0', id: msg.id, result }));
  }
  emit(m: RpcMessage): void {
    this.onmessage?.(m as JSONRPCMessage);
  }
  async close(): Promise<void> {}
}

class Capture implements Responder {
  readonly streaming = true;
  readonly related_: RpcMessage[] = [];
  readonly finals: RpcMessage[] = [];
  abandoned = 0;
  related(m: RpcMessage): void {
    this.related_.push(m);
  }
  final(m: RpcMessage): void {
    this.finals.push(m);
  }
  abandon(): void {
    this.abandoned++;
  }
  commit(): void {}
}

function setup(kind: 'streamable' | 'stateless' = 'streamable'): { session: McpSession; a: FakeUpstream; b: FakeUpstream } {
  const a = new FakeUpstream();
  const b = new FakeUpstream();
  const target = (name: string, up: FakeUpstream) => ({ name, transport: { kind: 'fake', describe: name, connect: () => up }, policies: noPolicies, requestPolicies: undefined, requestTimeoutMs: 0, startupTimeoutMs: 30_000, names: declaredNames() });
  const rt: BackendRuntime = { targets: [target('a', a), target('b', b)], multiplexed: true, failOpen: false, stateful: true, logger: quiet, key: randomBytes(32), aad: Buffer.from('x'), maxPendingRequests: 128 };
  const session = new McpSession(rt, 'u-1', kind, { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '1' } }, client);
  return { session, a, b };
}

const until = async (check: () => boolean): Promise<void> => {
  for (let i = 0; i < 100 && !check(); i++) await new Promise((r) => setTimeout(r, 5));
  assert.ok(check());
};

function streamText(stream: SseStream): () => string {
  let text = '';
  stream.body.on('data', (c: Buffer) => (text += c.toString()));
  return () => text;
}

describe('mcp session relay', () => {
  it('initializes every target with the client params, then notifications/initialized, and merges the answer', async () => {
    const { session, a, b } = setup();
    const result = await session.initialize();
    for (const up of [a, b]) {
      assert.deepEqual(up.sent.map((m) => m.method), ['initialize', 'notifications/initialized']);
      assert.deepEqual(up.sent[0]!.params, session.initParams);
    }
    assert.equal(result.protocolVersion, '2025-06-18');
    assert.deepEqual(result.capabilities, { tools: { listChanged: true }, resources: { listChanged: true } });
  });

  it('re-prefixes resource URIs of updates, tags log messages with their target, queues for the GET stream', async () => {
    const { session, a, b } = setup();
    await session.initialize();
    a.emit({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'file:///x' } });
    b.emit({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'hello' } });
    b.emit({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    const stream = new SseStream();
    const text = streamText(stream);
    assert.equal(session.streams.openGet(stream), true);
    assert.equal(session.streams.openGet(new SseStream()), false, 'one GET stream per session');
    await until(() => text().includes('list_changed'));
    assert.match(text(), /"uri":"a\+file:\/\/\/x"/);
    assert.match(text(), /"logger":"b"/);
  });

  it('relays a server-to-client request under a self-describing id and routes the answer back', async () => {
    const { session, b } = setup();
    await session.initialize();
    const stream = new SseStream();
    const text = streamText(stream);
    session.streams.openGet(stream);
    b.emit({ jsonrpc: '2.0', id: 7, method: 'roots/list' });
    b.emit({ jsonrpc: '2.0', id: 'abc', method: 'elicitation/create', params: {} });
    await until(() => text().includes('swy:b:s:abc'));
    assert.match(text(), /"id":"swy:b:n:7"/);
    session.clientMessage({ jsonrpc: '2.0', id: 'swy:b:n:7', result: { roots: [] } });
    session.clientMessage({ jsonrpc: '2.0', id: 'swy:b:s:abc', error: { code: -1, message: 'declined' } });
    await until(() => b.sent.length >= 4);
    assert.deepEqual(b.sent.at(-2), { jsonrpc: '2.0', id: 7, result: { roots: [] } });
    assert.deepEqual(b.sent.at(-1), { jsonrpc: '2.0', id: 'abc', error: { code: -1, message: 'declined' } });
  });

  it('routes a call by its prefix, sends progress on the call stream, answers with the client id', async () => {
    const { session, a } = setup();
    await session.initialize();
    const responder = new Capture();
    session.startCall({ jsonrpc: '2.0', id: 'c1', method: 'tools/call', params: { name: 'a_t', arguments: {}, _meta: { progressToken: 'p1' } } }, responder, undefined);
    await until(() => a.sent.some((m) => m.method === 'tools/call'));
    const upstream = a.sent.find((m) => m.method === 'tools/call')!;
    assert.equal(upstream.params!.name, 't');
    assert.notEqual(upstream.id, 'c1', 'the gateway uses its own upstream ids');
    a.emit({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'p1', progress: 1 } });
    a.emit({ jsonrpc: '2.0', id: upstream.id, result: { content: [{ type: 'resource_link', uri: 'mem://1', name: 'n' }] } });
    await until(() => responder.finals.length === 1);
    assert.deepEqual(responder.related_, [{ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'p1', progress: 1 } }]);
    assert.deepEqual(responder.finals[0], { jsonrpc: '2.0', id: 'c1', result: { content: [{ type: 'resource_link', uri: 'a+mem://1', name: 'n' }] } });
  });

  it('cancels upstream under the upstream id, and honours a cancellation that overtook its request', async () => {
    const { session, a } = setup();
    await session.initialize();
    const responder = new Capture();
    session.startCall({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'a_t' } }, responder, undefined);
    await until(() => a.sent.some((m) => m.method === 'tools/call'));
    const upstreamId = a.sent.find((m) => m.method === 'tools/call')!.id;
    session.clientMessage({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 5, reason: 'bye' } });
    assert.deepEqual(a.sent.at(-1), { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: upstreamId, reason: 'bye' } });
    assert.equal(responder.abandoned, 1);

    session.clientMessage({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 6 } });
    const sentBefore = a.sent.length;
    session.startCall({ jsonrpc: '2.0', id: 6, method: 'tools/call', params: { name: 'a_t' } }, responder, undefined);
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(responder.abandoned, 2);
    assert.equal(a.sent.length, sentBefore, 'nothing sent upstream for a cancelled request');
  });

  it('refuses server-to-client requests at once in stateless mode (no one could answer them)', async () => {
    const { session, a } = setup('stateless');
    await session.initialize();
    a.emit({ jsonrpc: '2.0', id: 9, method: 'sampling/createMessage', params: {} });
    await until(() => a.sent.some((m) => m.id === 9));
    assert.equal(a.sent.find((m) => m.id === 9)!.error!.code, -32601);
  });

  it('seals claims that open only with the same key and backend fingerprint', () => {
    const key = randomBytes(32);
    const claims = { u: 'u', p: '2025-11-25', i: { clientInfo: { name: 'c' } }, t: { a: { s: 'up-1', v: '2025-11-25', c: ['tools'] } }, n: 1 };
    const token = sealSession(key, Buffer.from('fp'), claims);
    assert.match(token, /^[A-Za-z0-9_-]+$/);
    assert.deepEqual(unsealSession(key, Buffer.from('fp'), token), claims);
    assert.equal(unsealSession(key, Buffer.from('other'), token), undefined);
    assert.equal(unsealSession(randomBytes(32), Buffer.from('fp'), token), undefined);
    assert.equal(unsealSession(key, Buffer.from('fp'), `${token.slice(0, -2)}AA`), undefined);
  });
});
