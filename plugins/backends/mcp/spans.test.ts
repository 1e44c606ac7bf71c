// What a client's JSON-RPC request puts on its MCP method span (ADR 0130): nothing it can make large or many.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PluginSpan, PluginSpans, SpanAttributes } from 'switchyard/sdk';
import { methodSpan } from './spans.ts';
import type { McpSession } from './session.ts';
import { declaredNames } from './target.ts';

/** A `ctx.spans` that records the spans started. */
function recordingSpans(): { spans: PluginSpans; started: { name: string; attributes: SpanAttributes }[] } {
  const started: { name: string; attributes: SpanAttributes }[] = [];
  const span = { recording: true, setAttributes() {}, rename() {}, end() {}, inject() {}, run: <T>(fn: () => T) => fn(), enclose() {} } satisfies PluginSpan;
  const spans: PluginSpans = {
    enabled: true,
    captureMessageContent: false,
    start(name, _kind, attributes = {}) {
      started.push({ name, attributes });
      return span;
    },
  };
  return { spans, started };
}

/** A session of one target that declared `get_weather`. */
function session(): McpSession {
  const names = declaredNames();
  names.tool.vouch('get_weather');
  return { rt: { multiplexed: false }, conns: [{ target: { names } }] } as unknown as McpSession;
}

describe('MCP method spans', () => {
  it('a declared tool names the span; a made-up one or method does not', () => {
    const { spans, started } = recordingSpans();
    const s = session();
    methodSpan(spans, s, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_weather' } }, undefined);
    methodSpan(spans, s, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'made_up' } }, undefined);
    methodSpan(spans, s, { jsonrpc: '2.0', id: 3, method: 'made/up' }, undefined);
    assert.deepEqual(started.map((x) => x.name), ['tools/call get_weather', 'tools/call', '_OTHER']);
    assert.equal(started[1]!.attributes['gen_ai.tool.name'], 'made_up');
    assert.equal(started[2]!.attributes['mcp.method.name'], '_OTHER');
    assert.equal(started[2]!.attributes['rpc.method_original'], 'made/up');
  });

  it('a request id over 256 characters is left off the span: a client cannot make every span megabytes long', () => {
    const { spans, started } = recordingSpans();
    methodSpan(spans, session(), { jsonrpc: '2.0', id: 'i'.repeat(1_000_000), method: 'ping' }, undefined);
    methodSpan(spans, session(), { jsonrpc: '2.0', id: 'short', method: 'ping' }, undefined);
    assert.ok(started[0]!.attributes['jsonrpc.request.id'] === undefined, 'the long id is not on the span');
    assert.equal(started[1]!.attributes['jsonrpc.request.id'], 'short');
  });
});
