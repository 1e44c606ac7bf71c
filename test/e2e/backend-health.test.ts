// Healthy backends (issue 11 item 3): passive outlier detection per backend, ejection with backoff, max ejection
// percent, retry sent to a different backend, ejections on /metrics and in the logs, named backends carrying the
// settings, and two `ai` backends on an LLM route failing over.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { request } from 'undici';
import { parse, stringify } from 'yaml';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { aiPreset, startMock } from '../ai/harness.ts';
import type { Mock } from '../ai/harness.ts';
import { sleep, waitFor } from './proxy-support.ts';

describe('backend health', () => {
  let gw: RunningGateway;
  let port: number;
  let good: TestUpstream;
  let bad: TestUpstream;
  let badStatus = 500;
  let probed: TestUpstream;
  let silent: TestUpstream;
  let probeStatus = 200;
  /** A port nobody listens on: connections are refused. */
  let dead: number;

  before(async () => {
    port = await freePort();
    dead = await freePort();
    good = await startUpstream((req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('good');
    });
    bad = await startUpstream((req, res) => {
      res.writeHead(badStatus, { 'content-type': 'text/plain' });
      res.end('bad');
    });
    silent = await startUpstream(() => undefined);
    probed = await startUpstream((req, res) => {
      res.writeHead(req.url === '/healthz' ? probeStatus : 200, { 'content-type': 'text/plain' });
      res.end('probed');
    });
    const route = (name: string, policies: Record<string, unknown>, backends: Record<string, unknown>[]) => ({
      name,
      matches: [{ path: { pathPrefix: `/${name}` } }],
      policies,
      backends,
    });
    const pair = (first: number, second = good.port) => [{ host: `127.0.0.1:${first}` }, { host: `127.0.0.1:${second}` }];
    gw = await startGateway({
      config: { logging: { format: 'json', level: 'info' } },
      backends: [
        { name: 'dead-one', host: `127.0.0.1:${dead}`, policies: { outlierDetection: { consecutiveGatewayFailure: 1, baseEjectionTime: '30s' } } },
        { name: 'good-one', host: `127.0.0.1:${good.port}` },
      ],
      binds: [
        {
          port,
          listeners: [
            {
              routes: [
                route('eject-dead', { outlierDetection: { consecutiveGatewayFailure: 2, baseEjectionTime: '30s' } }, pair(dead)),
                route('retry-other', { retry: { attempts: 2, codes: [] } }, pair(dead)),
                route('retry-5xx', { retry: { attempts: 1, codes: [503] } }, pair(bad.port)),
                route('eject-5xx', { outlierDetection: { consecutive5xx: 3, baseEjectionTime: '1500ms' } }, pair(bad.port)),
                route('max-percent', { outlierDetection: { consecutive5xx: 2, baseEjectionTime: '30s', maxEjectionPercent: 50 } }, pair(bad.port, bad.port)),
                route('named', {}, [{ backend: 'dead-one' }, { backend: 'good-one' }]),
                route('slow-backend', { timeout: { requestTimeout: '300ms' }, outlierDetection: { consecutiveGatewayFailure: 1, baseEjectionTime: '30s' } }, pair(silent.port, silent.port)),
                route('slow-upload', { timeout: { requestTimeout: '300ms' }, outlierDetection: { consecutiveGatewayFailure: 1, baseEjectionTime: '30s', maxEjectionPercent: 100 } }, pair(good.port, good.port)),
                route('active', { healthCheck: { path: '/healthz', interval: '100ms', timeout: '500ms', unhealthyThreshold: 2, healthyThreshold: 1 } }, pair(probed.port)),
              ],
            },
          ],
        },
      ],
    });
  });
  after(async () => {
    await gw?.stop();
    await good?.close();
    await bad?.close();
    await probed?.close();
    await silent?.close();
  });

  const call = async (path: string) => {
    const res = await request(`${gw.url(port)}${path}`);
    return { status: res.statusCode, text: await res.body.text() };
  };
  const callMany = async (path: string, n: number) => {
    const statuses: number[] = [];
    for (let i = 0; i < n; i++) statuses.push((await call(path)).status);
    return statuses;
  };
  const hits = (u: TestUpstream, prefix: string) => u.received.filter((r) => r.url.startsWith(prefix)).length;
  const metrics = async () => (await request(`${gw.statsUrl}/metrics`)).body.text();

  it('ejects a backend that refuses connections: after the first ejection no request fails', async () => {
    const statuses = await callMany('/eject-dead', 60);
    const failures = statuses.filter((s) => s !== 200).length;
    // Each failure hit the dead backend; it is ejected after 2 in a row, so at most 2 requests fail.
    assert.ok(failures <= 2, `failures: ${failures}`);
    const lastFailure = statuses.lastIndexOf(503);
    assert.ok(lastFailure < 30, `a failure after the ejection at ${lastFailure}`);
    assert.ok(gw.logs.some((l) => l.includes('backend ejected') && l.includes('eject-dead')), 'a warn line names the ejection');
    assert.match(await metrics(), /switchyard_backend_ejections_total\{[^}]*route="eject-dead"[^}]*\} 1/);
  });

  it('sends a retry to the other backend: no request fails', async () => {
    const before = hits(good, '/retry-other');
    const statuses = await callMany('/retry-other', 30);
    assert.deepEqual(statuses.filter((s) => s !== 200), []);
    assert.equal(hits(good, '/retry-other') - before, 30, 'each request reached the good backend exactly once');
  });

  it('sends a retry on a listed status to the other backend', async () => {
    badStatus = 503;
    try {
      const statuses = await callMany('/retry-5xx', 30);
      assert.deepEqual(statuses.filter((s) => s !== 200), []);
      const retried = good.received.filter((r) => r.url.startsWith('/retry-5xx') && r.headers['x-retry-attempt'] === '1').length;
      assert.equal(retried, hits(bad, '/retry-5xx'), 'every request the bad backend failed was retried on the good one');
      assert.ok(hits(bad, '/retry-5xx') > 0);
    } finally {
      badStatus = 500;
    }
  });

  it('a route deadline that runs out while the client is still uploading says nothing about the backend', async () => {
    // The client sends 1 KiB of a declared 200 KiB (streamed upstream as it comes) and stops: the gateway answers 504
    // at the route deadline. Twice: each would have ejected one of the two backends.
    for (let i = 0; i < 2; i++) {
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1', () => socket.write(`POST /slow-upload HTTP/1.1\r\nHost: x\r\nContent-Length: 204800\r\n\r\n${'a'.repeat(1024)}`));
        let data = '';
        socket.on('data', (c: Buffer) => {
          data += c.toString('latin1');
          if (data.includes('\r\n\r\n')) socket.destroy();
        });
        socket.on('close', () => resolve(data));
        socket.on('error', reject);
      });
      assert.match(answer, /^HTTP\/1\.1 504/);
    }
    await new Promise((r) => setTimeout(r, 200));
    assert.ok(!gw.logs.some((l) => l.includes('backend ejected') && l.includes('slow-upload')), 'the slow client ejected a backend');
    assert.deepEqual(await callMany('/slow-upload', 4), [200, 200, 200, 200]);
    // A backend that does not answer a request the client sent whole is still too slow: it is ejected.
    assert.equal((await call('/slow-backend')).status, 504);
    await waitFor(() => gw.logs.some((l) => l.includes('backend ejected') && l.includes('slow-backend')), 2000, 'the silent backend to be ejected');
  });

  it('ejects a 5xx backend after N consecutive 5xx and returns it after the ejection time', async () => {
    const started = performance.now();
    const statuses = await callMany('/eject-5xx', 20);
    assert.ok(performance.now() - started < 1500, 'the requests ran within one ejection time');
    assert.equal(hits(bad, '/eject-5xx'), 3, 'three 5xx in a row, then ejected');
    assert.equal(statuses.filter((s) => s === 500).length, 3);
    badStatus = 200;
    try {
      await sleep(1600);
      await callMany('/eject-5xx', 40);
      assert.ok(hits(bad, '/eject-5xx') > 3, 'back in rotation after the ejection time');
      assert.ok(gw.logs.some((l) => l.includes('backend returned') && l.includes('eject-5xx')));
    } finally {
      badStatus = 500;
    }
  });

  it('maxEjectionPercent keeps a share in rotation when every backend fails', async () => {
    const statuses = await callMany('/max-percent', 40);
    // Both answer 500: one is ejected, the other stays (50% of 2), so requests still reach a backend.
    assert.deepEqual([...new Set(statuses)], [500]);
    assert.match(await metrics(), /switchyard_backend_ejections_total\{[^}]*route="max-percent"[^}]*\} 1\n/);
  });

  it('active health checks take a backend out of rotation and back, probing only the configured path and host', async () => {
    await sleep(250);
    await callMany('/active', 20);
    assert.ok(hits(probed, '/active') > 0, 'in rotation while its probe passes');
    probeStatus = 503;
    await sleep(400);
    const before = hits(probed, '/active');
    assert.deepEqual([...new Set(await callMany('/active', 20))], [200]);
    assert.equal(hits(probed, '/active'), before, 'no request reached the failing backend');
    assert.ok(gw.logs.some((l) => l.includes('failed its health check')));
    assert.match(await metrics(), /switchyard_backend_ejections_total\{[^}]*route="active",reason="healthCheck"\} 1/);
    probeStatus = 200;
    await sleep(400);
    await callMany('/active', 20);
    assert.ok(hits(probed, '/active') > before, 'back in rotation once the probe passes');
    // Probes: GET /healthz only, each to the backend's own address.
    for (const u of [probed, good]) {
      const probes = u.received.filter((r) => r.headers['user-agent'] === 'switchyard-health-check');
      assert.ok(probes.length >= 3);
      for (const p of probes) {
        assert.equal(p.method, 'GET');
        assert.equal(p.url, '/healthz');
        assert.equal(p.headers.host, `127.0.0.1:${u.port}`);
      }
    }
    assert.equal(bad.received.filter((r) => r.url === '/healthz').length, 0, 'backends of other routes are never probed');
  });

  it('takes the settings from a named backend\'s policies', async () => {
    const statuses = await callMany('/named', 40);
    assert.ok(statuses.filter((s) => s !== 200).length <= 1, `statuses: ${statuses.join(',')}`);
    assert.match(await metrics(), /switchyard_backend_ejections_total\{[^}]*backend="dead-one"[^}]*route="named"[^}]*\} 1/);
  });
});

