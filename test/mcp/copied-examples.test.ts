// The MCP configs a new user copies first: docs/mcp.md's first one and examples/mcp.yaml.
// The first config of docs/mcp.md is what a new user copies: it must run as shown (an MCP client connects and sees
// both servers' tools) and be safe to copy. It named a CA file that does not exist and two servers nobody runs
// (`failureMode: failClosed`, the default, then failed every `initialize` with 500), and it listened on every
// interface while `everything_get-env` hands any caller the gateway's environment.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { ROOT, connectClient, mcpPreset } from './harness.ts';

// examples/mcp.yaml ran its two servers as `node node_modules/@modelcontextprotocol/.../index.js`, a path that
// exists only in a clone's root after `npm ci` (dev dependencies): from the installed package, the folder its README
// points at, every session failed with 500.

interface Bind {
  port: number;
  address?: string;
}

/** The first ```yaml block of docs/mcp.md, parsed. */
function firstExample(): { binds: Bind[] } {
  const doc = readFileSync(join(ROOT, 'docs/mcp.md'), 'utf8');
  const block = /^```yaml\n([\s\S]*?)^```/m.exec(doc);
  assert.ok(block, 'docs/mcp.md has a yaml block');
  return parse(block[1]!) as { binds: Bind[] };
}

describe('docs/mcp.md: the first example, as a user copies it', { timeout: 180_000 }, () => {
  let gw: RunningGateway;
  let port: number;

  before(async () => {
    const config = firstExample();
    port = await freePort();
    for (const bind of config.binds) bind.port = port;
    // Run from the repository root (as the tests are): `npx -y @modelcontextprotocol/server-everything` finds the
    // dev dependency there without the network.
    gw = await startGateway(config as unknown as Record<string, unknown>, { preset: mcpPreset }); // admin servers on port 0
  });
  after(async () => {
    await gw?.stop();
  });

  it('listens on loopback only: its `everything` server reads the gateway environment to any caller', () => {
    for (const bind of firstExample().binds) assert.match(bind.address ?? 'every interface', /^(127\.\d+\.\d+\.\d+|::1|localhost)$/);
  });

  it('an MCP client connects and lists the tools of both servers', async () => {
    const { client } = await connectClient(new URL(`http://127.0.0.1:${port}/mcp`));
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(names.includes('everything_echo'), names.join(' '));
      assert.ok(names.includes('memory_read_graph'), names.join(' '));
      const echo = (await client.callTool({ name: 'everything_echo', arguments: { message: 'hi' } })) as { content: { text: string }[] };
      assert.equal(echo.content[0]!.text, 'Echo: hi');
    } finally {
      await client.close();
    }
  });
});

describe('examples/mcp.yaml runs', { timeout: 180_000 }, () => {
  let gw: RunningGateway;
  let port: number;

  before(async () => {
    const config = parse(readFileSync(join(ROOT, 'examples/mcp.yaml'), 'utf8')) as { config?: Record<string, unknown>; binds: Bind[] };
    port = await freePort();
    for (const bind of config.binds) bind.port = port;
    delete config.config; // the test's admin addresses (port 0) instead of the example's
    // From the repository root, npx finds the two servers among the dev dependencies (no network); elsewhere it
    // downloads them. test/unit/examples-valid.test.ts checks no example names a file under node_modules/.
    gw = await startGateway(config as unknown as Record<string, unknown>, { preset: mcpPreset }); // admin servers on port 0
  });
  after(async () => {
    await gw?.stop();
  });

  it('an MCP client lists and calls the tools of both servers', async () => {
    const { client } = await connectClient(new URL(`http://127.0.0.1:${port}/mcp`));
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(names.includes('everything_echo') && names.includes('memory_read_graph'), names.join(' '));
      const echo = (await client.callTool({ name: 'everything_echo', arguments: { message: 'hi' } })) as { content: { text: string }[] };
      assert.equal(echo.content[0]!.text, 'Echo: hi');
    } finally {
      await client.close();
    }
  });
});
