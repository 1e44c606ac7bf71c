import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { definePolicy } from 'switchyard/sdk';
import { fullPreset } from '../../plugins/presets/full.ts';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';

const logged: string[] = [];

/** Declares it needs the body: its hook reads `ex.body` synchronously, which only works if the kernel read it first. */
const bodySize = definePolicy<Record<string, never>>({
  key: 'testBodySize',
  description: 'Test: copies the body length into a header.',
  schema: { type: 'object', description: 'No settings.', additionalProperties: false },
  attach: ['routePolicies', 'backendPolicies'],
  phase: 'mutate',
  needs: { body: 'buffer' },
  compile: () => ({
    onRequest(ex) {
      ex.headers['x-body-size'] = String(ex.body?.length ?? 'none');
    },
  }),
});

/** Records onLog calls, to prove backend-level log hooks run. */
const logProbe = definePolicy<{ label: string }>({
  key: 'testLogProbe',
  description: 'Test: records each finished request.',
  schema: { type: 'object', description: 'Label.', properties: { label: { type: 'string', description: 'Label.' } }, required: ['label'], additionalProperties: false },
  attach: ['routePolicies', 'backendPolicies'],
  phase: 'dispatch',
  compile: (config) => ({
    onLog(_ex, status) {
      logged.push(`${config.label}:${status}`);
    },
  }),
});

describe('kernel hooks: needs.body and log hooks', () => {
  let gw: RunningGateway;
  let port: number;
  let upstream: TestUpstream;
  before(async () => {
    port = await freePort();
    upstream = await startUpstream();
    gw = await startGateway(
      {
        binds: [
          {
            port,
            listeners: [
              {
                routes: [
                  { name: 'route-level', matches: [{ path: { pathPrefix: '/route' } }], policies: { testBodySize: {} }, backends: [{ host: `127.0.0.1:${upstream.port}` }] },
                  {
                    name: 'backend-level',
                    matches: [{ path: { pathPrefix: '/backend' } }],
                    policies: { testLogProbe: { label: 'route' } },
                    backends: [{ host: `127.0.0.1:${upstream.port}`, policies: { testBodySize: {}, testLogProbe: { label: 'backend' } } }],
                  },
                ],
              },
            ],
          },
        ],
      },
      { preset: [...fullPreset, bodySize, logProbe] },
    );
  });
  after(async () => {
    await gw.stop();
    await upstream.close();
  });

  it('a route policy that needs the body sees it, and the upstream still receives it', async () => {
    const res = await request(`${gw.url(port)}/route`, { method: 'POST', body: 'twelve bytes' });
    await res.body.text();
    const got = upstream.received.at(-1)!;
    assert.equal(got.headers['x-body-size'], '12');
    assert.equal(got.body.toString(), 'twelve bytes');
  });

  it('a body over the buffer limit is refused with 413 when a policy needs it', async () => {
    const res = await request(`${gw.url(port)}/route`, { method: 'POST', body: Buffer.alloc(3 * 1024 * 1024) });
    await res.body.text();
    assert.equal(res.statusCode, 413);
  });

  it('backend-level policies get the body too, and both backend and route log hooks run', async () => {
    logged.length = 0;
    const res = await request(`${gw.url(port)}/backend`, { method: 'PUT', body: 'abc' });
    await res.body.text();
    assert.equal(upstream.received.at(-1)!.headers['x-body-size'], '3');
    for (let i = 0; i < 50 && logged.length < 2; i++) await sleep(10);
    assert.deepEqual(logged.sort(), ['backend:200', 'route:200']);
  });
});

/** Holds a resource whose close never ends: a store whose server took the connection and stopped answering. */
const hungResource = definePolicy<Record<string, never>>({
  key: 'testHungResource',
  description: 'Test: a shared resource whose dispose never settles.',
  schema: { type: 'object', description: 'No settings.', additionalProperties: false },
  attach: ['routePolicies'],
  phase: 'mutate',
  compile: (_config, ctx) => {
    ctx.resources.get('test:hung', () => ({}), () => new Promise<void>(() => undefined));
    return {};
  },
});

describe('kernel: a stop with a resource that never closes', () => {
  it('the stop ends by the drain deadline (at least 1 s after the drain) with a warning', async () => {
    const port = await freePort();
    const gw = await startGateway(
      { config: { drainTimeout: '1s' }, binds: [{ port, listeners: [{ routes: [{ policies: { testHungResource: {}, directResponse: { status: 200, body: 'ok' } } }] }] }] },
      { preset: [...fullPreset, hungResource] },
    );
    const started = Date.now();
    const stopped = await Promise.race([gw.stop().then(() => true), sleep(5000).then(() => false)]);
    assert.ok(stopped, 'the stop never ended');
    assert.ok(Date.now() - started < 2500, `the stop took ${Date.now() - started} ms`);
    assert.ok(gw.logs.some((l) => l.includes('still closing at the drain deadline')), gw.logs.join('\n'));
    assert.ok(gw.logs.some((l) => l.includes('switchyard stopped')), gw.logs.join('\n'));
  });
});