describe('ai backends fail over', () => {
  let mock: Mock;
  let gw: RunningGateway;
  let base: string;
  let failing: TestUpstream;

  before(async () => {
    mock = await startMock();
    failing = await startUpstream((req, res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'boom', type: 'server_error' } }));
    });
    const port = await freePort();
    const dead = await freePort();
    base = `http://127.0.0.1:${port}`;
    const ai = (name: string, hostPort: string) => ({ ai: { name, provider: { openAI: {} }, hostOverride: hostPort } });
    gw = await startGateway(
      {
        binds: [
          {
            port,
            listeners: [
              {
                routes: [
                  {
                    name: 'llm-refused',
                    matches: [{ path: { pathPrefix: '/refused' } }],
                    policies: { retry: { attempts: 1, codes: [500] } },
                    backends: [{ ...ai('down', `127.0.0.1:${dead}`), weight: 1000 }, ai('up', mock.hostPort)],
                  },
                  {
                    name: 'llm-500',
                    matches: [{ path: { pathPrefix: '/five' } }],
                    policies: { retry: { attempts: 1, codes: [500] } },
                    backends: [{ ...ai('fails', `127.0.0.1:${failing.port}`), weight: 1000 }, ai('works', mock.hostPort)],
                  },
                ],
              },
            ],
          },
        ],
      },
      { preset: aiPreset },
    );
  });
  after(async () => {
    await gw?.stop();
    await failing?.close();
    await mock?.stop();
  });

  for (const prefix of ['refused', 'five']) {
    it(`the client gets one good answer when the first backend ${prefix === 'five' ? 'answers 500' : 'refuses connections'}`, async () => {
      const client = new OpenAI({ baseURL: `${base}/${prefix}/v1`, apiKey: 'client-key', maxRetries: 0 });
      for (let i = 0; i < 3; i++) {
        const res = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }] });
        assert.equal(res.choices[0]!.message.content, 'Hello from the mock!');
      }
      if (prefix === 'five') assert.ok(failing.received.length >= 1, 'the failing backend was tried first');
    });
  }
});

