// DNS-rebinding protection of the MCP front (ADR 0010): browser requests (those with an Origin header) must come
// from the request's own origin, on a loopback connection by a loopback name, unless `allowedOrigins` or the route's
// `cors` policy lists the origin; refused ones get 403 with a JSON-RPC error. Requests without Origin pass.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { networkInterfaces } from 'node:os';
import { after, before, describe, it } from 'node:test';
import { INIT, connectClient, fixtureStdio, startMcpGateway } from './harness.ts';
import type { McpGateway } from './harness.ts';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** A raw HTTP request (node:http lets us set Host, as a rebound browser page or the conformance suite does). */
function send(address: string, port: number, method: string, path: string, headers: Record<string, string>, body?: string, readAll = true): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: address, port, method, path, headers: { connection: 'close', ...headers } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      const done = (): void => resolve({ status: res.statusCode!, headers: res.headers, text });
      if (!readAll) {
        done();
        res.destroy();
        return;
      }
      res.on('data', (c: string) => (text += c));
      res.on('end', done);
    });
    req.on('error', reject);
    req.end(body);
  });
}

const post = (gw: McpGateway, headers: Record<string, string>, address = '127.0.0.1'): Promise<Answer> =>
  send(address, gw.port, 'POST', '/mcp', { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, INIT());

function assertForbidden(a: Answer, reason: RegExp): void {
  assert.equal(a.status, 403, a.text);
  assert.match(String(a.headers['content-type']), /application\/json/);
  const body = JSON.parse(a.text) as { jsonrpc: string; id: unknown; error: { code: number; message: string } };
  assert.equal(body.jsonrpc, '2.0');
  assert.equal(body.id, null);
  assert.equal(body.error.code, -32000);
  assert.match(body.error.message, reason);
}

describe('mcp DNS-rebinding protection: defaults', () => {
  let gw: McpGateway;
  let host: string;
  before(async () => {
    gw = await startMcpGateway({ targets: [fixtureStdio()] });
    host = `127.0.0.1:${gw.port}`;
  });
  after(() => gw?.stop());

  it('refuses a rebound name with 403 (what the conformance scenario sends), accepts the loopback origin', async () => {
    assertForbidden(await post(gw, { host: 'evil.example.com', origin: 'http://evil.example.com' }), /Origin http:\/\/evil\.example\.com is not allowed .*DNS rebinding/);
    assertForbidden(await post(gw, { host: `evil.example.com:${gw.port}`, origin: `http://evil.example.com:${gw.port}` }), /DNS rebinding/);
    for (const name of ['127.0.0.1', 'localhost']) {
      const ok = await post(gw, { host: `${name}:${gw.port}`, origin: `http://${name}:${gw.port}` });
      assert.equal(ok.status, 200, ok.text);
      assert.ok(ok.headers['mcp-session-id']);
    }
    assert.ok(gw.logs.some((l) => l.includes('"mcp.originRefused":"rebinding"')), 'the access log says why');
  });

  it('lets requests without Origin through, whatever the Host (non-browser clients, local proxies)', async () => {
    const ok = await post(gw, { host: 'mcp.example.com' });
    assert.equal(ok.status, 200, ok.text);
    const { client, transport } = await connectClient(gw.mcpUrl);
    assert.ok((await client.listTools()).tools.length > 0, 'the SDK client sends no Origin');
    await transport.terminateSession();
    await client.close();
  });

  it('refuses other origins, `null` and malformed ones', async () => {
    assertForbidden(await post(gw, { host, origin: `http://localhost:${gw.port}` }), /another origin than the Host/);
    assertForbidden(await post(gw, { host, origin: 'http://127.0.0.1:1' }), /another origin than the Host/);
    assertForbidden(await post(gw, { host, origin: 'https://app.example.com' }), /another origin than the Host/);
    assertForbidden(await post(gw, { host, origin: 'null' }), /not a scheme:\/\/host\[:port\] origin/);
  });

  it('checks every method and both transports before anything else (no session state leaks)', async () => {
    const evil = { host: 'evil.example.com', origin: 'http://evil.example.com' };
    assertForbidden(await send('127.0.0.1', gw.port, 'GET', '/mcp', { ...evil, accept: 'text/event-stream', 'mcp-session-id': 'whatever' }), /DNS rebinding/);
    assertForbidden(await send('127.0.0.1', gw.port, 'DELETE', '/mcp', { ...evil, 'mcp-session-id': 'whatever' }), /DNS rebinding/);
    assertForbidden(await send('127.0.0.1', gw.port, 'OPTIONS', '/mcp', evil), /DNS rebinding/);
    assertForbidden(await send('127.0.0.1', gw.port, 'GET', '/sse', { ...evil, accept: 'text/event-stream' }), /DNS rebinding/);
    assertForbidden(await send('127.0.0.1', gw.port, 'POST', '/sse?sessionId=x', { ...evil, 'content-type': 'application/json' }, INIT()), /DNS rebinding/);
    // The legacy stream opens for its own origin.
    const legacy = await send('127.0.0.1', gw.port, 'GET', '/sse', { host, origin: `http://${host}`, accept: 'text/event-stream' }, undefined, false);
    assert.equal(legacy.status, 200);
  });

  const lan = Object.values(networkInterfaces())
    .flat()
    .find((i) => i && i.family === 'IPv4' && !i.internal)?.address;
  it('accepts a same-origin request by any name on a non-loopback connection', { skip: lan === undefined && 'no non-loopback IPv4 interface' }, async () => {
    const ok = await post(gw, { host: `mcp.internal:${gw.port}`, origin: `http://mcp.internal:${gw.port}` }, lan);
    assert.equal(ok.status, 200, ok.text);
    assertForbidden(await post(gw, { host: `mcp.internal:${gw.port}`, origin: 'http://evil.example.com' }, lan), /another origin/);
  });
});

describe('mcp DNS-rebinding protection: the route’s cors policy', () => {
  let gw: McpGateway;
  before(async () => {
    gw = await startMcpGateway(
      { targets: [fixtureStdio()] },
      { policies: { cors: { allowOrigins: ['https://app.example.com'], allowMethods: ['GET', 'POST', 'DELETE'], allowHeaders: ['*'], exposeHeaders: ['mcp-session-id'] } } },
    );
  });
  after(() => gw?.stop());

  it('accepts the origins the cors policy allows, refuses the others', async () => {
    const host = `127.0.0.1:${gw.port}`;
    const ok = await post(gw, { host, origin: 'https://app.example.com' });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.headers['access-control-allow-origin'], 'https://app.example.com');
    assert.equal(ok.headers['access-control-expose-headers'], 'mcp-session-id');
    assertForbidden(await post(gw, { host, origin: 'https://other.example.com' }), /another origin than the Host/);
    // The preflight is the cors policy's; the browser's POST follows only for an allowed origin.
    const preflight = await send('127.0.0.1', gw.port, 'OPTIONS', '/mcp', { host, origin: 'https://app.example.com', 'access-control-request-method': 'POST' });
    assert.equal(preflight.status, 200);
    assert.equal(preflight.headers['access-control-allow-origin'], 'https://app.example.com');
  });
});

