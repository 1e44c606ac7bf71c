// Start-up deadlines of MCP targets (issue 14 item 5): a target that never answers `initialize` (a stdio process that
// reads and says nothing, an HTTP upstream that accepts and never answers) fails the client's `initialize` with a
// JSON-RPC error naming it once `startupTimeout` (per target, default 30s) has passed, and a stdio child is stopped.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { INIT, NODE, connectClient, fixtureStdio, rawPost, startMcpGateway, waitFor } from './harness.ts';
import type { McpGateway } from './harness.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { running } from './support/procs.ts';

/** A "server" that keeps reading stdin and never writes a byte. */
const MUTE = "process.stdin.resume(); process.stderr.write('mute: up\\n');";

async function timedInit(gw: McpGateway): Promise<{ ms: number; status: number; body: { id: unknown; error?: { code: number; message: string } } }> {
  const t0 = Date.now();
  const res = await rawPost(gw.mcpUrl, INIT(7), { accept: 'application/json' });
  return { ms: Date.now() - t0, status: res.status, body: JSON.parse(res.text) };
}

describe('mcp start-up deadline: a stdio target that never answers initialize', () => {
  let gw: McpGateway;
  before(async () => {
    gw = await startMcpGateway({ targets: [{ name: 'mute', startupTimeout: '1s', stdio: { cmd: NODE, args: ['-e', MUTE] } }] });
  });
  after(() => gw?.stop());

  it('answers initialize with a JSON-RPC error after startupTimeout, and stops the child', async () => {
    const r = await timedInit(gw);
    assert.equal(r.status, 504, JSON.stringify(r.body));
    assert.equal(r.body.id, 7);
    assert.equal(r.body.error?.code, -32603);
    assert.match(r.body.error!.message, /^target `mute` \(stdio: .*\) failed to start: it did not answer `initialize` within 1s \(startupTimeout\)/);
    assert.ok(r.ms >= 900 && r.ms < 6000, `answered after ${r.ms} ms`);
    const pids = gw.stdioPids();
    assert.equal(pids.length, 1);
    await waitFor(() => !running(pids[0]!), 'the mute child to be stopped', 5000);
  });

  it('the real SDK client gets the error too, not a hang', async () => {
    const t0 = Date.now();
    await assert.rejects(connectClient(gw.mcpUrl), /target `mute` .* within 1s \(startupTimeout\)/);
    assert.ok(Date.now() - t0 < 6000);
    await waitFor(() => gw.stdioPids().every((p) => !running(p)), 'every mute child to be stopped', 5000);
  });
});

describe('mcp start-up deadline: HTTP targets that accept and never answer', () => {
  let silent: TestUpstream;
  before(async () => {
    silent = await startUpstream(() => undefined);
  });
  after(() => silent?.close());

  for (const transport of ['mcp', 'sse'] as const) {
    it(`${transport}: initialize fails with a JSON-RPC error within the deadline`, async () => {
      const gw = await startMcpGateway({ targets: [{ name: 'silent', startupTimeout: '1s', [transport]: { host: '127.0.0.1', port: silent.port } }] });
      try {
        const before = silent.received.length;
        const r = await timedInit(gw);
        assert.equal(r.status, 504, JSON.stringify(r.body));
        assert.equal(r.body.error?.code, -32603);
        assert.match(r.body.error!.message, new RegExp(`^target \`silent\` \\(${transport}: http://127\\.0\\.0\\.1:\\d+/${transport}\\) failed to start: .*within 1s \\(startupTimeout\\)`));
        assert.ok(r.ms >= 900 && r.ms < 6000, `answered after ${r.ms} ms`);
        assert.ok(silent.received.length > before, 'the upstream was reached');
      } finally {
        await gw.stop();
      }
    });
  }
});

describe('mcp start-up deadline: config', () => {
  it('defaults to 30s (the start log names the deadline in force)', async () => {
    const gw = await startMcpGateway({ targets: [fixtureStdio()] });
    try {
      assert.equal((await rawPost(gw.mcpUrl, INIT(1), { accept: 'application/json' })).status, 200);
      assert.ok(gw.logs.some((l) => l.includes('starting MCP target') && l.includes('"startupTimeoutMs":30000')));
    } finally {
      await gw.stop();
    }
  });

  it('refuses a zero deadline at load', async () => {
    await assert.rejects(startMcpGateway({ targets: [{ name: 'mute', startupTimeout: '0s', stdio: { cmd: NODE, args: ['-e', MUTE] } }] }), /startupTimeout/);
  });
});
