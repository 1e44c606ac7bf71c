// `config.workers: 2` and an MCP session's idle timeout: each worker holds its own copy of a session it served. A
// client whose requests stay on one worker (a kept-alive connection) leaves the other worker's copy idle; when that
// copy times out, the session is still in use, so the id must keep working on that worker (resumed from its seal),
// not turn into 404 there. A session idle on every worker ends on every worker, as with one. A session its client
// ended stays ended on a worker that restarts afterwards. The supervisor runs in this process; the target is
// server-everything over streamable HTTP.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LogSink } from 'switchyard';
import { Supervisor } from '../../kernel/boot/supervisor.ts';
import { BIN } from '../helpers/cli.ts';
import { freePort } from '../helpers/ports.ts';
import { getFresh, twoWorkersYaml } from '../helpers/workers.ts';
import type { FreshAnswer } from '../helpers/workers.ts';
import { testTempDir } from '../helpers/temp-dir.ts';
import { startEverything } from '../mcp/harness.ts';
import type { UpstreamServer } from '../mcp/harness.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

describe('config.workers: 2, an MCP session idle on one worker and in use on the other', () => {
  const logs: string[] = [];
  let supervisor: Supervisor;
  let everything: UpstreamServer;
  let url: string;
  let next = 1;
  const body = (method: string) => JSON.stringify({ jsonrpc: '2.0', id: next++, method, params: {} });

  /** One request on a kept-alive connection of `agent` (it stays on one worker). */
  function onAgent(agent: Agent, headers: Record<string, string>, payload: string): Promise<FreshAnswer> {
    return new Promise((resolve, reject) => {
      const req = httpRequest(url, { agent, method: 'POST', headers }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text, worker: String(res.headers['x-worker']) }));
      });
      req.on('error', reject);
      req.end(payload);
    });
  }

  before(async () => {
    everything = await startEverything('streamableHttp');
    const port = await freePort();
    url = `http://127.0.0.1:${port}/mcp`;
    const file = join(testTempDir('switchyard-workers-mcp-idle-'), 'config.yaml');
    const target = { name: 'remote', mcp: { host: '127.0.0.1', port: everything.port } };
    const route = { policies: { workerProbe: { value: 'x' } }, backends: [{ mcp: { sessionIdleTimeout: '1s', targets: [target] } }] };
    writeFileSync(file, twoWorkersYaml([{ port, listeners: [{ routes: [route] }] }]));
    const sink = new LogSink((chunk) => logs.push(...chunk.split('\n').filter(Boolean)));
    supervisor = new Supervisor({ entry: BIN, config: { file }, count: 2, sink, watch: false, restartMs: { initial: 100, max: 1000 } });
    await supervisor.start();
  });

  after(async () => {
    await supervisor?.stop();
    await everything?.stop();
  });

  it('keeps the id working on the worker whose copy timed out while the client used the other', async () => {
    const init = await getFresh(url, HEADERS, JSON.stringify({ jsonrpc: '2.0', id: next++, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'idle-test', version: '1' } } }));
    assert.equal(init.status, 200, init.body);
    const session = { ...HEADERS, 'mcp-session-id': String(init.headers['mcp-session-id']), 'mcp-protocol-version': '2025-06-18' };
    assert.equal((await getFresh(url, session, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }))).status, 202);
    // Both workers hold a copy.
    const seen = new Set<string>();
    for (let i = 0; i < 40 && seen.size < 2; i++) {
      const a = await getFresh(url, session, body('tools/list'));
      assert.equal(a.status, 200, a.body);
      seen.add(a.worker);
    }
    assert.equal(seen.size, 2, 'both workers served the session');
    // 2.5 s on one kept-alive connection: the other worker's copy is idle past its 1 s and times out.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const end = Date.now() + 2_500;
      while (Date.now() < end) {
        const a = await onAgent(agent, session, body('tools/list'));
        assert.equal(a.status, 200, a.body);
        await sleep(200);
      }
    } finally {
      agent.destroy();
    }
    // The session is in use: every worker goes on serving it.
    const answers: FreshAnswer[] = [];
    for (let i = 0; i < 20; i++) answers.push(await getFresh(url, session, body('tools/list')));
    assert.equal(new Set(answers.map((a) => a.worker)).size, 2, 'both workers answered');
    assert.deepEqual(
      answers.filter((a) => a.status !== 200).map((a) => `${a.worker}: ${a.status} ${a.body}`),
      [],
    );
  });

  it('ends a session idle on every worker everywhere: its id is refused by both, as with one worker', async () => {
    const init = await getFresh(url, HEADERS, JSON.stringify({ jsonrpc: '2.0', id: next++, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'idle-test', version: '1' } } }));
    const session = { ...HEADERS, 'mcp-session-id': String(init.headers['mcp-session-id']), 'mcp-protocol-version': '2025-06-18' };
    await getFresh(url, session, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
    const seen = new Set<string>();
    for (let i = 0; i < 40 && seen.size < 2; i++) seen.add((await getFresh(url, session, body('tools/list'))).worker);
    assert.equal(seen.size, 2, 'both workers served the session');
    await sleep(2_500);
    const answers: FreshAnswer[] = [];
    for (let i = 0; i < 20; i++) answers.push(await getFresh(url, session, body('tools/list')));
    assert.equal(new Set(answers.map((a) => a.worker)).size, 2, 'both workers answered');
    assert.deepEqual(new Set(answers.map((a) => a.status)), new Set([404]));
  });

  it('refuses a session its client deleted on a worker restarted after the DELETE', async () => {
    const init = await getFresh(url, HEADERS, JSON.stringify({ jsonrpc: '2.0', id: next++, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'delete-test', version: '1' } } }));
    const session = { ...HEADERS, 'mcp-session-id': String(init.headers['mcp-session-id']), 'mcp-protocol-version': '2025-06-18' };
    await getFresh(url, session, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
    const deleted = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(url, { agent: false, method: 'DELETE', headers: session }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      });
      req.on('error', reject);
      req.end();
    });
    assert.equal(deleted, 200);
    // One worker dies and is restarted: its tombstones went with it.
    const restarts = logs.filter((l) => /worker restarted/.test(l)).length;
    await getFresh(url, { 'x-crash': '1' });
    for (let i = 0; i < 200 && logs.filter((l) => /worker restarted/.test(l)).length === restarts; i++) await sleep(50);
    assert.equal(logs.filter((l) => /worker restarted/.test(l)).length, restarts + 1, logs.join('\n'));
    const answers: FreshAnswer[] = [];
    for (let i = 0; i < 20; i++) answers.push(await getFresh(url, session, body('tools/list')));
    assert.equal(new Set(answers.map((a) => a.worker)).size, 2, 'both workers answered');
    assert.deepEqual(answers.filter((a) => a.status !== 404).map((a) => `${a.worker}: ${a.status} ${a.body.slice(0, 80)}`), []);
  });
});
