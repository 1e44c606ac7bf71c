// What an MCP request puts on its access-log line: the JSON-RPC method and the tool called, and nothing a client can
// make unbounded (a method or tool name is the client's text: a megabyte of it is not logged).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { INIT, fixtureStdio, rawPost, records, startMcpGateway, waitFor } from './harness.ts';
import type { McpGateway } from './harness.ts';

describe('mcp access-log fields', () => {
  let gw: McpGateway;
  let session: string;
  const headers = (): Record<string, string> => ({ accept: 'application/json', 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' });
  const call = (id: number, method: string, params: Record<string, unknown> = {}): string => JSON.stringify({ jsonrpc: '2.0', id, method, params });
  const requestLine = async (probe: number): Promise<Record<string, unknown>> => {
    let line: Record<string, unknown> | undefined;
    await waitFor(() => (line = records(gw).filter((r) => r.msg === 'request').at(probe)) !== undefined, 'the access-log line');
    return line!;
  };

  before(async () => {
    gw = await startMcpGateway({ targets: [fixtureStdio()] });
    const init = await rawPost(gw.mcpUrl, INIT(1), { accept: 'application/json' });
    assert.equal(init.status, 200, init.text);
    session = init.headers.get('mcp-session-id')!;
  });
  after(() => gw?.stop());

  it('logs the method and tool of a call', async () => {
    const before = records(gw).filter((r) => r.msg === 'request').length;
    const res = await rawPost(gw.mcpUrl, call(2, 'tools/call', { name: 'fixture_pid', arguments: {} }), headers());
    assert.equal(res.status, 200, res.text);
    const line = await requestLine(before);
    assert.equal(line['mcp.method'], 'tools/call');
    assert.equal(line['mcp.tool'], 'fixture_pid');
  });

  it('a method or tool name of 100,000 characters stays off the line', async () => {
    const long = 'x'.repeat(100_000);
    for (const [i, body] of [call(3, `tools/${long}`), call(4, 'tools/call', { name: long, arguments: {} })].entries()) {
      const before = records(gw).filter((r) => r.msg === 'request').length;
      await rawPost(gw.mcpUrl, body, headers());
      const line = await requestLine(before);
      const text = JSON.stringify(line);
      assert.ok(text.length < 4096, `the line is ${text.length} characters`);
      assert.equal(line['mcp.method'], i === 0 ? 'unknown' : 'tools/call');
      assert.equal(line['mcp.tool'], undefined);
    }
  });
});
