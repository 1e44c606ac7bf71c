// Targets that break the protocol must not hang the gateway's clients or break what other targets serve. A
// stand-in streamable-HTTP target (the real SDK servers cannot be made to misbehave) answers initialize properly,
// then, by path: `/wrongid` answers requests with JSON under another id; `/nullid` with an error whose id is null;
// `/badtools` lists malformed tools beside a good one; `/notools` answers tools/list without a `tools` array (it contributes nothing, said in a warn line); `/sseerr`
// streams an event that is not JSON before the answer; `/sseflood` streams 20,000 of them before the answer; `/deep`
// answers tools/call with valid JSON nested 100,000 levels deep (so does the stdio target `deepstdio`, whose tool
// `long` answers with a line of 33 MiB: past the 32 MiB every MCP transport takes of one message, ADR 0143).
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { FIXTURE, NODE, connectClient, startMcpGateway, waitFor } from './harness.ts';
import type { McpGateway } from './harness.ts';

const DEPTH = 100_000;
/** A tool name MCP allows (61 characters) that is over the 64 LLM APIs take once prefixed with `badtools_`: shortened. */
const LONG_TOOL = `get${'_thing'.repeat(9)}_now`;
/** A tool name MCP allows with a character LLM APIs refuse: listed as it is, with a warning. */
const DOTTED_TOOL = 'files.list';
/** `tools/list` requests the `badtools` target received. */
let badtoolsLists = 0;
/** A tools/call answer whose structuredContent nests DEPTH arrays (valid JSON, 200 KB). */
function deepAnswer(id: number | string): string {
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[],"structuredContent":{"x":${'['.repeat(DEPTH)}${']'.repeat(DEPTH)}}}}`;
}
/**
 * A stdio MCP server (newline-delimited JSON-RPC): its tool `deep` answers as deepAnswer does, `long` with a line of
 * 33 MiB (its text in multi-byte characters: the bound counts bytes), others `fine`.
 */
const DEEP_STDIO = `
  const rl = require('readline').createInterface({ input: process.stdin });
  const send = (m) => process.stdout.write(JSON.stringify(m) + '\\n');
  const deep = (id) => '{"jsonrpc":"2.0","id":' + JSON.stringify(id) + ',"result":{"content":[],"structuredContent":{"x":' + '['.repeat(${DEPTH}) + ']'.repeat(${DEPTH}) + '}}}\\n';
  rl.on('line', (line) => {
    const m = JSON.parse(line);
    if (m.id === undefined) return;
    if (m.method === 'initialize') return send({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'deep', version: '1' } } });
    if (m.method === 'tools/call' && m.params.name === 'deep') return process.stdout.write(deep(m.id));
    if (m.method === 'tools/call' && m.params.name === 'long') return send({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: '\u00e9'.repeat(33 * 512 * 1024) }] } });
    if (m.method === 'tools/call') return send({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: 'fine' }] } });
    send({ jsonrpc: '2.0', id: m.id, result: {} });
  });
