// Bounded stdio targets (issue 14 item 4): each stdio target runs at most `maxProcesses` children (default 64); an
// `initialize` past the limit gets a JSON-RPC error at once (HTTP 503) instead of another process, the number of live
// children never goes over the limit, and ending sessions (DELETE, idle expiry) frees their slots.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { FIXTURE, INIT, NODE, connectClient, rawPost, startMcpGateway, waitFor } from './harness.ts';
import type { McpGateway } from './harness.ts';
import { cmdline, descendants } from './support/procs.ts';

/** A fixture target whose processes carry a marker of their own, so they can be counted in /proc. */
function markedFixture(marker: string, stdio: Record<string, unknown> = {}): Record<string, unknown> {
  return { name: 'fixture', stdio: { cmd: NODE, args: [FIXTURE, `--marker=${marker}`], ...stdio } };
}

/** The target's MCP server processes now running (the program itself, not any wrapper around it). */
function children(marker: string): number[] {
  return descendants(process.pid).filter((pid) => {
    const line = cmdline(pid);
    return line.startsWith(NODE) && line.includes(`--marker=${marker}`);
  });
}

interface Outcome {
  status: number;
  session: string | null;
  body: { id?: unknown; result?: unknown; error?: { code: number; message: string } };
}

async function initialize(gw: McpGateway, id: number): Promise<Outcome> {
  const res = await rawPost(gw.mcpUrl, INIT(id), { accept: 'application/json' });
  return { status: res.status, session: res.headers.get('mcp-session-id'), body: JSON.parse(res.text) as Outcome['body'] };
}

describe('mcp stdio limits: maxProcesses', () => {
  const marker = randomUUID();
  let gw: McpGateway;
  before(async () => {
    gw = await startMcpGateway({ targets: [markedFixture(marker, { maxProcesses: 2 })] });
  });
  after(() => gw?.stop());

  it('refuses initialize past the limit with a JSON-RPC error, and never runs more children than the limit', async () => {
    let most = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        most = Math.max(most, children(marker).length);
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    const outcomes = await Promise.all([1, 2, 3, 4, 5, 6].map((id) => initialize(gw, id)));
    sampling = false;
    await sampler;
    const ok = outcomes.filter((o) => o.status === 200);
    const refused = outcomes.filter((o) => o.status !== 200);
    assert.equal(ok.length, 2, JSON.stringify(outcomes));
    assert.ok(ok.every((o) => o.session), 'the sessions that started have ids');
    assert.equal(refused.length, 4);
    for (const r of refused) {
      assert.equal(r.status, 503);
      assert.equal(r.session, null);
      assert.equal(r.body.error?.code, -32000);
      assert.match(r.body.error!.message, /^target `fixture` \(stdio: .*\) is at its limit of 2 running processes \(maxProcesses\)/);
      assert.equal(typeof r.body.id, 'number', 'the error answers the initialize request by its id');
    }
    assert.ok(most <= 2, `at most 2 children at any time, saw ${most}`);
    assert.equal(children(marker).length, 2);

    // The real SDK client gets the same refusal.
    await assert.rejects(connectClient(gw.mcpUrl), /limit of 2 running processes/);

    // Ending a session frees its slot at once.
    const del = await fetch(gw.mcpUrl, { method: 'DELETE', headers: { 'mcp-session-id': ok[0]!.session! } });
    assert.equal(del.status, 200);
    await waitFor(() => children(marker).length === 1, 'the deleted session’s child to stop');
    const again = await initialize(gw, 7);
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal(children(marker).length, 2);
    assert.equal((await initialize(gw, 8)).status, 503);
  });
});

describe('mcp stdio limits: idle expiry', () => {
  const marker = randomUUID();
  let gw: McpGateway;
  before(async () => {
    gw = await startMcpGateway({ targets: [markedFixture(marker, { maxProcesses: 1 })], sessionIdleTimeout: '1s' });
  });
  after(() => gw?.stop());

  it('stops the children of idle sessions and frees their slots', async () => {
    assert.equal((await initialize(gw, 1)).status, 200);
    assert.equal(children(marker).length, 1);
    // Refused while the first session holds the only slot (unless it already expired on a slow machine).
    const second = await initialize(gw, 2);
    if (second.status !== 200) assert.equal(second.status, 503);
    await waitFor(() => children(marker).length === 0, 'the idle sessions to expire', 15_000);
    assert.ok(gw.logs.some((l) => l.includes('MCP session expired after being idle')));
    // The gateway hears of the exit a moment after /proc shows it.
    let started: Outcome | undefined;
    await waitFor(async () => (started = await initialize(gw, 3)).status === 200, 'a new session to start in the freed slot', 5000);
    assert.ok(started?.session);
    assert.equal(children(marker).length, 1);
  });
});

describe('mcp stdio limits: the default', () => {
  it('is 64 processes per target', async () => {
    const marker = randomUUID();
    const gw = await startMcpGateway({ targets: [markedFixture(marker)] });
    try {
      const outcomes: Outcome[] = [];
      for (let i = 0; i < 3; i++) outcomes.push(await initialize(gw, i));
      assert.ok(outcomes.every((o) => o.status === 200), 'far below the default limit, every session starts');
      assert.ok(gw.logs.some((l) => l.includes('"maxProcesses":64')), 'the start log names the limit in force');
    } finally {
      await gw.stop();
    }
  });
});

describe('mcp stdio limits: config', () => {
  it('refuses maxProcesses below 1 at load', async () => {
    await assert.rejects(startMcpGateway({ targets: [markedFixture('x', { maxProcesses: 0 })] }), /maxProcesses/);
  });
});