describe('backend health across reloads', () => {
  let gw: RunningGateway;
  let port: number;
  let good: TestUpstream;

  const config = (deadPort: number, extraRoute: boolean) => ({
    binds: [
      {
        port,
        listeners: [
          {
            routes: [
              {
                name: 'r',
                matches: [{ path: { pathPrefix: '/r' } }],
                policies: { outlierDetection: { consecutiveGatewayFailure: 1, baseEjectionTime: '60s' } },
                backends: [{ host: `127.0.0.1:${deadPort}` }, { host: `127.0.0.1:${good.port}` }],
              },
              ...(extraRoute ? [{ name: 'extra', matches: [{ path: { pathPrefix: '/extra' } }], policies: { directResponse: { status: 204 } } }] : []),
            ],
          },
        ],
      },
    ],
  });
  const statuses = async (n: number) => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) {
      const res = await request(`${gw.url(port)}/r`);
      await res.body.dump();
      out.push(res.statusCode);
    }
    return out;
  };

  before(async () => {
    port = await freePort();
    good = await startUpstream();
  });
  after(async () => {
    await gw?.stop();
    await good?.close();
  });

  it('keeps an unchanged backend ejected across a reload, and starts a changed one afresh', async () => {
    const dead = await freePort();
    gw = await startGateway(config(dead, false));
    const first = await statuses(30);
    assert.equal(first.filter((s) => s !== 200).length, 1, 'one failure, then ejected');
    const fileText = readFileSync(gw.file, 'utf8');
    const withStatic = (c: Record<string, unknown>) => stringify({ ...c, config: (parse(fileText) as { config: unknown }).config });
    assert.equal(await gw.gateway.reload(withStatic(config(dead, true))), true);
    assert.deepEqual([...new Set(await statuses(30))], [200], 'still ejected after the reload');
    const otherDead = await freePort();
    assert.equal(await gw.gateway.reload(withStatic(config(otherDead, true))), true);
    assert.equal((await statuses(30)).filter((s) => s !== 200).length, 1, 'a changed backend starts with a clean slate');
    // Health state lives in shared cells that are never freed (ADR 0047): one that comes back is zeroed.
    assert.equal(await gw.gateway.reload(withStatic(config(dead, true))), true);
    assert.equal((await statuses(30)).filter((s) => s !== 200).length, 1, 'a backend config that comes back starts afresh too');
  });

  it('routes of the same name keep their own health, by rank among that name, across a reload that inserts a route above (ADR 0173)', async () => {
    await gw?.stop();
    const dead = await freePort();
    const twin = (prefix: string) => ({
      name: 'twin',
      matches: [{ path: { pathPrefix: prefix } }],
      policies: { outlierDetection: { consecutiveGatewayFailure: 1, baseEjectionTime: '60s' } },
      backends: [{ host: `127.0.0.1:${dead}` }, { host: `127.0.0.1:${good.port}` }],
    });
    const twins = (above: boolean) => ({
      binds: [{ port, listeners: [{ routes: [...(above ? [{ name: 'above', matches: [{ path: { pathPrefix: '/above' } }], policies: { directResponse: { status: 204 } } }] : []), twin('/a'), twin('/b')] }] }],
    });
    const failures = async (path: string) => {
      let n = 0;
      for (let i = 0; i < 30; i++) {
        const res = await request(`${gw.url(port)}${path}`);
        await res.body.dump();
        if (res.statusCode !== 200) n++;
      }
      return n;
    };
    gw = await startGateway(twins(false));
    assert.equal(await failures('/a'), 1, 'the first twin ejects its dead backend after one failure');
    assert.equal(await failures('/b'), 1, "the second twin learns of it by its own failure, not from the first's state");
    const fileText = readFileSync(gw.file, 'utf8');
    assert.equal(await gw.gateway.reload(stringify({ ...twins(true), config: (parse(fileText) as { config: unknown }).config })), true);
    assert.equal(await failures('/a'), 0, 'still ejected on the first twin after a route was inserted above');
    assert.equal(await failures('/b'), 0, 'and on the second');
  });
});
