// `response.*` in the access log's CEL (`config.logging.fields.add`, `config.logging.filter`; BEHAVIOUR.md §10):
// the status sent to the client and the response headers as sent, sensitive ones redacted; a filter on the status
// logs only failures. Outside logging, `response` is an error (an authorization rule reading it counts as false).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';

type Line = Record<string, unknown>;

describe('access log: response.* in CEL', () => {
  let gw: RunningGateway;
  let base: string;
  let upstream: TestUpstream;

  const lines = (): Line[] => gw.logs.map((l) => JSON.parse(l) as Line).filter((l) => l.msg === 'request');
  async function lineFor(path: string): Promise<Line | undefined> {
    for (let i = 0; i < 50; i++) {
      const line = lines().find((l) => l['http.path'] === path);
      if (line) return line;
      await new Promise((r) => setTimeout(r, 20));
    }
    return undefined;
  }

  before(async () => {
    upstream = await startUpstream((req, res) => {
      const status = Number(/^\/up\/(\d+)/.exec(req.url ?? '')?.[1] ?? 200);
      res.writeHead(status, { 'content-type': 'text/plain', 'x-upstream': 'v1', 'set-cookie': ['session=s3cr3t; HttpOnly'], 'x-auth-token': 'tok-123' }).end('body');
    });
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    gw = await startGateway({
      config: {
        logging: {
          format: 'json',
          filter: 'response.code >= 400 || request.path.startsWith("/up/keep")',
          fields: {
            add: {
              status: 'response.code',
              upstream: 'response.headers["x-upstream"]',
              type: 'response.headers["content-type"]',
              cookie: 'response.headers["set-cookie"]',
              token: 'response.headers["x-auth-token"]',
              slow: 'response.code >= 500 ? "server" : "client"',
            },
          },
        },
      },
      binds: [
        {
          port,
          listeners: [
            {
              routes: [
                { name: 'local', matches: [{ path: { pathPrefix: '/local' } }], policies: { directResponse: { status: 503, body: 'down' } } },
                { name: 'up', matches: [{ path: { pathPrefix: '/up' } }], backends: [{ host: `127.0.0.1:${upstream.port}` }] },
              ],
            },
          ],
        },
      ],
    });
  });

  after(async () => {
    await gw?.stop();
    await upstream?.close();
  });

  it("fields.add reads the status and the upstream's response headers; credentials in them are redacted", async () => {
    const r = await fetch(`${base}/up/404`);
    assert.equal(r.status, 404);
    await r.text();
    const line = (await lineFor('/up/404'))!;
    assert.ok(line, gw.logs.join('\n'));
    assert.equal(line.status, 404);
    assert.equal(line.upstream, 'v1');
    assert.equal(line.type, 'text/plain');
    assert.equal(line.cookie, '<redacted>');
    assert.equal(line.token, '<redacted>');
    assert.equal(line.slow, 'client');
    assert.ok(!gw.logs.some((l) => l.includes('s3cr3t') || l.includes('tok-123')), 'no response credential in any line');
  });

  it('filter on response.code: a 200 is not logged, a 5xx local reply is (its own headers visible)', async () => {
    const ok = await fetch(`${base}/up/200`);
    assert.equal(ok.status, 200);
    await ok.text();
    const kept = await fetch(`${base}/up/keep`);
    await kept.text();
    assert.ok(await lineFor('/up/keep'), 'a later request is logged, so the batch was written');
    assert.equal(await lineFor('/up/200'), undefined);

    const local = await fetch(`${base}/local`);
    assert.equal(local.status, 503);
    await local.text();
    const line = (await lineFor('/local'))!;
    assert.equal(line.status, 503);
    assert.equal(line.slow, 'server');
    assert.equal(line.upstream, undefined, 'a missing header leaves the field out');
  });
});
