// A third-party backend's `shapeError` that throws or leaves the reply unwritable, and its `upgrade` failing after it
// answered 101 (ADR 0166): the log names the plugin; the client gets the gateway's own error reply, or on an upgraded
// connection a close, never an HTTP answer written into the new protocol's bytes.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { startRoutesGateway } from '../helpers/gateway.ts';
import type { RoutesGateway } from '../helpers/gateway.ts';
import { testTempDir } from '../helpers/temp-dir.ts';
import { RawClient } from './proxy-support.ts';

const PLUGIN = `
import { defineBackend, GatewayError } from 'switchyard/sdk';
const schema = { type: 'object', additionalProperties: false, properties: {} };
const SWITCHED = 'HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\n\\r\\n';
export default [
  defineBackend({ key: 'acmeShapes', description: 'x', schema, compile: () => ({
    protocol: 'http',
    handle() { throw new GatewayError(503, 'unavailable', 'acme is down'); },
    shapeError(ex, reply) {
      if (ex.path.endsWith('/fine')) {
        reply.body = JSON.stringify({ acme: reply.error.message });
        return;
      }
      // Half done, then a failure: the body replaced, a header set.
      reply.headers['x-acme-shaped'] = '1';
      reply.status = 200;
      if (ex.path.endsWith('/object-body')) {
        reply.body = { acme: true };
        return;
      }
      reply.body = 'half';
      throw new Error('acme shaping exploded');
    },
  }) }),
  defineBackend({ key: 'acmeUpgrades', description: 'x', schema, compile: () => ({
    protocol: 'http',
    handle: () => ({ status: 200, headers: {}, body: 'plain' }),
    async upgrade(ex, socket) {
      if (ex.path.endsWith('/before')) throw new Error('acme upgrade failed before answering');
      socket.write(SWITCHED);
      if (ex.path.endsWith('/sync-after')) throw new Error('acme upgrade failed right after its 101');
      await new Promise((r) => setTimeout(r, 50));
      throw new Error('acme upgrade failed after its 101');
    },
  }) }),
];
`;

describe("a third-party backend's error shaping and upgrade failing late", () => {
  let gw: RoutesGateway;

  before(async () => {
    const dir = testTempDir('switchyard-acme-');
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'acme-late', version: '2.0.0', type: 'module' }));
    writeFileSync(join(dir, 'index.js'), PLUGIN);
    gw = await startRoutesGateway(
      [
        { name: 'shapes', matches: [{ path: { pathPrefix: '/shapes' } }], backends: [{ acmeShapes: {} }] },
        { name: 'upgrades', matches: [{ path: { pathPrefix: '/upgrades' } }], backends: [{ acmeUpgrades: {} }] },
      ],
      { config: { plugins: [join(dir, 'index.js')] } },
    );
  });

  after(async () => {
    await gw?.stop();
  });

  /** The log lines holding every one of `parts`, once the first one is there (the sink writes in batches). */
  const linesWith = async (...parts: string[]): Promise<string[]> => {
    const pick = (): string[] => gw.logs.filter((l) => parts.every((p) => l.includes(p)));
    for (let i = 0; i < 100 && pick().length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    return pick();
  };
  const namesPlugin = (line: string | undefined, key: string): void => {
    assert.ok(line, 'an error line was logged');
    assert.match(line, new RegExp(`plugin=${key}\\b`), line);
    assert.match(line, /package=acme-late@2\.0\.0/, line);
  };

  it("a shapeError that throws: the gateway's own error reply, unshaped; the log names the backend", async () => {
    const fine = await request(`${gw.base}/shapes/fine`);
    assert.equal(fine.statusCode, 503);
    assert.deepEqual(await fine.body.json(), { acme: 'acme is down' });
    const res = await request(`${gw.base}/shapes/throw`);
    const body = await res.body.text();
    assert.equal(res.statusCode, 503, 'the status the gateway chose, not the half-shaped one');
    assert.equal(res.headers['x-acme-shaped'], undefined);
    assert.equal(res.headers['content-type'], 'application/json');
    assert.deepEqual(JSON.parse(body), { error: { type: 'unavailable', message: 'acme is down' } });
    const [line] = await linesWith('ERROR', 'error shaping failed', 'acme shaping exploded');
    namesPlugin(line, 'acmeShapes');
  });

  it('a shapeError that leaves the reply unwritable: the same, not a crash', async () => {
    const res = await request(`${gw.base}/shapes/object-body`);
    assert.equal(res.statusCode, 503);
    assert.deepEqual(await res.body.json(), { error: { type: 'unavailable', message: 'acme is down' } });
    const [line] = await linesWith('ERROR', 'error shaping failed', 'not a reply');
    namesPlugin(line, 'acmeShapes');
    assert.equal((await request(`${gw.base}/shapes/fine`)).statusCode, 503, 'the gateway still serves');
  });

  /** Everything the client reads on an upgrade request for `path` until the gateway closes the connection. */
  const upgradeBytes = async (path: string): Promise<string> => {
    const c = new RawClient(gw.port);
    try {
      c.write(`GET ${path} HTTP/1.1\r\nHost: gw\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`);
      await c.closed();
      return c.unread();
    } finally {
      c.destroy();
    }
  };

  it("an upgrade that fails after its 101: the connection is closed, no HTTP answer written into it; the log names the backend", async () => {
    for (const [path, message] of [
      ['/upgrades/after', 'acme upgrade failed after its 101'],
      ['/upgrades/sync-after', 'acme upgrade failed right after its 101'],
    ] as const) {
      const text = await upgradeBytes(path);
      assert.match(text, /^HTTP\/1\.1 101 /, path);
      assert.equal(text.indexOf('HTTP/1.1', 1), -1, `${path}: only the backend's 101: ${JSON.stringify(text)}`);
      namesPlugin((await linesWith('ERROR', 'backend failed', message))[0], 'acmeUpgrades');
    }
    // The access log has the 101 the client got, and the failure.
    const [logged] = await linesWith('INFO', 'http.path=/upgrades/after ');
    assert.match(logged ?? '', /http\.status=101 /, logged);
    assert.match(logged ?? '', /acme upgrade failed after its 101/, logged);
    // Before it wrote anything, the failure is still answered 500 (ADR 0155).
    const text = await upgradeBytes('/upgrades/before');
    assert.match(text, /^HTTP\/1\.1 500 /, text);
    namesPlugin((await linesWith('ERROR', 'backend failed', 'failed before answering'))[0], 'acmeUpgrades');
    assert.equal((await request(`${gw.base}/upgrades/plain`)).statusCode, 200, 'the gateway still serves');
  });
});
