// `config.workers: 2` (ADR 0033): the real CLI with two worker threads behind one supervisor. Both workers serve
// the bind (connections spread by SO_REUSEPORT); /metrics sums them, readiness and /config_dump answer for all;
// localRateLimit is one bucket for the gateway; a JWKS is fetched once per change, not once per worker; a reload
// one worker rejects is rejected by all; a crashed worker loses only its in-flight request (connection closed or
// 502, never a hang) and is restarted; SIGTERM drains every worker.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import * as jose from 'jose';
import { Agent, fetch as undiciFetch } from 'undici';
import { stringify } from 'yaml';
import { childEnv, startCli } from '../helpers/cli-process.ts';
import type { RunningCli } from '../helpers/cli-process.ts';
import { BIN, ROOT } from '../helpers/cli.ts';
import { freePort } from '../helpers/ports.ts';
import { WORKER_PROBE as PROBE, getFresh as get } from '../helpers/workers.ts';
import type { FreshAnswer } from '../helpers/workers.ts';
import { EVERYTHING, NODE, startEverything } from '../mcp/harness.ts';
import type { UpstreamServer } from '../mcp/harness.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

const ISSUER = 'https://idp.example';

async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('config.workers: 2', () => {
  let cli: RunningCli;
  let file: string;
  let port: number;
  let stats: string;
  let readiness: string;
  let admin: string;
  let upstream: Server;
  let jwks: Server;
  let jwksFetches = 0;
  let keys: jose.JWK[] = [];
  let sign: (kid: string) => Promise<string>;
  let rotate: () => void;
  let config: (probe: Record<string, unknown>, statics?: Record<string, unknown>) => string;
  let everything: UpstreamServer;

  before(async () => {
    everything = await startEverything('streamableHttp');
    upstream = createServer((req, res) => {
      const delay = req.url!.startsWith('/slow') ? 1500 : 0;
      setTimeout(() => res.writeHead(200, { 'content-type': 'text/plain' }).end(`upstream ${req.url}`), delay);
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const upstreamPort = (upstream.address() as { port: number }).port;
    const pairs = new Map<string, { privateKey: jose.CryptoKey; jwk: jose.JWK }>();
    for (const kid of ['k1', 'k2']) {
      const { publicKey, privateKey } = await jose.generateKeyPair('ES256', { extractable: true });
      pairs.set(kid, { privateKey, jwk: { ...(await jose.exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' } });
    }
    keys = [pairs.get('k1')!.jwk];
    sign = (kid) => new jose.SignJWT({ sub: 'alice' }).setProtectedHeader({ alg: 'ES256', kid }).setIssuer(ISSUER).setAudience('orders').setExpirationTime('5m').sign(pairs.get(kid)!.privateKey);
    rotate = () => (keys = [pairs.get('k1')!.jwk, pairs.get('k2')!.jwk]);
    jwks = createServer((_req, res) => {
      jwksFetches++;
      res.writeHead(200, { 'content-type': 'application/jwk-set+json' }).end(JSON.stringify({ keys }));
    });
    await new Promise<void>((r) => jwks.listen(0, '127.0.0.1', r));
    const jwksPort = (jwks.address() as { port: number }).port;
    port = await freePort();
    const [statsPort, readinessPort, adminPort] = [await freePort(), await freePort(), await freePort()];
    stats = `http://127.0.0.1:${statsPort}`;
    readiness = `http://127.0.0.1:${readinessPort}`;
    admin = `http://127.0.0.1:${adminPort}`;
    const backend = [{ host: `127.0.0.1:${upstreamPort}` }];
    config = (probe, statics = {}) =>
      stringify({
        config: {
          workers: 2,
          plugins: [PROBE],
          statsAddr: `127.0.0.1:${statsPort}`,
          readinessAddr: `127.0.0.1:${readinessPort}`,
          adminAddr: `127.0.0.1:${adminPort}`,
          logging: { accessLog: false },
          drainTimeout: '10s',
          ...statics,
        },
        binds: [
          {
            port,
            listeners: [
              {
                routes: [
                  { name: 'limited', matches: [{ path: { pathPrefix: '/limited' } }], policies: { workerProbe: probe, localRateLimit: [{ maxTokens: 10, tokensPerFill: 1, fillInterval: '1h' }] }, backends: backend },
                  { name: 'jwt', matches: [{ path: { pathPrefix: '/jwt' } }], policies: { workerProbe: probe, jwtAuth: { mode: 'strict', issuer: ISSUER, audiences: ['orders'], jwks: { url: `http://127.0.0.1:${jwksPort}/jwks` } } }, backends: backend },
                  {
                    name: 'mcp',
                    matches: [{ path: { pathPrefix: '/mcp' } }],
                    policies: { workerProbe: probe },
                    backends: [
                      {
                        mcp: {
                          targets: [
                            { name: 'local', stdio: { cmd: NODE, args: [EVERYTHING, 'stdio'] } },
                            { name: 'remote', mcp: { host: '127.0.0.1', port: everything.port } },
                          ],
                        },
                      },
                    ],
                  },
                  { name: 'plain', policies: { workerProbe: probe }, backends: backend },
                ],
              },
            ],
          },
        ],
      });
    file = join(testTempDir('switchyard-workers-'), 'config.yaml');
    writeFileSync(file, config({ value: 'one' }));
    cli = await startCli(process.execPath, [BIN, '-f', file], { cwd: ROOT, env: childEnv(), readyMs: 90_000 });
  });

  after(async () => {
    await cli?.stop();
    // WORKERS_TEST_OUTPUT=1: the gateway's log, to see what its workers did.
    if (process.env.WORKERS_TEST_OUTPUT && cli) process.stderr.write(cli.output());
    upstream?.closeAllConnections();
    upstream?.close();
    jwks?.closeAllConnections();
    jwks?.close();
    await everything?.stop();
  });

  /** `n` requests on fresh connections; the distinct `x-worker` values that answered. */
  async function spread(path: string, n: number, headers: Record<string, string> = {}, body?: string): Promise<{ answers: FreshAnswer[]; workers: Set<string> }> {
    const answers: FreshAnswer[] = [];
    for (let i = 0; i < n; i += 10) answers.push(...(await Promise.all(Array.from({ length: Math.min(10, n - i) }, () => get(`http://127.0.0.1:${port}${path}`, headers, body)))));
    return { answers, workers: new Set(answers.map((a) => String(a.headers['x-worker']))) };
  }

  it('serves the bind from both workers; readiness, /config_dump and summed /metrics answer for the gateway', async () => {
    const { answers, workers } = await spread('/hello', 40);
    assert.ok(answers.every((a) => a.status === 200 && a.body === 'upstream /hello'));
    assert.equal(workers.size, 2, `answered by ${[...workers].join(',')}`);
    assert.equal((await get(`${readiness}/healthz/ready`)).status, 200);
    const dump = JSON.parse((await get(`${admin}/config_dump`)).body) as { workers: number; config: { binds: unknown[] } };
    assert.equal(dump.workers, 2);
    assert.equal(dump.config.binds.length, 1);
    const metrics = (await get(`${stats}/metrics`)).body;
    assert.match(metrics, /^switchyard_requests_total\{bind="\d+",listener="listener0",route="plain",status="200"\} 40$/m);
    assert.match(metrics, /^switchyard_workers 2$/m);
    assert.match(metrics, /^switchyard_workers_running 2$/m);
    assert.equal(metrics.match(/^# TYPE switchyard_requests_total counter$/gm)?.length, 1);
  });

  it('keeps localRateLimit one bucket for the whole gateway: 10 tokens allow 10 requests, whichever worker', async () => {
    const { answers, workers } = await spread('/limited', 30);
    assert.equal(workers.size, 2, 'both workers took requests');
    assert.equal(answers.filter((a) => a.status === 200).length, 10);
    assert.equal(answers.filter((a) => a.status === 429).length, 20);
  });

  it('fetches the JWKS once for both workers, and once more (not twice) when a new kid appears', async () => {
    assert.equal(jwksFetches, 1, 'one fetch at start for two workers');
    const old = await spread('/jwt', 20, { authorization: `Bearer ${await sign('k1')}` });
    assert.ok(old.answers.every((a) => a.status === 200));
    assert.equal(old.workers.size, 2);
    rotate();
    const rotated = await spread('/jwt', 20, { authorization: `Bearer ${await sign('k2')}` });
    assert.deepEqual(
      rotated.answers.map((a) => a.status),
      rotated.answers.map(() => 200),
    );
    assert.equal(rotated.workers.size, 2);
    assert.equal(jwksFetches, 2, 'the new key set was fetched by one worker and handed to the other');
  });

  it('keeps an MCP session (stdio and streamable-HTTP targets) working whichever worker gets each call', async () => {
    const servedBy: string[] = [];
    // A new connection per request: SO_REUSEPORT then hands each call to either worker.
    const fresh = async (input: string | URL, init?: RequestInit): Promise<Response> => {
      const dispatcher = new Agent();
      const res = (await undiciFetch(input, { ...(init as object), dispatcher })) as unknown as Response;
      if (init?.method === 'POST') servedBy.push(res.headers.get('x-worker') ?? `none (${res.status})`);
      return res;
    };
    const client = new Client({ name: 'workers-test', version: '1.0.0' }, { capabilities: {} });
    const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`), { fetch: fresh });
    await client.connect(transport);
    try {
      for (let i = 0; i < 6; i++) {
        for (const target of ['remote', 'local']) {
          const r = await client.callTool({ name: `${target}_echo`, arguments: { message: `${target} ${i}` } });
          assert.deepEqual(r.content, [{ type: 'text', text: `Echo: ${target} ${i}` }]);
        }
      }
      assert.equal(new Set(servedBy.filter((w) => !w.startsWith('none'))).size, 2, `calls served by ${servedBy.join(',')}`);
      // One stdio child per worker that served the session, at most.
      assert.ok((cli.output().match(/stdio target process started/g)?.length ?? 0) <= 2);
    } finally {
      await transport.terminateSession().catch(() => undefined);
      await client.close();
    }
  });

  it('refuses a deleted MCP session on every worker, not only on the one that took the DELETE', async () => {
    const fresh = async (input: string | URL, init?: RequestInit): Promise<Response> => (await undiciFetch(input, { ...(init as object), dispatcher: new Agent() })) as unknown as Response;
    const client = new Client({ name: 'workers-delete', version: '1.0.0' }, { capabilities: {} });
    const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`), { fetch: fresh });
    await client.connect(transport);
    // Both workers hold the session before it ends.
    for (let i = 0; i < 6; i++) await client.callTool({ name: 'remote_echo', arguments: { message: `m${i}` } });
    const id = transport.sessionId!;
    await transport.terminateSession();
    await client.close();
    await new Promise((r) => setTimeout(r, 100));
    const { answers, workers } = await spread('/mcp', 20, {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-session-id': id,
      'mcp-protocol-version': '2025-06-18',
    }, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }));
    assert.equal(workers.size, 2, 'both workers answered');
    assert.deepEqual(new Set(answers.map((a) => a.status)), new Set([404]), answers.map((a) => `${a.status} ${a.body}`).join('\n'));
  });

  it('rejects everywhere a reload that one worker rejects, and applies a good one to every worker', async () => {
    const threads = [...(await spread('/hello', 20)).workers].map(Number).sort((a, b) => a - b);
    writeFileSync(file, config({ value: 'two', failInThread: threads[1] }));
    await cli.waitFor(/config reload failed; keeping the last good config.*refused in thread/, 30_000);
    const kept = await spread('/hello', 20);
    assert.deepEqual(new Set(kept.answers.map((a) => a.headers['x-probe'])), new Set(['one']));
    assert.equal(kept.workers.size, 2);
    writeFileSync(file, config({ value: 'three' }));
    await cli.waitFor(/config reloaded workers=2/, 30_000);
    const now = await spread('/hello', 20);
    assert.deepEqual(new Set(now.answers.map((a) => a.headers['x-probe'])), new Set(['three']));
    assert.equal(now.workers.size, 2);
    const metrics = (await get(`${stats}/metrics`)).body;
    assert.match(metrics, /^switchyard_config_reloads_total\{result="invalid"\} 1$/m);
    assert.match(metrics, /^switchyard_config_reloads_total\{result="applied"\} 1$/m);
  });

  it('a crashed worker loses only its in-flight request (closed, not hung) and is restarted', async () => {
    const started = Date.now();
    const crashed = await get(`http://127.0.0.1:${port}/slow`, { 'x-crash': '1' }).then(
      (a) => `status ${a.status}`,
      (err: NodeJS.ErrnoException) => `error ${err.code ?? err.message}`,
    );
    assert.ok(Date.now() - started < 10_000, 'the in-flight request ended promptly');
    assert.match(crashed, /^(error (ECONNRESET|socket hang up)|status 502)$/);
    await cli.waitFor(/worker exited; restarting it/, 10_000);
    await until('readiness after the restart', async () => ((await get(`${readiness}/healthz/ready`)).status === 200 ? true : undefined), 60_000);
    const after = await spread('/hello', 30);
    assert.ok(after.answers.every((a) => a.status === 200 && a.headers['x-probe'] === 'three'), 'the restarted worker runs the last good config');
    assert.equal(after.workers.size, 2);
    assert.match((await get(`${stats}/metrics`)).body, /^switchyard_worker_restarts_total 1$/m);
    // The restarted worker serves the generation the others do (the start and one applied reload), not 1 again.
    assert.match((await get(`${stats}/metrics`)).body, /^switchyard_config_generation 2$/m);
    assert.equal((JSON.parse((await get(`${admin}/config_dump`)).body) as { generation: number }).generation, 2);
  });

  it("a reload's logging settings reach the supervisor's own lines, and a restart-only change is said", async () => {
    writeFileSync(file, config({ value: 'three' }, { logging: { accessLog: false, format: 'json' }, headerTimeout: '59s' }));
    await cli.waitFor(/\{[^\n]*"msg":"config reloaded","workers":2/, 30_000);
    assert.match(cli.output(), /\{[^\n]*"level":"warn"[^\n]*take effect after a restart/);
  });

  it('drains every worker on SIGTERM: an in-flight request completes, then the process exits 0', async () => {
    const inflight = spread('/slow', 6);
    await new Promise((r) => setTimeout(r, 400));
    const code = await cli.stop();
    const { answers } = await inflight;
    assert.ok(answers.every((a) => a.status === 200 && a.body === 'upstream /slow'));
    assert.equal(code, 0);
    assert.match(cli.output(), /switchyard stopped/);
  });
});
