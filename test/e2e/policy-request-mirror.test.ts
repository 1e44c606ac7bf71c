import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { rawRequest } from './proxy-support.ts';

async function until(check: () => boolean, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await sleep(10);
  }
}

describe('requestMirror', () => {
  let gw: RunningGateway;
  let port: number;
  let primary: TestUpstream;
  let mirror: TestUpstream;
  let slowMirror: TestUpstream;
  let silentMirror: TestUpstream;
  let endlessMirror: TestUpstream;
  /** What the endless mirror wrote, and how many of its answers ended (the gateway let them go). */
  const endless = { written: 0, closed: 0 };
  let deadPort: number;
  before(async () => {
    port = await freePort();
    deadPort = await freePort();
    primary = await startUpstream((_req, res, body) => res.end(`primary got ${body.length}`));
    mirror = await startUpstream((_req, res) => res.writeHead(500).end('mirror answers are ignored'));
    slowMirror = await startUpstream((_req, res) => setTimeout(() => res.end('late'), 2000));
    // Never answers: every copy sent to it stays in flight until the gateway stops.
    silentMirror = await startUpstream(() => undefined);
    // Answers with a body that never ends, written as fast as it is read.
    endlessMirror = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const block = Buffer.alloc(64 * 1024, 0x78);
      const more = (): void => {
        while (!res.destroyed && res.write(block)) endless.written += block.length;
      };
      res.on('drain', more);
      res.on('close', () => endless.closed++);
      more();
    });
    const to = [{ host: `127.0.0.1:${primary.port}` }];
    gw = await startGateway({
      backends: [{ name: 'mirror-named', host: `127.0.0.1:${mirror.port}` }],
      binds: [
        {
          port,
          listeners: [
            {
              routes: [
                {
                  name: 'all',
                  matches: [{ path: { pathPrefix: '/all' } }],
                  policies: {
                    urlRewrite: { path: { prefix: '/rewritten' } },
                    requestHeaderModifier: { set: { 'x-added': 'yes' } },
                    requestMirror: { backend: { host: `127.0.0.1:${mirror.port}` }, percentage: 1 },
                  },
                  backends: to,
                },
                {
                  name: 'authority',
                  matches: [{ path: { pathPrefix: '/authority' } }],
                  policies: { urlRewrite: { authority: { full: 'rewritten.example' } }, requestMirror: { backend: { host: `127.0.0.1:${mirror.port}` } } },
                  backends: to,
                },
                { name: 'half', matches: [{ path: { pathPrefix: '/half' } }], policies: { requestMirror: { backend: { backend: 'mirror-named' }, percentage: 0.5 } }, backends: to },
                { name: 'none', matches: [{ path: { pathPrefix: '/none' } }], policies: { requestMirror: { backend: { host: `127.0.0.1:${mirror.port}` }, percentage: 0 } }, backends: to },
                { name: 'slow', matches: [{ path: { pathPrefix: '/slow' } }], policies: { requestMirror: { backend: { host: `127.0.0.1:${slowMirror.port}` } } }, backends: to },
                { name: 'silent', matches: [{ path: { pathPrefix: '/silent' } }], policies: { requestMirror: { backend: { host: `127.0.0.1:${silentMirror.port}` } } }, backends: to },
                { name: 'endless', matches: [{ path: { pathPrefix: '/endless' } }], policies: { requestMirror: { backend: { host: `127.0.0.1:${endlessMirror.port}` } } }, backends: to },
                { name: 'dead', matches: [{ path: { pathPrefix: '/dead' } }], policies: { requestMirror: { backend: { host: `127.0.0.1:${deadPort}` } } }, backends: to },
              ],
            },
          ],
        },
      ],
    });
  });
  after(async () => {
    await gw.stop();
    await Promise.all([primary.close(), mirror.close(), slowMirror.close(), silentMirror.close(), endlessMirror.close()]);
  });

  const call = async (path: string, body?: string) => {
    const started = performance.now();
    const res = await request(`${gw.url(port)}${path}`, { method: body ? 'POST' : 'GET', body, headers: { 'x-client': 'c1' } });
    return { status: res.statusCode, text: await res.body.text(), ms: performance.now() - started };
  };

  it('the mirror gets the rewritten method, path, headers and body; its answer is discarded', async () => {
    const before = mirror.received.length;
    const r = await call('/all/items?id=3', 'hello-body');
    assert.equal(r.status, 200);
    assert.equal(r.text, 'primary got 10');
    await until(() => mirror.received.length > before);
    const copy = mirror.received.at(-1)!;
    assert.equal(copy.method, 'POST');
    assert.equal(copy.url, '/rewritten/items?id=3');
    assert.equal(copy.headers['x-client'], 'c1');
    assert.equal(copy.headers['x-added'], 'yes');
    assert.equal(copy.body.toString(), 'hello-body');
    assert.equal(primary.received.at(-1)!.body.toString(), 'hello-body', 'the primary still gets the body');
  });

  it('the mirror gets the Host the primary got: the client\'s, or the rewritten authority (ADR 0185)', async () => {
    for (const [path, host] of [['/all/h', 'app.example:8080'], ['/authority/h', 'rewritten.example']] as const) {
      const before = mirror.received.length;
      const res = await request(`${gw.url(port)}${path}`, { headers: { host: 'app.example:8080' } });
      await res.body.text();
      await until(() => mirror.received.length > before);
      assert.equal(primary.received.at(-1)!.headers.host, host, path);
      assert.equal(mirror.received.at(-1)!.headers.host, host, path);
    }
  });

  it('a request with `Expect: 100-continue` (curl, bodies over 1 KiB) is mirrored too', async () => {
    // The copy carried the client's Expect, which the HTTP client refuses: every such copy failed, silently.
    const before = mirror.received.length;
    const body = 'e'.repeat(2048);
    const answer = await rawRequest(port, `POST /all/expect HTTP/1.1\r\nHost: gw\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\nConnection: close`, body);
    assert.equal(answer.status, 200);
    await until(() => mirror.received.length > before);
    assert.equal(mirror.received.at(-1)!.body.toString(), body);
    assert.equal(mirror.received.at(-1)!.headers.expect, undefined);
  });

  it('percentage 0.5 mirrors about half; 0 mirrors none', async () => {
    const before = mirror.received.length;
    for (let i = 0; i < 200; i++) await call('/half');
    await sleep(100);
    const mirrored = mirror.received.length - before;
    assert.ok(mirrored > 60 && mirrored < 140, `mirrored ${mirrored} of 200`);
    const beforeNone = mirror.received.length;
    for (let i = 0; i < 20; i++) await call('/none');
    await sleep(50);
    assert.equal(mirror.received.length, beforeNone);
  });

  it('a slow mirror does not delay the primary', async () => {
    const r = await call('/slow', 'x');
    assert.equal(r.status, 200);
    assert.ok(r.ms < 1000, `primary took ${r.ms}ms`);
  });

  it('a silent mirror holds at most 256 copies in flight: the rest are not sent, and counted; the primary is served', async () => {
    for (let i = 0; i < 300; i++) assert.equal((await call('/silent', 'x')).status, 200);
    await until(() => silentMirror.received.length >= 256);
    await sleep(200);
    assert.equal(silentMirror.received.length, 256, 'copies that reached the silent mirror');
    const metrics = await (await request(`${gw.statsUrl}/metrics`)).body.text();
    assert.match(metrics, /^switchyard_request_mirror_dropped_total 44$/m);
  });

  it('a mirror answering without end is cut after a little, not read for the whole 30 s deadline (ADR 0168)', async () => {
    const r = await call('/endless');
    assert.equal(r.status, 200);
    await until(() => endless.closed === 1, 3000);
    assert.ok(endless.written < 8 * 1024 * 1024, `${endless.written} bytes read of the mirror's answer`);
  });

  it('an unreachable mirror does not fail the primary', async () => {
    const r = await call('/dead', 'x');
    assert.equal(r.status, 200);
    assert.equal(r.text, 'primary got 1');
  });

  it('percentage above 1 is a config error', async () => {
    await assert.rejects(
      gw.gateway.compile(`binds:\n- port: ${port}\n  listeners:\n  - routes:\n    - policies:\n        requestMirror: { backend: { host: "a:1" }, percentage: 1.5 }\n`),
      /:6:64: must be at most 1, got number 1.5/,
    );
  });
});
