// `config.workers: 2` and state that must be the gateway's, not each worker's (ADR 0047): an active health check
// probes once per interval for the whole gateway and its verdict applies in every worker; passive outlier
// detection counts failures and ejects once for all workers; /metrics counters never go back when a worker dies
// and restarts. The supervisor runs in this process (as in workers-liveness.test.ts); upstreams are real servers.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LogSink } from 'switchyard';
import { Supervisor } from '../../kernel/boot/supervisor.ts';
import { BIN } from '../helpers/cli.ts';
import { freePort } from '../helpers/ports.ts';
import { getFresh as get, twoWorkersYaml } from '../helpers/workers.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Counter samples of a Prometheus text, by series. */
function counters(text: string): Map<string, number> {
  const out = new Map<string, number>();
  let counter = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('# TYPE ')) counter = line.endsWith(' counter');
    else if (counter && line && !line.startsWith('#')) out.set(line.slice(0, line.lastIndexOf(' ')), Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return out;
}

describe('config.workers: 2, backend health and counters for the whole gateway', () => {
  const logs: string[] = [];
  let supervisor: Supervisor;
  let port: number;
  let probed: TestUpstream;
  let good: TestUpstream;
  let bad: TestUpstream;
  let probeStatus = 200;

  before(async () => {
    port = await freePort();
    probed = await startUpstream((req, res) => {
      res.writeHead(req.url === '/healthz' ? probeStatus : 200, { 'content-type': 'text/plain' }).end('probed');
    });
    good = await startUpstream((_req, res) => void res.writeHead(200, { 'content-type': 'text/plain' }).end('good'));
    bad = await startUpstream((_req, res) => void res.writeHead(500, { 'content-type': 'text/plain' }).end('bad'));
    const route = (name: string, policies: Record<string, unknown>, backends: number[]) => ({
      name,
      matches: [{ path: { pathPrefix: `/${name}` } }],
      policies: { workerProbe: { value: 'x' }, ...policies },
      backends: backends.map((p) => ({ host: `127.0.0.1:${p}` })),
    });
    const file = join(testTempDir('switchyard-workers-health-'), 'config.yaml');
    writeFileSync(
      file,
      twoWorkersYaml([
          {
            port,
            listeners: [
              {
                routes: [
                  route('active', { healthCheck: { path: '/healthz', interval: '200ms', timeout: '2s', unhealthyThreshold: 2, healthyThreshold: 1 } }, [probed.port, good.port]),
                  route('eject', { outlierDetection: { consecutive5xx: 3, baseEjectionTime: '60s' } }, [bad.port, good.port]),
                  route('plain', {}, [good.port]),
                ],
              },
            ],
          },
        ]),
    );
    const sink = new LogSink((chunk) => logs.push(...chunk.split('\n').filter(Boolean)));
    supervisor = new Supervisor({ entry: BIN, config: { file }, count: 2, sink, watch: false, restartMs: { initial: 100, max: 1000 }, liveness: { intervalMs: 200, misses: 50 } });
    await supervisor.start();
  });

  after(async () => {
    await supervisor?.stop();
    await Promise.all([probed?.close(), good?.close(), bad?.close()]);
  });

  const probes = () => probed.received.filter((r) => r.url === '/healthz').length;
  const hits = (u: TestUpstream, prefix: string) => u.received.filter((r) => r.url.startsWith(prefix)).length;

  it('probes once per interval for the gateway, and every worker stops sending to a backend that fails it', async () => {
    await sleep(500);
    const from = probes();
    const started = performance.now();
    await sleep(3000);
    const count = probes() - from;
    const intervals = (performance.now() - started) / 200;
    // Two workers probing each would make about 2 per interval.
    assert.ok(count <= intervals * 1.15 + 1, `${count} probes in ${intervals.toFixed(1)} intervals`);
    assert.ok(count >= intervals / 3, `${count} probes in ${intervals.toFixed(1)} intervals`);
    assert.ok(probed.received.filter((r) => r.url === '/healthz').every((r) => r.headers['user-agent'] === 'switchyard-health-check'));

    const ejected = /^switchyard_backend_ejections_total\{[^}]*reason="healthCheck"[^}]*\} (\d+)$/m;
    const ejections = async () => Number(ejected.exec(await supervisor.metrics())?.[1] ?? 0);
    assert.equal(await ejections(), 0);
    probeStatus = 503;
    try {
      for (let i = 0; i < 50 && (await ejections()) === 0; i++) await sleep(100);
      const before = hits(probed, '/active');
      const answers = [];
      for (let i = 0; i < 40; i += 10) answers.push(...(await Promise.all(Array.from({ length: 10 }, () => get(`http://127.0.0.1:${port}/active`)))));
      assert.ok(answers.every((a) => a.status === 200));
      assert.equal(new Set(answers.map((a) => a.worker)).size, 2, 'both workers served');
      assert.equal(hits(probed, '/active') - before, 0, 'no worker sent a request to the backend out of rotation');
      // The workers' logs go to stderr; the summed counter shows one decision for the gateway.
      assert.equal(await ejections(), 1, 'one worker decided, once');
    } finally {
      probeStatus = 200;
    }
  });

  it('counts failures across workers and ejects once: a backend failing 3 in a row gets 3 requests, not 3 per worker', async () => {
    const answers = [];
    for (let i = 0; i < 40; i++) answers.push(await get(`http://127.0.0.1:${port}/eject`));
    assert.equal(new Set(answers.map((a) => a.worker)).size, 2, 'both workers served');
    assert.equal(hits(bad, '/eject'), 3);
    assert.equal(answers.filter((a) => a.status === 500).length, 3);
    assert.match(await supervisor.metrics(), /^switchyard_backend_ejections_total\{[^}]*route="eject"[^}]*\} 1$/m);
  });

  it("reports the workers' event loops, heaps and GC pauses, not only the supervisor's", async () => {
    const heap = (text: string) => Number(/^nodejs_heap_size_used_bytes (\d+)$/m.exec(text)?.[1]);
    const before = await supervisor.metrics();
    // A worker's loop is held 300 ms by a plugin: the gateway's worst event-loop delay shows it.
    assert.equal((await get(`http://127.0.0.1:${port}/plain`, { 'x-busy': '300' })).status, 200);
    const text = await supervisor.metrics();
    const worst = Number(/^nodejs_eventloop_delay_seconds\{quantile="1"\} ([\d.e-]+)$/m.exec(text)?.[1]);
    assert.ok(worst >= 0.2, `worst event-loop delay ${worst} s`);
    assert.equal(text.match(/^# TYPE nodejs_eventloop_delay_seconds gauge$/gm)?.length, 1);
    // Three heaps (the supervisor's and two workers'), each well over 4 MiB.
    assert.ok(heap(before) > 3 * 4 * 1024 * 1024, `heap used ${heap(before)}`);
    // GC pauses of the workers, who allocate for every request, are counted.
    assert.ok(Number(/^nodejs_gc_duration_seconds_count\{kind="minor"\} (\d+)$/m.exec(text)?.[1]) > 0);
  });

  it('keeps /metrics counters monotonic when a worker dies and restarts, with its counts up to its last ping', async () => {
    const plain = (m: Map<string, number>) => [...m].filter(([k]) => k.startsWith('switchyard_requests_total{') && k.includes('route="plain"')).reduce((n, [, v]) => n + v, 0);
    const crash = async (n: number) => {
      const restarts = logs.filter((l) => /worker restarted/.test(l)).length;
      // The probe plugin throws outside any request 200 ms later: the worker that served this dies.
      assert.equal((await get(`http://127.0.0.1:${port}/plain`, { 'x-crash': '1' })).status, 200);
      for (let i = 0; i < 100 && logs.filter((l) => /worker restarted/.test(l)).length === restarts; i++) await sleep(100);
      assert.equal(logs.filter((l) => /worker restarted/.test(l)).length, restarts + 1, `restart ${n}`);
    };
    const answers = [];
    for (let i = 0; i < 30; i++) answers.push(await get(`http://127.0.0.1:${port}/plain`));
    assert.equal(new Set(answers.map((a) => a.worker)).size, 2);
    // No scrape before the crash: the liveness pings (every 200 ms here) kept the dead worker's counts.
    await sleep(600);
    await crash(1);
    const before = counters(await supervisor.metrics());
    assert.ok(plain(before) >= 30, `plain counted ${plain(before)} of at least 30`);
    await crash(2);
    const now = counters(await supervisor.metrics());
    const back = [...before].filter(([series, v]) => (now.get(series) ?? 0) < v);
    assert.deepEqual(back, [], 'no counter went back');
    // (The crashing request itself may be lost: it was counted less than a ping before its worker died.)
    assert.ok(plain(now) >= plain(before));
  });
});
