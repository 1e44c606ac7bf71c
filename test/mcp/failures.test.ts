// Failure handling: malformed and oversized requests, transport-level refusals, targets that cannot start
// (failClosed / failOpen), a crashed stdio child (error, then restarted), client disconnects (upstream work
// cancelled, no process left behind) and gateway stop.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { INIT, alive, connectClient, connectSseClient, everythingStdio, fixtureStdio, memoryStdio, messagesOf, rawPost, records, startEverything, startMcpGateway, waitFor } from './harness.ts';
import type { McpGateway } from './harness.ts';

// Arguments may carry secrets (tokens, database URLs): errors that reach clients name the command only.
const badTarget = { name: 'bad', stdio: { cmd: 'switchyard-no-such-command', args: ['--token=s3cret-arg'] } };

describe('mcp failures: malformed requests', () => {
  let gw: McpGateway;
  let sessionId: string;
  before(async () => {
    gw = await startMcpGateway({ targets: [everythingStdio()] });
    sessionId = (await rawPost(gw.mcpUrl, INIT())).headers.get('mcp-session-id')!;
  });
  after(() => gw.stop());

  it('answers a body that is not JSON with a JSON-RPC parse error (-32700, HTTP 400)', async () => {
    const res = await rawPost(gw.mcpUrl, '{"jsonrpc": "2.0", "id": 1, "method": ', { 'mcp-session-id': sessionId });
    assert.equal(res.status, 400);
    const body = JSON.parse(res.text);
    assert.equal(body.jsonrpc, '2.0');
    assert.equal(body.id, null);
    assert.equal(body.error.code, -32700);
  });

  it('answers JSON that is not JSON-RPC with an invalid-request error (-32600, HTTP 400)', async () => {
    for (const bad of ['{"hello":"world"}', '{"jsonrpc":"1.0","id":3,"method":"ping"}', '[]', '42', '{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}']) {
      const res = await rawPost(gw.mcpUrl, bad, { 'mcp-session-id': sessionId });
      assert.equal(res.status, 400, bad);
      assert.equal(JSON.parse(res.text).error.code, -32600, bad);
    }
  });

  it('an id past 2^53 (read rounded) is refused with id null, not with another id', async () => {
    const res = await rawPost(gw.mcpUrl, '{"jsonrpc":"2.0","id":12345678901234567890123,"method":"ping"}', { 'mcp-session-id': sessionId });
    assert.equal(res.status, 400);
    const body = JSON.parse(res.text);
    assert.equal(body.error.code, -32600);
    assert.equal(body.id, null);
  });

  it('a message nested 200,000 deep (JSON.parse takes it, serialising it for the target would not) is a 400 -32600, not a 500', async () => {
    const deep = `${'['.repeat(200_000)}${']'.repeat(200_000)}`;
    const cases = [
      [`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi","x":${deep}}}}`, 7],
      [`{"jsonrpc":"2.0","method":"notifications/progress","params":{"x":${deep}}}`, null],
      [`{"jsonrpc":"2.0","id":"a","result":{"x":${deep}}}`, 'a'],
      [`[{"jsonrpc":"2.0","id":9,"method":"ping"},{"jsonrpc":"2.0","id":10,"method":"ping","params":{"x":${deep}}}]`, null],
    ] as const;
    for (const [body, id] of cases) {
      const res = await rawPost(gw.mcpUrl, body, { 'mcp-session-id': sessionId });
      assert.equal(res.status, 400, res.text.slice(0, 200));
      assert.deepEqual(JSON.parse(res.text), { jsonrpc: '2.0', id, error: { code: -32600, message: 'Invalid Request: JSON nested deeper than 512 levels' } });
    }
    // 512 levels in all are taken.
    const ok = `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"echo","arguments":{"message":"deep","x":${'['.repeat(508)}${']'.repeat(508)}}}}`;
    const res = await rawPost(gw.mcpUrl, ok, { 'mcp-session-id': sessionId });
    assert.equal(res.status, 200, res.text.slice(0, 300));
    assert.match(res.text, /Echo: deep/);
  });

  it('an initialize without the params MCP requires is a 400 -32602, answered before any target starts (ADR 0186)', async () => {
    const bad = [
      undefined,
      {},
      { protocolVersion: 20250618, capabilities: {}, clientInfo: { name: 'x', version: '1' } },
      { protocolVersion: '2025-06-18', clientInfo: { name: 'x', version: '1' } },
      { protocolVersion: '2025-06-18', capabilities: [], clientInfo: { name: 'x', version: '1' } },
      { protocolVersion: '2025-06-18', capabilities: {} },
      { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x' } },
    ];
    const started = (): number => records(gw).filter((r) => r.msg === 'stdio target process started').length;
    const before = started();
    assert.ok(before >= 1, 'the session of before() started the target');
    for (const params of bad) {
      const res = await rawPost(gw.mcpUrl, JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'initialize', params }));
      assert.equal(res.status, 400, `${JSON.stringify(params)}: ${res.text.slice(0, 300)}`);
      const body = JSON.parse(res.text);
      assert.equal(body.id, 5);
      assert.equal(body.error.code, -32602);
      assert.match(body.error.message, /^Invalid params: initialize needs /);
      assert.equal(res.headers.get('mcp-session-id'), null);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(started(), before, 'no target process was started for a refused initialize');
  });

  it('refuses a body over the 2 MiB limit with 413', async () => {
    const big = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { message: 'x'.repeat(2 * 1024 * 1024) } } });
    const res = await rawPost(gw.mcpUrl, big, { 'mcp-session-id': sessionId });
    assert.equal(res.status, 413);
  });

  it('refuses other methods (405), unacceptable Accept (406) and non-JSON content (415)', async () => {
    const put = await fetch(gw.mcpUrl, { method: 'PUT', body: '{}' });
    assert.equal(put.status, 405);
    assert.match(put.headers.get('allow') ?? '', /POST/);
    const html = await rawPost(gw.mcpUrl, INIT(), { accept: 'text/html' });
    assert.equal(html.status, 406);
    const text = await rawPost(gw.mcpUrl, INIT(), { 'content-type': 'text/plain' });
    assert.equal(text.status, 415);
    const get = await fetch(gw.mcpUrl, { headers: { accept: 'application/json', 'mcp-session-id': sessionId } });
    assert.equal(get.status, 406);
  });

  it('answers notifications and responses with 202, a batch with an array, JSON when only JSON is accepted', async () => {
    const note = await rawPost(gw.mcpUrl, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/roots/list_changed' }), { 'mcp-session-id': sessionId });
    assert.equal(note.status, 202);
    const json = await rawPost(gw.mcpUrl, JSON.stringify({ jsonrpc: '2.0', id: 'j', method: 'ping' }), { 'mcp-session-id': sessionId, accept: 'application/json' });
    assert.equal(json.status, 200);
    assert.match(json.headers.get('content-type') ?? '', /application\/json/);
    assert.deepEqual(JSON.parse(json.text), { jsonrpc: '2.0', id: 'j', result: {} });
    const batch = await rawPost(
      gw.mcpUrl,
      JSON.stringify([
        { jsonrpc: '2.0', id: 1, method: 'ping' },
        { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { message: 'b' } } },
      ]),
      { 'mcp-session-id': sessionId, accept: 'application/json' },
    );
    const answers = JSON.parse(batch.text) as { id: number }[];
    assert.deepEqual(answers.map((a) => a.id).sort(), [1, 2]);
    const sse = await rawPost(gw.mcpUrl, JSON.stringify({ jsonrpc: '2.0', id: 's', method: 'ping' }), { 'mcp-session-id': sessionId });
    assert.match(sse.headers.get('content-type') ?? '', /text\/event-stream/);
    assert.deepEqual(messagesOf(sse.text), [{ jsonrpc: '2.0', id: 's', result: {} }]);
  });
});

