// deploy/compose/ run without a container engine: its own files (the gateway's config.yaml and the rate limit
// service's switchyard.yaml), with the services Compose would start here instead: server-everything over streamable
// HTTP, envoyproxy/ratelimit with Redis (test/helpers/envoy-ratelimit.ts) and the gateway CLI. The service names are
// moved to 127.0.0.1 and the ports to free ones; nothing else changes. What docs/deploy.md says of the stack holds:
// an MCP client at /mcp gets server-everything's tools (one target: not prefixed), and each `x-user` value gets 60 requests a minute (ADR 0146).
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { request } from 'undici';
import { parse, stringify } from 'yaml';
import { startCli } from '../helpers/cli-process.ts';
import { locateRateLimitService, startRateLimitService } from '../helpers/envoy-ratelimit.ts';
import type { RateLimitService } from '../helpers/envoy-ratelimit.ts';
import { freePort } from '../helpers/ports.ts';
import { testTempDir } from '../helpers/temp-dir.ts';
import { startEverything } from '../mcp/harness.ts';
import type { UpstreamServer } from '../mcp/harness.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const COMPOSE = join(ROOT, 'deploy/compose');
const found = await locateRateLimitService();
if (found.skip) console.log(`# the Compose stack skipped: ${found.skip}`);

interface GatewayConfig {
  config: Record<string, unknown>;
  binds: { port: number; address?: string; listeners: { routes: { policies: { remoteRateLimit: { host: string } }; backends: { mcp: { targets: { mcp: { host: string } }[] } }[] }[] }[] }[];
}

describe('deploy/compose: the gateway, server-everything and envoyproxy/ratelimit, as Compose wires them', { skip: found.skip }, () => {
  const dir = testTempDir('switchyard-compose-');
  let everything: UpstreamServer;
  let rls: RateLimitService;
  let gw: Awaited<ReturnType<typeof startCli>>;
  let front: number;

  before(async () => {
    everything = await startEverything('streamableHttp');
    rls = await startRateLimitService(found, readFileSync(join(COMPOSE, 'ratelimit/switchyard.yaml'), 'utf8'));
    const config = parse(readFileSync(join(COMPOSE, 'gateway/config.yaml'), 'utf8')) as GatewayConfig;
    const route = config.binds[0]!.listeners[0]!.routes[0]!;
    assert.equal(route.policies.remoteRateLimit.host, 'ratelimit:8081', 'the service name and gRPC port of compose.yaml');
    route.policies.remoteRateLimit.host = `127.0.0.1:${rls.grpcPort}`;
    const target = route.backends[0]!.mcp.targets[0]!;
    assert.equal(target.mcp.host, 'http://everything:3001/mcp', 'the service name and PORT of compose.yaml');
    target.mcp.host = `http://127.0.0.1:${everything.port}/mcp`;
    front = await freePort();
    config.binds[0]!.port = front;
    config.binds[0]!.address = '127.0.0.1';
    config.config = { ...config.config, adminAddr: 'off', statsAddr: 'off', readinessAddr: `127.0.0.1:${await freePort()}` };
    writeFileSync(join(dir, 'config.yaml'), stringify(config));
    gw = await startCli(process.execPath, [join(ROOT, 'bin/switchyard.js'), '-f', join(dir, 'config.yaml')], { cwd: dir, readyMs: 60_000 });
  });

  after(async () => {
    await gw?.stop();
    await rls?.stop();
    await everything?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("an MCP client at /mcp gets server-everything's tools through the gateway", async () => {
    const client = new Client({ name: 'compose-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${front}/mcp`), { requestInit: { headers: { 'x-user': 'ana' } } }));
    try {
      const { tools } = await client.listTools();
      assert.ok(tools.some((t) => t.name === 'echo'), tools.map((t) => t.name).join(', '));
      const echoed = await client.callTool({ name: 'echo', arguments: { message: 'through compose' } });
      assert.deepEqual(echoed.content, [{ type: 'text', text: 'Echo: through compose' }]);
    } finally {
      await client.close();
    }
  });

  it('each x-user value gets 60 requests a minute; another value has its own 60', async () => {
    // The service counts in windows of the clock's minutes: 61 requests must not straddle two of them.
    if (new Date().getSeconds() > 45) await sleep((61 - new Date().getSeconds()) * 1000);
    const post = async (user: string): Promise<number> => {
      const res = await request(`http://127.0.0.1:${front}/mcp`, {
        method: 'POST',
        headers: { 'x-user': user, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
      });
      await res.body.dump();
      return res.statusCode;
    };
    const statuses: number[] = [];
    for (let i = 0; i < 60; i++) statuses.push(await post('bob'));
    assert.deepEqual(statuses.filter((s) => s === 429), [], 'the first 60 of a minute pass the limit');
    assert.equal(await post('bob'), 429);
    assert.notEqual(await post('carol'), 429);
  });
});