describe('mcp DNS-rebinding protection: allowedOrigins', () => {
  let gw: McpGateway;
  before(async () => {
    gw = await startMcpGateway({ targets: [fixtureStdio()], allowedOrigins: ['https://*.example.com', 'http://localhost:6274'] });
  });
  after(() => gw?.stop());

  it('accepts exactly the listed origins (globs allowed), same-origin only when listed', async () => {
    const host = `127.0.0.1:${gw.port}`;
    for (const origin of ['https://app.example.com', 'https://b.example.com', 'http://localhost:6274']) {
      const ok = await post(gw, { host, origin });
      assert.equal(ok.status, 200, `${origin}: ${ok.text}`);
    }
    assertForbidden(await post(gw, { host, origin: 'https://example.org' }), /not in allowedOrigins/);
    assertForbidden(await post(gw, { host, origin: `http://${host}` }), /not in allowedOrigins/);
    assert.equal((await post(gw, { host })).status, 200, 'no Origin still passes');
  });
});

describe('mcp DNS-rebinding protection: a wildcard cors policy does not lift it (issue 14 item 10)', () => {
  let gw: McpGateway;
  before(async () => {
    gw = await startMcpGateway(
      { targets: [fixtureStdio()] },
      { policies: { cors: { allowOrigins: ['*', 'https://listed.example.com'], allowHeaders: ['*'], exposeHeaders: ['mcp-session-id'] } } },
    );
  });
  after(() => gw?.stop());

  it('still refuses foreign and rebound origins, while the explicitly listed one and same-origin pass', async () => {
    const host = `127.0.0.1:${gw.port}`;
    // What a page on any site sends when it calls the gateway on localhost from the victim's browser.
    assertForbidden(await post(gw, { host, origin: 'https://evil.example.com' }), /another origin than the Host/);
    // A rebound name: same-origin to the browser, but not a loopback name on a loopback connection.
    assertForbidden(await post(gw, { host: `evil.example.com:${gw.port}`, origin: `http://evil.example.com:${gw.port}` }), /DNS rebinding/);
    const listed = await post(gw, { host, origin: 'https://listed.example.com' });
    assert.equal(listed.status, 200, listed.text);
    assert.equal(listed.headers['access-control-allow-origin'], 'https://listed.example.com');
    const same = await post(gw, { host, origin: `http://${host}` });
    assert.equal(same.status, 200, same.text);
  });
});
