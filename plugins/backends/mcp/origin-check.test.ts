// The Origin check of the MCP front (ADR 0010), rule by rule, on hand-made exchanges.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Exchange } from 'switchyard/sdk';
import { CORS_ALLOWED_ORIGIN } from '../../lib/cors/allowed-origin.ts';
import { OriginGuard, isLoopbackName, parseOrigin } from './origin-check.ts';

function exchange(host: string, origin: string | undefined, localAddress = '127.0.0.1', cors?: string): Exchange {
  const headers: Record<string, string> = { host };
  if (origin !== undefined) headers.origin = origin;
  const hostname = host.startsWith('[') ? host.slice(1, host.indexOf(']')) : host.replace(/:\d+$/, '');
  const fields: string[] = [];
  return {
    req: { headers, socket: { localAddress } },
    headers,
    hostname: hostname.toLowerCase(),
    get: (key: { name: string }) => (key.name === CORS_ALLOWED_ORIGIN.name ? cors : undefined),
    logField: (name: string) => void fields.push(name),
  } as unknown as Exchange;
}

describe('mcp origin check', () => {
  const guard = new OriginGuard(undefined);

  it('lets requests without Origin through (non-browser clients), whatever the Host', () => {
    assert.equal(guard.verdict(exchange('evil.example.com', undefined)), undefined);
    assert.equal(guard.verdict(exchange('127.0.0.1:3000', undefined)), undefined);
  });

  it('accepts a same-origin request on a loopback name', () => {
    for (const [host, origin] of [
      ['127.0.0.1:3000', 'http://127.0.0.1:3000'],
      ['localhost:3000', 'http://localhost:3000'],
      ['LOCALHOST:3000', 'http://localhost:3000/'],
      ['[::1]:3000', 'http://[::1]:3000'],
      ['app.localhost', 'http://app.localhost'],
      ['localhost:443', 'https://localhost'],
    ]) {
      assert.equal(guard.verdict(exchange(host!, origin, '::1')), undefined, `${host} ${origin}`);
    }
  });

  it('refuses a rebound name on a loopback connection (the conformance scenario), accepts it elsewhere', () => {
    assert.equal(guard.verdict(exchange('evil.example.com', 'http://evil.example.com')), 'rebinding');
    assert.equal(guard.verdict(exchange('evil.example.com:3000', 'http://evil.example.com:3000', '::ffff:127.0.0.1')), 'rebinding');
    // A gateway reached over its LAN address by its real name: same-origin, not loopback.
    assert.equal(guard.verdict(exchange('mcp.internal:3000', 'http://mcp.internal:3000', '10.0.0.5')), undefined);
  });

  it('refuses cross-origin requests and malformed origins', () => {
    assert.equal(guard.verdict(exchange('127.0.0.1:3000', 'http://localhost:3000')), 'cross-origin');
    assert.equal(guard.verdict(exchange('127.0.0.1:3000', 'http://127.0.0.1:9999')), 'cross-origin');
    assert.equal(guard.verdict(exchange('127.0.0.1:3000', 'https://app.example.com')), 'cross-origin');
    assert.equal(guard.verdict(exchange('mcp.example.com:8443', 'https://mcp.example.com', '10.0.0.5')), 'cross-origin');
    // A Host without port means the default port of the origin's scheme (TLS may end in front of the gateway).
    assert.equal(guard.verdict(exchange('mcp.example.com', 'https://mcp.example.com', '10.0.0.5')), undefined);
    assert.equal(guard.verdict(exchange('127.0.0.1:3000', 'null')), 'malformed');
    assert.equal(guard.verdict(exchange('127.0.0.1:3000', 'http://127.0.0.1:3000/path')), 'malformed');
  });

  it('accepts an origin the route’s cors policy allowed', () => {
    assert.equal(guard.verdict(exchange('127.0.0.1:3000', 'https://app.example.com', '127.0.0.1', 'https://app.example.com')), undefined);
    assert.equal(guard.verdict(exchange('127.0.0.1:3000', 'https://other.example.com', '127.0.0.1', 'https://app.example.com')), 'cross-origin');
  });

  it('with allowedOrigins: exactly the listed origins (globs, any scheme), same-origin included only when listed', () => {
    const listed = new OriginGuard(['https://*.example.com', 'http://localhost:6274', 'vscode-webview://abc']);
    assert.equal(listed.verdict(exchange('127.0.0.1:3000', 'https://app.example.com')), undefined);
    assert.equal(listed.verdict(exchange('127.0.0.1:3000', 'https://app.example.com:443')), undefined);
    assert.equal(listed.verdict(exchange('127.0.0.1:3000', 'http://app.example.com')), 'not-allowed', 'scheme must match');
    assert.equal(listed.verdict(exchange('127.0.0.1:3000', 'https://example.org')), 'not-allowed');
    assert.equal(listed.verdict(exchange('127.0.0.1:3000', 'http://localhost:6274')), undefined);
    assert.equal(listed.verdict(exchange('127.0.0.1:3000', 'VSCODE-WEBVIEW://abc')), undefined);
    assert.equal(listed.verdict(exchange('127.0.0.1:3000', 'http://127.0.0.1:3000')), 'not-allowed', 'the list is complete');
    assert.equal(listed.verdict(exchange('evil.example.com', undefined)), undefined, 'no Origin still passes');
    const any = new OriginGuard(['*']);
    assert.equal(any.verdict(exchange('evil.example.com', 'http://evil.example.com')), undefined);
    assert.equal(any.verdict(exchange('127.0.0.1', 'null')), undefined);
  });

  it('answers a refusal with 403 and a JSON-RPC error', () => {
    const reply = guard.check(exchange('evil.example.com', 'http://evil.example.com'))!;
    assert.equal(reply.status, 403);
    const body = JSON.parse(String(reply.body));
    assert.equal(body.jsonrpc, '2.0');
    assert.equal(body.id, null);
    assert.equal(body.error.code, -32000);
    assert.match(body.error.message, /^Forbidden: Origin http:\/\/evil\.example\.com is not allowed .*DNS rebinding/);
  });

  it('parses origins and loopback names', () => {
    assert.deepEqual(parseOrigin('HTTPS://Example.COM'), { scheme: 'https', host: 'example.com', port: '443' });
    assert.deepEqual(parseOrigin('http://[::1]:08080'), { scheme: 'http', host: '::1', port: '8080' });
    assert.equal(parseOrigin('null'), undefined);
    for (const h of ['localhost', 'a.b.localhost', '127.1.2.3', '::1', '[::1]', '::ffff:127.0.0.1', 'localhost.']) assert.ok(isLoopbackName(h), h);
    for (const h of ['localhost.example.com', '10.0.0.1', '128.0.0.1', 'example.com', '::2']) assert.ok(!isLoopbackName(h), h);
  });
});
