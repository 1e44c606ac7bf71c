// One of two backends killed under concurrent load (issue 11, the failover bench row): the killed one, never the
// live one, is ejected; after the ejection ≤ 1% of requests fail, none with a retry. The load behaves as the bench's
// autocannon does: 50 keep-alive connections, dropped with their requests in flight when a phase ends. Requests a
// client gave up on must not count against the backend they were waiting for (they did, as 502s: five of them in a
// row ejected a healthy backend, and `maxEjectionPercent` then kept the dead one in rotation).
import assert from 'node:assert/strict';
import { Agent, request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { sleep } from './proxy-support.ts';

const CONNECTIONS = 50;
/** The upstreams answer after this long, so at any moment most requests wait on them (in flight when dropped). */
const ANSWER_MS = 10;

interface Sent {
  /** Date.now() when the request was sent (log lines carry wall-clock times). */
  readonly at: number;
  /** The status, or 0 for a connection error. */
  readonly status: number;
}

/** One request on `agent`; undefined when the load was stopped while it was in flight (the client gave up). */
function send(url: string, agent: Agent, load: { stopped: boolean }): Promise<Sent | undefined> {
  const at = Date.now();
  return new Promise((resolve) => {
    const req = request(url, { agent }, (res) => {
      res.on('error', () => resolve(load.stopped ? undefined : { at, status: 0 }));
      res.on('end', () => resolve({ at, status: res.statusCode ?? 0 }));
      res.resume();
    });
    req.on('error', () => resolve(load.stopped ? undefined : { at, status: 0 }));
    req.end();
  });
}

/**
 * `CONNECTIONS` clients sending back to back until `enough(done)` (checked every 20 ms, at most 60 s: a loaded machine
 * may serve few requests a second), then dropping their connections with requests in flight (as autocannon ends a
 * run). Returns the requests that completed.
 */
async function load(url: string, enough: (done: readonly Sent[]) => boolean): Promise<Sent[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  const state = { stopped: false };
  const done: Sent[] = [];
  const client = async (): Promise<void> => {
    while (!state.stopped) {
      const r = await send(url, agent, state);
      if (r) done.push(r);
    }
  };
  const clients = Array.from({ length: CONNECTIONS }, client);
  const until = performance.now() + 60_000;
  while (!enough(done) && performance.now() < until) await sleep(20);
  state.stopped = true;
  agent.destroy();
  await Promise.all(clients);
  return done;
}

describe('one of two backends killed under load', () => {
  let gw: RunningGateway;
  let port: number;
  const ups: Record<string, [live: TestUpstream, killed: TestUpstream]> = {};
  const slow = (): Promise<TestUpstream> =>
    startUpstream((_req, res) => {
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('ok');
      }, ANSWER_MS);
    });
  const outlierDetection = { consecutiveGatewayFailure: 5, baseEjectionTime: '60s' };

  before(async () => {
    port = await freePort();
    for (const name of ['failover', 'failover-retry']) ups[name] = [await slow(), await slow()];
    const route = (name: string, policies: Record<string, unknown>) => ({
      name,
      matches: [{ path: { pathPrefix: `/${name}` } }],
      policies,
      backends: ups[name]!.map((u) => ({ host: `127.0.0.1:${u.port}` })),
    });
    gw = await startGateway({
      config: { logging: { format: 'json', level: 'info' } },
      binds: [
        {
          port,
          listeners: [
            {
              routes: [
                // Longest prefix first: `/failover` also matches `/failover-retry`.
                route('failover-retry', { outlierDetection, retry: { attempts: 1, codes: [] } }),
                route('failover', { outlierDetection }),
              ],
            },
          ],
        },
      ],
    });
  });
  after(async () => {
    await gw?.stop();
    for (const pair of Object.values(ups)) for (const u of pair) await u.close();
  });

  /** The `backend ejected` lines of a route, with their wall-clock times. */
  const ejections = (route: string) =>
    gw.logs
      .map((l) => JSON.parse(l) as { msg: string; route?: string; backend?: string; time: string })
      .filter((l) => l.msg === 'backend ejected' && l.route === route)
      .map((l) => ({ backend: l.backend!, at: Date.parse(l.time) }));

  /** Load with both up (ended by dropping the connections), then the second upstream killed under load. */
  async function killUnderLoad(route: string): Promise<{ afterKill: Sent[]; killedAt: number; live: TestUpstream; killed: TestUpstream }> {
    const [live, killed] = ups[route]!;
    const url = `${gw.url(port)}/${route}`;
    const started = Date.now();
    const both = await load(url, (done) => done.length >= 300 && Date.now() - started >= 1000);
    assert.deepEqual(both.filter((r) => r.status !== 200), [], 'no request fails while both backends are up');
    // 50 clients just gave up on their requests in flight: that says nothing about either backend.
    await sleep(200);
    assert.deepEqual(ejections(route), [], 'no backend is ejected while both are up');
    // The kill once the load runs (100 requests served); then at least 1.5 s and 400 requests sent after it.
    let killedAt = 0;
    const sent = await load(url, (done) => {
      if (killedAt === 0 && done.length >= 100) {
        killedAt = Date.now();
        void killed.close();
      }
      return killedAt > 0 && Date.now() - killedAt >= 1500 && done.filter((r) => r.at > killedAt).length >= 400;
    });
    return { afterKill: sent.filter((r) => r.at >= killedAt), killedAt, live, killed };
  }

  it('ejects the killed backend, not the live one; ≤ 1% of the requests after the ejection fail', async () => {
    const { afterKill, killed } = await killUnderLoad('failover');
    const out = ejections('failover');
    assert.deepEqual(
      out.map((e) => e.backend),
      [`127.0.0.1:${killed.port}`],
      'exactly one ejection, of the killed backend',
    );
    const after = afterKill.filter((r) => r.at > out[0]!.at);
    const failed = after.filter((r) => r.status !== 200).length;
    assert.ok(after.length >= 100, `only ${after.length} requests after the ejection`);
    assert.ok(failed <= 0.01 * after.length, `${failed} of ${after.length} requests failed after the ejection`);
  });

  it('with a retry, no request fails from the kill on', async () => {
    const { afterKill, killed, live } = await killUnderLoad('failover-retry');
    assert.deepEqual(
      ejections('failover-retry').map((e) => e.backend),
      [`127.0.0.1:${killed.port}`],
      'exactly one ejection, of the killed backend',
    );
    const failed = afterKill.filter((r) => r.status !== 200);
    assert.ok(afterKill.length >= 100, `only ${afterKill.length} requests after the kill`);
    assert.equal(failed.length, 0, `${failed.length} of ${afterKill.length} failed (statuses ${[...new Set(failed.map((r) => r.status))].join(', ')})`);
    assert.ok(live.received.length > afterKill.length, 'the live backend served them');
  });
});
