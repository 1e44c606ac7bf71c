// stdio MCP targets under `config.workers: 2` (ADR 0056): the supervisor thread runs every worker's children, so
// `maxProcesses` is one budget for the whole gateway (the third child is refused whichever worker asks), and the
// children of a worker that dies are killed and reaped: no zombie process-table entry is left behind.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LogSink } from 'switchyard';
import { Supervisor } from '../../kernel/boot/supervisor.ts';
import { BIN } from '../helpers/cli.ts';
import { freePort } from '../helpers/ports.ts';
import { getFresh, twoWorkersYaml } from '../helpers/workers.ts';
import { FIXTURE, INIT, NODE } from '../mcp/harness.ts';
import { cmdline, descendants, processState } from '../mcp/support/procs.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

interface Answer {
  status: number;
  worker: string;
  session: string | undefined;
  body: { error?: { code: number; message: string } };
}

/** An MCP `initialize` on a connection of its own (SO_REUSEPORT may hand it to either worker). */
function initialize(url: string, id: number): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const body = INIT(id);
    const req = httpRequest(url, { method: 'POST', agent: false, headers: { connection: 'close', 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'content-length': Buffer.byteLength(body) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => {
        const json = text.startsWith('{') ? text : (text.split('\n').find((l) => l.startsWith('data: {'))?.slice(6) ?? '{}');
        resolve({ status: res.statusCode!, worker: String(res.headers['x-worker']), session: res.headers['mcp-session-id'] as string | undefined, body: JSON.parse(json) as Answer['body'] });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('config.workers: 2 with stdio MCP targets', () => {
  const limitedMarker = randomUUID();
  const marker = randomUUID();
  const logs: string[] = [];
  let supervisor: Supervisor;
  let port: number;

  /** The fixture servers (the program, not its `sh` wrapper) of a marker now running under the gateway. */
  const children = (m: string): number[] => descendants(process.pid).filter((pid) => cmdline(pid).startsWith(NODE) && cmdline(pid).includes(`--marker=${m}`));
  const restarts = (): number => logs.filter((l) => l.includes('worker exited; restarting it')).length;

  before(async () => {
    port = await freePort();
    const target = (m: string, extra: Record<string, unknown> = {}) => ({ mcp: { targets: [{ name: 'fixture', stdio: { cmd: NODE, args: [FIXTURE, `--marker=${m}`], ...extra } }] } });
    const file = join(testTempDir('switchyard-workers-stdio-'), 'config.yaml');
    writeFileSync(
      file,
      twoWorkersYaml([
        {
          port,
          listeners: [
            {
              routes: [
                { name: 'limited', matches: [{ path: { pathPrefix: '/limited' } }], policies: { workerProbe: { value: 'x' } }, backends: [target(limitedMarker, { maxProcesses: 2 })] },
                { name: 'mcp', matches: [{ path: { pathPrefix: '/mcp' } }], policies: { workerProbe: { value: 'x' } }, backends: [target(marker)] },
              ],
            },
          ],
        },
      ]),
    );
    // In this process, with short liveness pings (a stuck worker is terminated within about a second).
    const sink = new LogSink((chunk) => logs.push(...chunk.split('\n').filter(Boolean)));
    supervisor = new Supervisor({ entry: BIN, config: { file }, count: 2, sink, watch: false, liveness: { intervalMs: 200, misses: 5 }, restartMs: { initial: 100, max: 1000 } });
    await supervisor.start();
  });

  after(async () => {
    await supervisor?.stop();
    if (process.env.WORKERS_TEST_OUTPUT) process.stderr.write(logs.join('\n'));
  });

  /** Sessions until each worker has started at least one child: which pid belongs to which worker. */
  async function childrenOnBothWorkers(): Promise<Map<number, string>> {
    const owner = new Map<number, string>();
    for (let id = 1; id <= 40 && new Set(owner.values()).size < 2; id++) {
      const before = new Set(children(marker));
      const a = await initialize(`http://127.0.0.1:${port}/mcp`, id);
      assert.equal(a.status, 200, JSON.stringify(a.body));
      for (const pid of children(marker)) if (!before.has(pid)) owner.set(pid, a.worker);
    }
    assert.equal(new Set(owner.values()).size, 2, 'both workers started children');
    return owner;
  }

  /** After a worker died: its children are gone from the process table (killed and reaped), the other's run on. */
  async function assertReaped(owner: Map<number, string>): Promise<void> {
    const workers = new Set(owner.values());
    const states = (): Map<string, (string | undefined)[]> => {
      const by = new Map<string, (string | undefined)[]>([...workers].map((w) => [w, []]));
      for (const [pid, w] of owner) by.get(w)!.push(processState(pid));
      return by;
    };
    const settled = (): boolean => [...states().values()].some((s) => s.every((state) => state === undefined));
    const deadline = Date.now() + 15_000;
    while (!settled() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const final = states();
    const gone = [...final].filter(([, s]) => s.every((state) => state === undefined)).map(([w]) => w);
    const alive = [...final].filter(([, s]) => s.every((state) => state !== undefined && state !== 'Z')).map(([w]) => w);
    assert.equal(gone.length, 1, `one worker's children are gone entirely (not zombies): ${JSON.stringify([...final])}`);
    assert.equal(alive.length, 1, `the other worker's children still run: ${JSON.stringify([...final])}`);
  }

  async function untilRestarted(before: number): Promise<void> {
    const deadline = Date.now() + 30_000;
    while (restarts() === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.ok(restarts() > before, 'a worker died');
  }

  it('counts maxProcesses for the whole gateway: with 2 workers and maxProcesses: 2 the third child is refused', async () => {
    const answers: Answer[] = [];
    // Until both workers have answered (and at least 6 tries): each worker alone would allow 2.
    for (let id = 1; id <= 40 && (answers.length < 6 || new Set(answers.map((a) => a.worker)).size < 2); id++) answers.push(await initialize(`http://127.0.0.1:${port}/limited`, id));
    assert.equal(new Set(answers.map((a) => a.worker)).size, 2, `answered by ${answers.map((a) => a.worker).join(',')}`);
    const ok = answers.filter((a) => a.status === 200);
    assert.equal(ok.length, 2, JSON.stringify(answers));
    assert.ok(ok.every((a) => a.session));
    for (const refused of answers.filter((a) => a.status !== 200)) {
      assert.equal(refused.status, 503);
      assert.equal(refused.body.error?.code, -32000);
      assert.match(refused.body.error!.message, /^target `fixture` \(stdio: .*\) is at its limit of 2 running processes \(maxProcesses\)/);
    }
    const running = children(limitedMarker);
    assert.equal(running.length, 2);
    // The session key the supervisor drew for its workers (in their environment) never reaches a child (ADR 0134).
    for (const pid of running) {
      const environ = readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0');
      assert.ok(environ.some((v) => v.startsWith('PATH=')), 'the gateway environment is inherited');
      assert.ok(!environ.some((v) => v.startsWith('SESSION_KEY=')), `child ${pid} has the session key`);
    }
    // Ending a session frees its slot for the gateway, whichever worker asks next. A DELETE ends the children of the
    // worker that gets it (docs/deploy.md "Workers"): sent on fresh connections until the owner got one.
    const del = (): Promise<number> =>
      new Promise<number>((resolve, reject) =>
        httpRequest(`http://127.0.0.1:${port}/limited`, { method: 'DELETE', agent: false, headers: { 'mcp-session-id': ok[0]!.session! } }, (res) => {
          res.resume();
          resolve(res.statusCode!);
        })
          .on('error', reject)
          .end(),
      );
    const deadline = Date.now() + 30_000;
    // Until one child is gone from the process table (exited and reaped: its slot is given back as it is reaped).
    while (running.every((pid) => processState(pid) !== undefined) && Date.now() < deadline) {
      await del();
      for (let t = 0; t < 20 && running.every((pid) => processState(pid) !== undefined); t++) await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal((await initialize(`http://127.0.0.1:${port}/limited`, 100)).status, 200);
    assert.equal((await initialize(`http://127.0.0.1:${port}/limited`, 101)).status, 503);
  });

  it('kills and reaps the children of a worker that crashes: none is left as a zombie', async () => {
    const owner = await childrenOnBothWorkers();
    const before = restarts();
    // An uncaught exception 200 ms after this request kills the worker that got it.
    await getFresh(`http://127.0.0.1:${port}/mcp`, { 'x-crash': '1' }).catch(() => undefined);
    await untilRestarted(before);
    await assertReaped(owner);
  });

  it('kills and reaps the children of a stuck worker the supervisor terminates', async () => {
    const owner = await childrenOnBothWorkers();
    const before = restarts();
    // An endless loop in the worker that gets this request: the liveness pings find it and terminate the thread
    // (no JavaScript of it runs again, so only the supervisor can stop and reap its children).
    await getFresh(`http://127.0.0.1:${port}/mcp`, { 'x-hang': '1' }).catch(() => undefined);
    await untilRestarted(before);
    await assertReaped(owner);
  });
});
