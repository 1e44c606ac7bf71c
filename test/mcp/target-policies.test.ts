// Per-target `policies` (SPEC §2.5.1: merged with and overriding the route's): request-changing policies act on the
// gateway's own requests to each target: requestHeaderModifier and backendAuth per target (and the route's
// backendAuth for targets without their own), mcpAuthorization per target, backendAuth on OpenAPI tool calls.
import assert from 'node:assert/strict';
import { createServer, request as httpRequest } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { connectClient, startEverything, startMcpGateway } from './harness.ts';
import type { UpstreamServer } from './harness.ts';
import { PETSTORE_JSON, startPetstore } from './support/petstore-server.ts';
import type { Petstore } from './support/petstore-server.ts';

/** A pass-through HTTP proxy in front of an MCP server that records every request's headers. */
interface RecordingProxy {
  readonly port: number;
  readonly received: { method: string; headers: IncomingHttpHeaders }[];
  close(): Promise<void>;
}

async function recordingProxy(upstreamPort: number): Promise<RecordingProxy> {
  const received: RecordingProxy['received'] = [];
  const server: Server = createServer((req, res) => {
    received.push({ method: req.method!, headers: req.headers });
    const up = httpRequest({ host: '127.0.0.1', port: upstreamPort, method: req.method, path: req.url, headers: { ...req.headers, host: `127.0.0.1:${upstreamPort}` } }, (ur) => {
      res.writeHead(ur.statusCode!, ur.headers);
      ur.pipe(res);
    });
    up.on('error', () => res.destroy());
    res.on('close', () => up.destroy());
    req.pipe(up);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    received,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

describe('mcp backend, per-target policies', () => {
  let everything: UpstreamServer;
  let proxyA: RecordingProxy;
  let proxyB: RecordingProxy;
  before(async () => {
    everything = await startEverything('streamableHttp');
    proxyA = await recordingProxy(everything.port);
    proxyB = await recordingProxy(everything.port);
  });
  after(async () => {
    await proxyA.close();
    await proxyB.close();
    await everything.stop();
  });

  it("applies a target's requestHeaderModifier and backendAuth to that target only; the route's backendAuth to the others", async () => {
    proxyA.received.length = 0;
    proxyB.received.length = 0;
    const gw = await startMcpGateway(
      {
        targets: [
          {
            name: 'a',
            mcp: { host: '127.0.0.1', port: proxyA.port, path: '/mcp' },
            policies: { requestHeaderModifier: { set: { 'x-target': 'a' }, remove: ['x-client-note'] }, backendAuth: { key: 'target-a-key' } },
          },
          { name: 'b', mcp: { host: '127.0.0.1', port: proxyB.port, path: '/mcp' } },
        ],
      },
      { policies: { backendAuth: { key: 'route-key' } } },
    );
    try {
      const { client, transport } = await connectClient(gw.mcpUrl, { headers: { 'x-client-note': 'hello' } });
      const r = await client.callTool({ name: 'a_echo', arguments: { message: 'to a' } });
      assert.deepEqual(r.content, [{ type: 'text', text: 'Echo: to a' }]);
      const rb = await client.callTool({ name: 'b_echo', arguments: { message: 'to b' } });
      assert.deepEqual(rb.content, [{ type: 'text', text: 'Echo: to b' }]);
      await transport.terminateSession();
      await client.close();

      const posts = (p: RecordingProxy) => p.received.filter((r) => r.method === 'POST');
      assert.ok(posts(proxyA).length >= 3, 'initialize, initialized and the call reached target a');
      for (const { headers } of posts(proxyA)) {
        assert.equal(headers.authorization, 'Bearer target-a-key', "target a's own backendAuth wins over the route's");
        assert.equal(headers['x-target'], 'a');
        assert.equal(headers['x-client-note'], undefined, "target a's requestHeaderModifier removed the client's header");
      }
      assert.ok(posts(proxyB).length >= 3);
      for (const { headers } of posts(proxyB)) {
        assert.equal(headers.authorization, 'Bearer route-key', "the route's backendAuth applies to target b");
        assert.equal(headers['x-target'], undefined, "target a's header modifier does not leak to b");
        assert.equal(headers['x-client-note'], 'hello', 'target b gets the client header untouched');
      }
      // The GET stream and the DELETE carry the credential too.
      const others = proxyA.received.filter((r) => r.method !== 'POST');
      assert.ok(others.length > 0);
      for (const { headers } of others) assert.equal(headers.authorization, 'Bearer target-a-key');
    } finally {
      await gw.stop();
    }
  });

  it("several targets: the client's Authorization and Cookie reach none of them unless a target asks (backendAuth.passthrough); one target still gets them", async () => {
    const headers = { authorization: 'Bearer client-token', cookie: 'session=s1', 'x-client-note': 'hello' };
    const posts = (p: RecordingProxy) => p.received.filter((r) => r.method === 'POST');
    const call = async (url: URL, tools: string[]): Promise<void> => {
      const { client, transport } = await connectClient(url, { headers });
      for (const name of tools) assert.deepEqual((await client.callTool({ name, arguments: { message: 'hi' } })).content, [{ type: 'text', text: 'Echo: hi' }]);
      await transport.terminateSession();
      await client.close();
    };
    proxyA.received.length = 0;
    proxyB.received.length = 0;
    const several = await startMcpGateway({
      targets: [
        { name: 'a', mcp: { host: '127.0.0.1', port: proxyA.port, path: '/mcp' }, policies: { backendAuth: { passthrough: {} } } },
        { name: 'b', mcp: { host: '127.0.0.1', port: proxyB.port, path: '/mcp' } },
      ],
    });
    try {
      await call(several.mcpUrl, ['a_echo', 'b_echo']);
    } finally {
      await several.stop();
    }
    assert.ok(posts(proxyA).length >= 3 && posts(proxyB).length >= 3);
    for (const { headers: h } of posts(proxyA)) {
      assert.equal(h.authorization, 'Bearer client-token', 'target a asked for the client credential');
      assert.equal(h.cookie, undefined);
    }
    for (const { headers: h } of posts(proxyB)) {
      assert.equal(h.authorization, undefined, "target b never sees a token meant for the gateway's endpoint");
      assert.equal(h.cookie, undefined);
      assert.equal(h['x-client-note'], 'hello', 'other client headers still pass');
    }
    proxyA.received.length = 0;
    const single = await startMcpGateway({ targets: [{ name: 'a', mcp: { host: '127.0.0.1', port: proxyA.port, path: '/mcp' } }] });
    try {
      await call(single.mcpUrl, ['echo']);
    } finally {
      await single.stop();
    }
    for (const { headers: h } of posts(proxyA)) assert.equal(h.authorization, 'Bearer client-token', 'a single target is the server the client talks to');
  });

  it("a target's mcpAuthorization rules join the route's for that target's items only (levels concatenate, BEHAVIOUR §5.5)", async () => {
    const gw = await startMcpGateway(
      {
        targets: [
          { name: 'a', mcp: { host: '127.0.0.1', port: proxyA.port, path: '/mcp' }, policies: { mcpAuthorization: { rules: [{ deny: 'mcp.tool.name == "get-sum"' }] } } },
          { name: 'b', mcp: { host: '127.0.0.1', port: proxyB.port, path: '/mcp' } },
        ],
      },
      { policies: { mcpAuthorization: { rules: ['mcp.tool.name == "get-sum" || mcp.tool.name == "echo"'] } } },
    );
    try {
      const { client, transport } = await connectClient(gw.mcpUrl);
      const names = (await client.listTools()).tools.map((t) => t.name).sort();
      assert.deepEqual(names, ['a_echo', 'b_echo', 'b_get-sum']);
      // The HTTP 400 carrying the JSON-RPC error (DECIDED 3) surfaces in the SDK client as a transport error with the body.
      await assert.rejects(client.callTool({ name: 'a_get-sum', arguments: { a: 1, b: 2 } }), /"code":-32602,"message":"Unknown tool: a_get-sum"/);
      const sum = await client.callTool({ name: 'b_get-sum', arguments: { a: 1, b: 2 } });
      assert.match(JSON.stringify(sum.content), /3/);
      await transport.terminateSession();
      await client.close();
    } finally {
      await gw.stop();
    }
  });

  it('rejects per-target policies that cannot act on target requests, naming the path', async () => {
    await assert.rejects(
      startMcpGateway({ targets: [{ name: 'a', mcp: { host: '127.0.0.1', port: proxyA.port }, policies: { cors: { allowOrigins: ['*'] } } }] }),
      /targets\[0\]\.policies/,
    );
  });
});

describe('mcp backend, backendAuth on OpenAPI tool calls', () => {
  let petstore: Petstore;
  before(async () => {
    petstore = await startPetstore();
  });
  after(async () => {
    await petstore.close();
  });

  it('signs every tool call with the route backendAuth key, where the operation\'s security scheme puts it (ADR 0175)', async () => {
    const gw = await startMcpGateway(
      { targets: [{ name: 'pets', openapi: { host: '127.0.0.1', port: petstore.port, path: '/v2', schema: { file: PETSTORE_JSON } } }] },
      { policies: { backendAuth: { key: 'petstore-key' } } },
    );
    try {
      const { client, transport } = await connectClient(gw.mcpUrl);
      const r = await client.callTool({ name: 'getPetById', arguments: { path: { petId: 1 } } });
      assert.notEqual(r.isError, true, JSON.stringify(r));
      const last = petstore.received.at(-1)!;
      assert.equal(last.url, '/v2/pet/1');
      // getPetById's `security` is the `api_key` scheme: an `apiKey` in the `api_key` header.
      assert.equal(last.headers.api_key, 'petstore-key');
      assert.equal(last.headers.authorization, undefined);
      await transport.terminateSession();
      await client.close();
    } finally {
      await gw.stop();
    }
  });
});