`;

/** Run `fn` with an SDK client of `gw`, its session ended afterwards. */
async function withClient(gw: McpGateway, fn: (client: Awaited<ReturnType<typeof connectClient>>['client']) => Promise<void>): Promise<void> {
  const { client, transport } = await connectClient(gw.mcpUrl);
  try {
    await fn(client);
  } finally {
    await transport.terminateSession().catch(() => undefined);
    await client.close();
  }
}

async function standIn(): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST') return void res.writeHead(405).end();
      const m = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id?: number | string; method?: string };
      if (m.id === undefined) return void res.writeHead(202).end();
      const json = (body: unknown, headers: Record<string, string> = {}): void => {
        res.writeHead(200, { 'content-type': 'application/json', ...headers });
        res.end(JSON.stringify(body));
      };
      if (m.method === 'initialize') {
        // `/longsid`: a session id of 12,000 characters; `/spacesid`: one with a space (MCP: visible ASCII only).
        const sid = req.url === '/longsid' ? 's'.repeat(12_000) : req.url === '/spacesid' ? 'bad session' : 'bad-session';
        return json({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'bad', version: '1' } } }, { 'mcp-session-id': sid });
      }
      const path = req.url!;
      if (path === '/badtools' && m.method === 'tools/list') badtoolsLists++;
      if (path === '/wrongid') return json({ jsonrpc: '2.0', id: 'nope', result: { tools: [], leak: 'TARGET-BYTES-1' } });
      if (path === '/notjson' && m.method === 'tools/call') {
        res.writeHead(200, { 'content-type': 'application/json' });
        return void res.end('<html>TARGET-BYTES-2 an error page</html>');
      }
      if (path === '/nullid') return json({ jsonrpc: '2.0', id: null, error: { code: -32603, message: 'oops' } });
      if (path === '/notools') return json({ jsonrpc: '2.0', id: m.id, result: { foo: 1 } });
      if (path === '/sseerr' && m.method === 'tools/call') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: {not json}\n\n');
        return void res.end(`data: ${JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: 'after the bad event' }] } })}\n\n`);
      }
      if (path === '/deep' && m.method === 'tools/call') {
        res.writeHead(200, { 'content-type': 'application/json' });
        return void res.end(deepAnswer(m.id!));
      }
      if ((path === '/huge' || path === '/hugesse') && m.method === 'tools/call') {
        // 33 MiB of one answer: as a JSON body, or as one event of an event stream.
        const answer = JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: 'x'.repeat(33 * 1024 * 1024) }] } });
        res.writeHead(200, { 'content-type': path === '/huge' ? 'application/json' : 'text/event-stream' });
        return void res.end(path === '/huge' ? answer : `data: ${answer}\n\n`);
      }
      if (path === '/sseflood' && m.method === 'tools/call') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: {not json}\n\n'.repeat(20_000));
        return void res.end(`data: ${JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: 'after the flood' }] } })}\n\n`);
      }
      if (path === '/badtools' && m.method === 'tools/list') {
        return json({ jsonrpc: '2.0', id: m.id, result: { tools: [{ name: 'ok', inputSchema: { type: 'object' } }, 'str', null, { noname: 1 }, { name: 42 }, { name: 'noschema' }, { name: LONG_TOOL, inputSchema: { type: 'object' } }, { name: DOTTED_TOOL, inputSchema: { type: 'object' } }] } });
      }
      json({ jsonrpc: '2.0', id: m.id, result: {} });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as { port: number }).port };
}

describe('mcp: targets that break the protocol', () => {
  let bad: { server: Server; port: number };
  let gw: McpGateway;
  before(async () => {
    bad = await standIn();
    const target = (name: string, path: string) => ({ name, mcp: { host: `http://127.0.0.1:${bad.port}${path}` } });
    gw = await startMcpGateway({
      targets: [
        ...['wrongid', 'notjson', 'nullid', 'badtools', 'notools', 'sseerr', 'sseflood', 'deep', 'longsid', 'spacesid', 'huge', 'hugesse'].map((name) => target(name, `/${name}`)),
        { name: 'deepstdio', stdio: { cmd: NODE, args: ['-e', DEEP_STDIO] } },
        { name: 'good', stdio: { cmd: NODE, args: [FIXTURE] } },
      ],
      failureMode: 'failOpen',
    });
  });
  after(async () => {
    await gw?.stop();
    bad?.server.close();
  });

  it('a JSON answer under another id (or id null) fails the call at once, naming the target; nothing waits', async () => {
    const { client, transport } = await connectClient(gw.mcpUrl);
    try {
      for (const name of ['wrongid', 'nullid']) {
        const started = Date.now();
        const r = await client.callTool({ name: `${name}_anything`, arguments: {} }, undefined, { timeout: 10_000 }).then(
          (ok) => ({ ok }),
          (err: Error) => ({ err }),
        );
        assert.ok('err' in r, `${name}: an error, not ${JSON.stringify(r)}`);
        assert.match(r.err.message, /did not answer the request/, name);
        assert.ok(Date.now() - started < 5000, `${name}: answered in ${Date.now() - started} ms`);
      }
    } finally {
      await transport.terminateSession().catch(() => undefined);
      await client.close();
    }
  });

  it("a target's protocol violation reaches the client as a fixed message; its bytes are in the log only", () =>
    withClient(gw, async (client) => {
      for (const [name, leak, message] of [
        ['wrongid', 'TARGET-BYTES-1', /did not answer the request \(its JSON answer carried no response with that id\)/],
        ['notjson', 'TARGET-BYTES-2', /answered with a body that is not JSON/],
      ] as const) {
        const err = await client.callTool({ name: `${name}_x`, arguments: {} }, undefined, { timeout: 10_000 }).then(
          () => assert.fail(`${name}: an error expected`),
          (e: Error) => e,
        );
        assert.match(err.message, message, name);
        assert.ok(!err.message.includes(leak), `${name}: ${err.message}`);
        assert.ok(gw.logs.some((l) => l.includes(leak) && l.includes(`"target":"${name}"`)), `${name}: the excerpt is logged`);
      }
    }));

  it("one target's malformed list items are left out: the merged list still parses, with every good tool", async () => {
    const { client, transport } = await connectClient(gw.mcpUrl);
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(names.includes('badtools_ok'), names.join(','));
      assert.ok(names.includes('good_pid'), names.join(','));
      assert.ok(!names.some((n) => /undefined|42|noschema|^notools_/.test(n)), names.join(','));
      assert.ok(gw.logs.some((l) => l.includes('left out malformed MCP list items') && l.includes('"target":"badtools"') && l.includes('"count":5')));
      assert.ok(gw.logs.some((l) => l.includes('MCP target answered a list without its items') && l.includes('"target":"notools"')));
    } finally {
      await transport.terminateSession().catch(() => undefined);
      await client.close();
    }
  });

  it('a prefixed name past 64 is shortened (ADR 0182); one with characters LLM APIs refuse is listed, and one warn line per target says which (ADR 0143)', async () => {
    await withClient(gw, async (client) => {
      const names = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(!names.includes(`badtools_${LONG_TOOL}`), names.join(','));
      assert.ok(names.some((n) => n.length === 64 && n.startsWith(`badtools_${LONG_TOOL.slice(0, 46)}-`)), names.join(','));
      assert.ok(names.includes(`badtools_${DOTTED_TOOL}`), names.join(','));
      await client.listTools();
      // Made-up names of the shortened shape list the target's tools again at most every 10 s, not once per call.
      const lists = badtoolsLists;
      for (const hash of ['0000000a', '0000000b', '0000000c']) {
        await client.callTool({ name: `badtools_${'z'.repeat(46)}-${hash}`, arguments: {} }).catch(() => undefined);
      }
      assert.ok(badtoolsLists - lists <= 1, `${badtoolsLists - lists} lists for 3 calls`);
    });
    const warned = gw.logs.filter((l) => l.includes('lists tools whose names LLM APIs refuse once prefixed'));
    assert.equal(warned.length, 1, warned.join('\n'));
    assert.ok(warned[0]!.includes('"target":"badtools"') && warned[0]!.includes('"count":1') && warned[0]!.includes(`badtools_${DOTTED_TOOL}`), warned[0]);
  });

  it('an event that is not JSON is dropped with a warn line naming the target; the answer after it still arrives', async () => {
    const { client, transport } = await connectClient(gw.mcpUrl);
    try {
      const r = await client.callTool({ name: 'sseerr_anything', arguments: {} });
      assert.deepEqual(r.content, [{ type: 'text', text: 'after the bad event' }]);
      assert.ok(gw.logs.some((l) => l.includes('MCP target sent something that is not MCP') && l.includes('"target":"sseerr"') && l.includes('not JSON')));
    } finally {
      await transport.terminateSession().catch(() => undefined);
      await client.close();
    }
  });

  it('20,000 events that are not JSON: at most 100 warn lines a second for the connection, the rest counted (ADR 0134)', () =>
    withClient(gw, async (client) => {
      const started = performance.now();
      const r = await client.callTool({ name: 'sseflood_anything', arguments: {} });
      assert.deepEqual(r.content, [{ type: 'text', text: 'after the flood' }]);
      const seconds = Math.ceil((performance.now() - started) / 1000);
      const warned = gw.logs.filter((l) => l.includes('MCP target sent something that is not MCP') && l.includes('"target":"sseflood"')).length;
      assert.ok(warned > 0 && warned <= 100 * (seconds + 1), `${warned} warn lines in ${seconds} s`);
      // The count comes when the second ends.
      await waitFor(() => gw.logs.some((l) => l.includes('MCP target log lines left out') && l.includes('"target":"sseflood"')), 'the count of the lines left out');
      const counted = gw.logs
        .filter((l) => l.includes('MCP target log lines left out') && l.includes('"target":"sseflood"'))
        .reduce((n, l) => n + (JSON.parse(l) as { count: number }).count, 0);
      assert.equal(warned + counted, 20_000);
    }));

  for (const tool of ['deep_anything', 'deepstdio_deep']) {
    it(`${tool}: the client gets an error naming the target at once (it waited for ever), and the session goes on`, () =>
      withClient(gw, async (client) => {
        await assert.rejects(client.callTool({ name: tool, arguments: {} }, undefined, { timeout: 10_000 }), /target `deep(stdio)?`.*nested deeper than/s);
        if (tool === 'deepstdio_deep') assert.deepEqual((await client.callTool({ name: 'deepstdio_other', arguments: {} })).content, [{ type: 'text', text: 'fine' }]);
      }));
  }

  for (const name of ['huge', 'hugesse']) {
    it(`${name}: an HTTP answer over 32 MiB (${name === 'huge' ? 'a JSON body' : 'one event'}) is a JSON-RPC error for the call, naming the target; the session goes on (ADR 0143)`, () =>
      withClient(gw, async (client) => {
        const started = performance.now();
        await assert.rejects(client.callTool({ name: `${name}_x`, arguments: {} }, undefined, { timeout: 30_000 }), new RegExp(`target \`${name}\`.*(answer is larger|an event longer) than 32 MiB, the most a target may send in one message`, 's'));
        assert.ok(performance.now() - started < 20_000, `answered in ${Math.round(performance.now() - started)} ms`);
        assert.deepEqual((await client.callTool({ name: 'deepstdio_other', arguments: {} })).content, [{ type: 'text', text: 'fine' }]);
      }));
  }

  it('a stdio answer line over 32 MiB (as an HTTP answer over 32 MiB): a JSON-RPC error for the call at once, the process restarted for the next (ADR 0143)', () =>
    withClient(gw, async (client) => {
      const started = performance.now();
      await assert.rejects(client.callTool({ name: 'deepstdio_long', arguments: {} }, undefined, { timeout: 30_000 }), /target `deepstdio`.*line longer than 32 MiB/s);
      assert.ok(performance.now() - started < 20_000, `answered in ${Math.round(performance.now() - started)} ms`);
      assert.deepEqual((await client.callTool({ name: 'deepstdio_other', arguments: {} })).content, [{ type: 'text', text: 'fine' }]);
      assert.ok(gw.logs.some((l) => l.includes('restarting MCP target') && l.includes('32 MiB')), 'the restart is logged with its reason');
    }));

  it('fails to start, naming the target and why; the other targets serve (a 12,000-character id broke every client: the session id it went into was too long)', async () => {
    const { transport } = await connectClient(gw.mcpUrl);
    assert.ok(transport.sessionId && transport.sessionId.length < 4096, `session id of ${transport.sessionId?.length} characters`);
    await transport.terminateSession();
    await withClient(gw, async (client) => {
      const tools = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(tools.includes('good_pid') && !tools.some((t) => t.startsWith('longsid_') || t.startsWith('spacesid_')), tools.join(','));
      await assert.rejects(client.callTool({ name: 'longsid_x', arguments: {} }), /target `longsid`.*session id.*12000 characters/s);
      await assert.rejects(client.callTool({ name: 'spacesid_x', arguments: {} }), /target `spacesid`.*session id.*visible ASCII/s);
    });
  });
});
