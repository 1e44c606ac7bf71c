import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { oneListenerConfig, startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { RawClient, values } from './proxy-support.ts';

describe('directResponse', () => {
  let gw: RunningGateway;
  let port: number;
  before(async () => {
    port = await freePort();
    gw = await startGateway(oneListenerConfig(port, [
      { name: 'no-content', matches: [{ path: { exact: '/204' } }], policies: { directResponse: { status: 204 } } },
      { name: 'empty-no-content', matches: [{ path: { exact: '/204-empty' } }], policies: { directResponse: { status: 204, body: '' } } },
      { name: 'not-modified', matches: [{ path: { exact: '/304' } }], policies: { directResponse: { status: 304 } } },
      { name: 'hello', matches: [{ path: { exact: '/hello' } }], policies: { directResponse: { status: 200, body: 'hello' } } },
    ]));
  });
  after(async () => {
    await gw.stop();
  });

  it('204 and 304 go out without a body or Content-Length; the connection stays in step', async () => {
    // RFC 9110 §8.6: no Content-Length in a 204. `body: ''` sent `content-length: 0` with it.
    const client = new RawClient(port);
    await client.connected;
    try {
      for (const path of ['/204', '/204-empty', '/304']) {
        const answer = await client.send(`GET ${path} HTTP/1.1\r\nHost: gw`);
        assert.equal(answer.status, Number(path.slice(1, 4)));
        assert.deepEqual(values(answer, 'content-length'), [], path);
        assert.deepEqual(values(answer, 'transfer-encoding'), [], path);
      }
      const hello = await client.send('GET /hello HTTP/1.1\r\nHost: gw');
      assert.equal(hello.body, 'hello');
      assert.equal(client.unread(), '');
    } finally {
      client.destroy();
    }
  });

  it('a body with a 204 or 304 is a config error', async () => {
    for (const status of [204, 304]) {
      await assert.rejects(
        gw.gateway.compile(`binds:\n- port: ${port}\n  listeners:\n  - routes:\n    - policies:\n        directResponse: { status: ${status}, body: "hello" }\n`),
        new RegExp(`:6:\\d+: a ${status} answer has no body`),
      );
    }
  });
});