describe('mcp failures: a target that cannot start', () => {
  it('failClosed (default): initialize fails with an error naming the target', async () => {
    const gw = await startMcpGateway({ targets: [everythingStdio(), badTarget] });
    try {
      const res = await rawPost(gw.mcpUrl, INIT(1));
      assert.equal(res.status, 500);
      const body = JSON.parse(res.text);
      assert.equal(body.id, 1);
      assert.equal(body.error.code, -32603);
      assert.match(body.error.message, /^target `bad` \(stdio: switchyard-no-such-command\) failed to start: cannot start `switchyard-no-such-command`/);
      assert.ok(!res.text.includes('s3cret'), res.text);
      assert.equal(res.headers.get('mcp-session-id'), null);
      await assert.rejects(connectClient(gw.mcpUrl), /target `bad`/);
      // The target that did start for the failed session is stopped again.
      const pids = gw.stdioPids();
      await waitFor(() => pids.every((p) => !alive(p)), 'the started children to stop');
    } finally {
      await gw.stop();
    }
  });

  it('a process that dies while starting is reported with its exit code; its last stderr line is logged, not sent (ADR 0160)', async () => {
    const dying = { name: 'dying', stdio: { cmd: process.execPath, args: ['-e', "console.error('boom: cannot reach postgres://app:s3cret-pw@db/app'); process.exit(2)"] } };
    const gw = await startMcpGateway({ targets: [dying] });
    try {
      const res = await rawPost(gw.mcpUrl, INIT(1));
      assert.equal(res.status, 500);
      assert.match(JSON.parse(res.text).error.message, /^target `dying` \(stdio: .*\) failed to start: the process exited with code 2 \(its last stderr line is in the gateway log\)$/);
      assert.ok(!res.text.includes('s3cret-pw'), res.text);
      await waitFor(() => gw.logs.some((l) => l.includes('stdio target process ended')), 'the end to be logged');
      assert.match(gw.logs.find((l) => l.includes('stdio target process ended'))!, /"lastStderr":"boom: cannot reach/);
    } finally {
      await gw.stop();
    }
  });

  it('failOpen: the other targets keep serving; calls to the failed one name it', async () => {
    const gw = await startMcpGateway({ targets: [everythingStdio(), memoryStdio(), badTarget], failureMode: 'failOpen' });
    try {
      const { client, transport } = await connectClient(gw.mcpUrl);
      const tools = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(tools.includes('everything_echo') && tools.includes('memory_read_graph'));
      assert.ok(!tools.some((t) => t.startsWith('bad_')));
      const echo = await client.callTool({ name: 'everything_echo', arguments: { message: 'still here' } });
      assert.deepEqual(echo.content, [{ type: 'text', text: 'Echo: still here' }]);
      await assert.rejects(client.callTool({ name: 'bad_anything', arguments: {} }), /target `bad` \(stdio: switchyard-no-such-command\) failed to start/);
      const warnings = records(gw).filter((r) => r.level === 'warn' && r.target === 'bad');
      assert.ok(warnings.some((w) => String(w.msg).includes('failOpen')), JSON.stringify(warnings));
      await transport.terminateSession();
      await client.close();
    } finally {
      await gw.stop();
    }
  });

  for (const failureMode of ['failClosed', 'failOpen'] as const) {
    it(`${failureMode}: a target that stops answering ${failureMode === 'failClosed' ? 'fails list calls, naming it' : 'is left out of lists'}`, async () => {
      const remote = await startEverything('streamableHttp');
      const gw = await startMcpGateway({ targets: [everythingStdio(), { name: 'remote', mcp: { host: '127.0.0.1', port: remote.port, path: '/mcp?key=s3cret-query' } }], failureMode });
      try {
        const { client, transport } = await connectClient(gw.mcpUrl);
        assert.ok((await client.listTools()).tools.some((t) => t.name === 'remote_echo'));
        await remote.stop();
        if (failureMode === 'failClosed') {
          // A query may carry a key: errors that reach clients name the target's origin and path only.
          await assert.rejects(client.listTools(), (err: Error) => /target `remote` \(mcp: http:\/\/127\.0\.0\.1:\d+\/mcp\)/.test(err.message) && !err.message.includes('s3cret'));
        } else {
          const tools = (await client.listTools()).tools.map((t) => t.name);
          assert.ok(tools.includes('everything_echo') && !tools.some((t) => t.startsWith('remote_')));
          assert.ok(records(gw).some((r) => r.level === 'warn' && r.target === 'remote' && String(r.msg).includes('left out of a list')));
        }
        await assert.rejects(client.callTool({ name: 'remote_echo', arguments: { message: 'x' } }), /target `remote`/);
        assert.deepEqual((await client.callTool({ name: 'everything_echo', arguments: { message: 'ok' } })).content, [{ type: 'text', text: 'Echo: ok' }]);
        await transport.terminateSession();
        await client.close();
      } finally {
        await gw.stop();
        await remote.stop();
      }
    });
  }
});

describe('mcp failures: stdio child crashes and client disconnects', () => {
  let gw: McpGateway;
  before(async () => {
    gw = await startMcpGateway({ targets: [fixtureStdio(), everythingStdio()] });
  });
  after(() => gw.stop());

  const pidOf = async (client: Awaited<ReturnType<typeof connectClient>>['client']): Promise<number> => {
    const r = await client.callTool({ name: 'fixture_pid', arguments: {} });
    return Number((r.content as { text: string }[])[0]!.text);
  };

  it('a killed child fails the call in flight with an error naming the target, then restarts for the next request', async () => {
    const { client, transport } = await connectClient(gw.mcpUrl);
    try {
      const pid = await pidOf(client);
      assert.ok(gw.stdioPids().includes(pid));
      const pending = client.callTool({ name: 'fixture_wait', arguments: {} });
      await waitFor(() => gw.logs.some((l) => l.includes('fixture: waiting')), 'the call to reach the child');
      process.kill(pid, 'SIGKILL');
      await assert.rejects(pending, (err: Error) => {
        assert.match(err.message, /target `fixture` \(stdio: [^)]*\) stopped: the process was killed by SIGKILL/);
        return true;
      });
      const next = await pidOf(client);
      assert.notEqual(next, pid);
      assert.ok(alive(next));
      assert.ok(gw.logs.some((l) => l.includes('restarting MCP target')));
      // A child that exits on its own is reported with its exit code, and comes back too.
      await assert.rejects(client.callTool({ name: 'fixture_crash', arguments: {} }), /target `fixture` .* stopped: the process exited with code 3 \(its last stderr line is in the gateway log\)"/);
      assert.notEqual(await pidOf(client), next);
      // The other target never noticed.
      assert.deepEqual((await client.callTool({ name: 'everything_echo', arguments: { message: 'ok' } })).content, [{ type: 'text', text: 'Echo: ok' }]);
    } finally {
      await transport.terminateSession();
      await client.close();
    }
  });

  it('a client that disconnects mid-call cancels the upstream work', async () => {
    const init = await rawPost(gw.mcpUrl, INIT());
    const sessionId = init.headers.get('mcp-session-id')!;
    const count = (text: string): number => gw.logs.filter((l) => l.includes(text)).length;
    const [waiting, cancelled] = [count('fixture: waiting'), count('fixture: cancelled')];
    const controller = new AbortController();
    const request = fetch(gw.mcpUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': sessionId },
      body: JSON.stringify({ jsonrpc: '2.0', id: 99, method: 'tools/call', params: { name: 'fixture_wait', arguments: {} } }),
      signal: controller.signal,
    });
    await waitFor(() => count('fixture: waiting') > waiting, 'the call to reach the child');
    controller.abort();
    await assert.rejects(request.then((r) => r.text()));
    // The child got notifications/cancelled for its request and stopped waiting.
    await waitFor(() => count('fixture: cancelled') > cancelled, 'the child to see notifications/cancelled');
    await fetch(gw.mcpUrl, { method: 'DELETE', headers: { 'mcp-session-id': sessionId } });
  });

  it('an explicit notifications/cancelled reaches the target under its own request id', async () => {
    const { client, transport } = await connectClient(gw.mcpUrl);
    try {
      const count = (text: string): number => gw.logs.filter((l) => l.includes(text)).length;
      const [waiting, cancelled] = [count('fixture: waiting'), count('fixture: cancelled')];
      const controller = new AbortController();
      const pending = client.callTool({ name: 'fixture_wait', arguments: {} }, undefined, { signal: controller.signal });
      await waitFor(() => count('fixture: waiting') > waiting, 'the call to reach the child');
      controller.abort('changed my mind');
      await assert.rejects(pending);
      await waitFor(() => count('fixture: cancelled') > cancelled, 'the child to see the cancellation');
      assert.deepEqual(await client.ping(), {});
    } finally {
      await transport.terminateSession();
      await client.close();
    }
  });

  it('a legacy SSE client that goes away ends its session and its processes', async () => {
    const before = gw.stdioPids().length;
    const { client } = await connectSseClient(gw.sseUrl);
    await client.listTools();
    const pids = gw.stdioPids().slice(before);
    assert.equal(pids.length, 2);
    assert.ok(pids.every(alive));
    await client.close();
    await waitFor(() => pids.every((p) => !alive(p)), 'the session processes to stop');
  });
});

describe('mcp failures: gateway stop', () => {
  it('stops every stdio child', async () => {
    const gw = await startMcpGateway({ targets: [everythingStdio(), memoryStdio()] });
    const a = await connectClient(gw.mcpUrl);
    const b = await connectClient(gw.mcpUrl);
    await a.client.listTools();
    await b.client.listTools();
    const pids = gw.stdioPids();
    assert.equal(pids.length, 4);
    assert.ok(pids.every(alive));
    await a.client.close();
    await b.client.close();
    await gw.stop();
    await waitFor(() => pids.every((p) => !alive(p)), 'every child to stop');
  });
});
