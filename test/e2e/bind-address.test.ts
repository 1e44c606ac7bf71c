// `binds[].address` (issue 14 item 10): a bind can listen on loopback only, so an example or a local setup is not
// reachable from the network; without it a bind listens on every interface, as before.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { networkInterfaces } from 'node:os';
import { after, before, describe, it } from 'node:test';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';

const lan = Object.values(networkInterfaces())
  .flat()
  .find((i) => i && i.family === 'IPv4' && !i.internal)?.address;

function get(host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host, port, path: '/x', headers: { connection: 'close' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('binds[].address', () => {
  let upstream: TestUpstream;
  let gw: RunningGateway;
  let local: number;
  let open: number;
  before(async () => {
    upstream = await startUpstream();
    [local, open] = [await freePort(), await freePort()];
    const routes = [{ backends: [{ host: `127.0.0.1:${upstream.port}` }] }];
    gw = await startGateway({
      binds: [
        { port: local, address: '127.0.0.1', listeners: [{ routes }] },
        { port: open, listeners: [{ routes }] },
      ],
    });
  });
  after(async () => {
    await gw?.stop();
    await upstream?.close();
  });

  it('a loopback address answers on 127.0.0.1', async () => {
    assert.equal(await get('127.0.0.1', local), 200);
    assert.ok(gw.logs.some((l) => l.includes('bind listening') && l.includes('127.0.0.1')));
  });

  it('and not on the machine’s network address; a bind without address does', { skip: lan === undefined && 'no non-loopback IPv4 interface' }, async () => {
    await assert.rejects(get(lan!, local), /ECONNREFUSED/);
    assert.equal(await get(lan!, open), 200);
  });

  it('an address that is not the machine’s fails the start, naming the port', async () => {
    const port = await freePort();
    await assert.rejects(startGateway({ binds: [{ port, address: '192.0.2.1', listeners: [] }] }), new RegExp(`port ${port}.*EADDRNOTAVAIL`));
  });
});
