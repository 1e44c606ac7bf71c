// remoteRateLimit against the real Envoy rate limit service (github.com/envoyproxy/ratelimit, Go) backed by a real
// Redis. The service is built with the Go toolchain on first use and cached outside the repository
// (~/.cache/switchyard/envoy-ratelimit/<version>/); `SWITCHYARD_RATELIMIT_BIN` points at a prebuilt binary instead.
// Without Go, the module proxy or redis-server the whole suite is skipped with the reason.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import type { Plugin } from 'switchyard/sdk';
import remoteRateLimit from '../../plugins/policies/remote-rate-limit/plugin.ts';
import { fullPreset } from '../../plugins/presets/full.ts';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import OpenAI from 'openai';
import { startMock } from '../ai/harness.ts';
import type { Mock } from '../ai/harness.ts';

/** envoyproxy/ratelimit publishes no semver tags after v1.4.0; this is its main branch of 2026-01-22. */
const RATELIMIT_PACKAGE = 'github.com/envoyproxy/ratelimit/src/service_cmd';
const RATELIMIT_VERSION = 'v1.4.1-0.20260122083618-3fb702589d36';
/** A cold build (module download and compile) took about a minute here; give up well before the test runner does. */
const BUILD_TIMEOUT_MS = 240_000;
const CACHE_DIR = join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'switchyard', 'envoy-ratelimit', RATELIMIT_VERSION);

function which(name: string, extra: string[] = []): string | undefined {
  for (const dir of [...(process.env.PATH ?? '').split(delimiter), ...extra]) {
    if (!dir) continue;
    const file = join(dir, name);
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not here
    }
  }
  return undefined;
}

function run(file: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<{ ok: boolean; output: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { env, timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      const output = `${stdout}${stderr}`.trim();
      if (!err) return resolve({ ok: true, output });
      const why = (err as { killed?: boolean }).killed ? `timed out after ${timeoutMs / 1000}s` : err.message.split('\n')[0]!;
      // One line, so the skip reason shows whole in the test report.
      resolve({ ok: false, output: [why, ...output.split('\n').slice(-6)].join(' | ') });
    });
  });
}

/** The service binary, built once and cached, or why it cannot be had. */
async function locateRatelimit(): Promise<{ bin: string } | { skip: string }> {
  const given = process.env.SWITCHYARD_RATELIMIT_BIN;
  if (given) return existsSync(given) ? { bin: given } : { skip: `SWITCHYARD_RATELIMIT_BIN=${given} does not exist` };
  const bin = join(CACHE_DIR, 'service_cmd');
  if (existsSync(bin)) return { bin };
  const go = which('go', ['/usr/local/go/bin', '/usr/lib/go/bin']);
  if (!go) return { skip: 'the Go toolchain is not installed, so envoyproxy/ratelimit cannot be built (set SWITCHYARD_RATELIMIT_BIN to use a prebuilt one)' };
  mkdirSync(join(CACHE_DIR, '..'), { recursive: true });
  const staging = mkdtempSync(`${CACHE_DIR}.build-`);
  try {
    // GOTOOLCHAIN=local: never download another Go toolchain; GOFLAGS=-mod=mod: ignore any vendor directory.
    const env = { ...process.env, GOBIN: staging, GOFLAGS: '-mod=mod', GOTOOLCHAIN: 'local', CGO_ENABLED: '0' };
    const built = await run(go, ['install', `${RATELIMIT_PACKAGE}@${RATELIMIT_VERSION}`], env, BUILD_TIMEOUT_MS);
    if (!built.ok) return { skip: `building envoyproxy/ratelimit ${RATELIMIT_VERSION} failed (Go module proxy unreachable?): ${built.output}` };
    // Atomic publish, so a concurrent or interrupted build never leaves half a binary in the cache.
    mkdirSync(CACHE_DIR, { recursive: true });
    renameSync(join(staging, 'service_cmd'), bin);
    return { bin };
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

const located = await locateRatelimit();
const redisServer = which('redis-server', ['/usr/bin', '/usr/sbin', '/usr/local/bin']);
const skip =
  'skip' in located ? located.skip : redisServer ? false : 'redis-server is not installed (Debian: apt-get install -y redis-server)';
if (skip) console.log(`# remoteRateLimit against envoyproxy/ratelimit skipped: ${skip}`);

function preset(...extra: Plugin[]): Plugin[] {
  const base = fullPreset as readonly Plugin[];
  return [...base, ...extra.filter((p) => !base.some((b) => b.key === p.key))];
}

function waitForPort(port: number, deadline: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const attempt = () => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve();
      });
      socket.once('error', () => {
        socket.destroy();
        if (Date.now() > deadline) reject(new Error(`nothing listened on 127.0.0.1:${port} in time`));
        else setTimeout(attempt, 50);
      });
    };
    attempt();
  });
}

async function waitForHealth(port: number, deadline: number, logs: () => string): Promise<void> {
  for (;;) {
    try {
      const res = await request(`http://127.0.0.1:${port}/healthcheck`);
      const text = await res.body.text();
      if (res.statusCode === 200) return;
      if (Date.now() > deadline) throw new Error(`healthcheck answered ${res.statusCode} ${text}`);
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`envoyproxy/ratelimit did not become healthy: ${(err as Error).message}\n${logs()}`);
    }
    await sleep(100);
  }
}

/** Stop a child we started (by its own handle, never by name) and wait for it to exit. */
async function stopChild(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
  await exited;
  clearTimeout(timer);
}

const DOMAIN = 'switchyard-e2e';
const SERVICE_CONFIG = `domain: ${DOMAIN}
descriptors:
  - key: user
    rate_limit:
      unit: hour
      requests_per_unit: 3
  - key: path
    value: /strict
    rate_limit:
      unit: day
      requests_per_unit: 1
  - key: user
    value: vip
    rate_limit:
      unlimited: true
  - key: team
    rate_limit:
      unit: hour
      requests_per_unit: 20
`;

interface Result {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  reachedUpstream: boolean;
}

describe('remoteRateLimit against envoyproxy/ratelimit + Redis', { skip }, () => {
  let gw: RunningGateway;
  let port: number;
  let upstream: TestUpstream;
  let redis: ChildProcess | undefined;
  let service: ChildProcess | undefined;
  let serviceLogs = '';
  let grpcPort: number;
  let mock: Mock | undefined;
  const run = `r${Date.now().toString(36)}`; // descriptor values unique to this run

  before(
    async () => {
      const bin = (located as { bin: string }).bin;
      const dir = mkdtempSync(join(tmpdir(), 'switchyard-rls-'));
      mkdirSync(join(dir, 'runtime', 'ratelimit', 'config'), { recursive: true });
      writeFileSync(join(dir, 'runtime', 'ratelimit', 'config', 'switchyard.yaml'), SERVICE_CONFIG);
      const redisPort = await freePort();
      redis = spawn(redisServer!, ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
      await waitForPort(redisPort, Date.now() + 10_000);
      const [httpPort, debugPort] = [await freePort(), await freePort()];
      grpcPort = await freePort();
      service = spawn(bin, [], {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: {
          PATH: process.env.PATH,
          USE_STATSD: 'false',
          LOG_LEVEL: 'warn',
          REDIS_SOCKET_TYPE: 'tcp',
          REDIS_URL: `127.0.0.1:${redisPort}`,
          RUNTIME_ROOT: join(dir, 'runtime'),
          RUNTIME_SUBDIRECTORY: 'ratelimit',
          RUNTIME_WATCH_ROOT: 'false',
          RUNTIME_IGNOREDOTFILES: 'true',
          HOST: '127.0.0.1',
          PORT: String(httpPort),
          GRPC_HOST: '127.0.0.1',
          GRPC_PORT: String(grpcPort),
          DEBUG_HOST: '127.0.0.1',
          DEBUG_PORT: String(debugPort),
          // The service's own RateLimit-* headers, passed through by the gateway as response_headers_to_add.
          LIMIT_RESPONSE_HEADERS_ENABLED: 'true',
        },
      });
      const keep = (chunk: Buffer) => {
        serviceLogs = (serviceLogs + chunk.toString()).slice(-8000);
      };
      service.stdout!.on('data', keep);
      service.stderr!.on('data', keep);
      await waitForHealth(httpPort, Date.now() + 20_000, () => serviceLogs);

      port = await freePort();
      upstream = await startUpstream();
      mock = await startMock();
      const route = (name: string, policy: Record<string, unknown>) => ({
        name,
        matches: [{ path: { pathPrefix: `/${name}` } }],
        policies: { remoteRateLimit: { host: `127.0.0.1:${grpcPort}`, domain: DOMAIN, ...policy } },
        backends: [{ host: `127.0.0.1:${upstream.port}` }],
      });
      const routes = [
        route('users', { descriptors: [{ entries: [{ key: 'user', value: 'request.headers["x-user"]' }] }] }),
        route('paths', { descriptors: [{ entries: [{ key: 'path', value: '"/" + request.path.split("/")[2]' }] }] }),
        route('closed', { timeout: '500ms', descriptors: [{ entries: [{ key: 'user', value: `"${run}-closed"` }] }] }),
        route('open', { timeout: '500ms', failureMode: 'failOpen', descriptors: [{ entries: [{ key: 'user', value: `"${run}-open"` }] }] }),
        {
          ...route('llm', { descriptors: [{ type: 'tokens', entries: [{ key: 'team', value: `"${run}-team"` }] }] }),
          backends: [{ ai: { name: 'llm', provider: { openAI: {} }, hostOverride: mock.hostPort } }],
        },
      ];
      gw = await startGateway({ binds: [{ port, listeners: [{ routes }] }] }, { preset: preset(remoteRateLimit) });
    },
    { timeout: 60_000 },
  );
  after(async () => {
    await gw?.stop();
    await upstream?.close();
    await stopChild(service);
    await stopChild(redis);
    await mock?.stop();
  });

  async function call(path: string, headers: Record<string, string> = {}): Promise<Result> {
    const before = upstream.received.length;
    const res = await request(`${gw.url(port)}${path}`, { headers });
    const text = await res.body.text();
    return { status: res.statusCode, headers: res.headers as IncomingHttpHeaders, text, reachedUpstream: upstream.received.length > before };
  }

  it('counts per descriptor value: three requests an hour, then 429 with the service and DECIDED 10 headers', async () => {
    const user = `${run}-alice`;
    for (const remaining of ['2', '1', '0']) {
      const ok = await call('/users/x', { 'x-user': user });
      assert.equal(ok.status, 200, serviceLogs);
      assert.equal(ok.reachedUpstream, true);
      assert.equal(ok.headers['x-ratelimit-limit'], '3');
      assert.equal(ok.headers['x-ratelimit-remaining'], remaining);
      assert.equal(ok.headers['ratelimit-limit'], '3', "the service's own headers (response_headers_to_add)");
      assert.equal(ok.headers['ratelimit-remaining'], remaining);
    }
    const denied = await call('/users/x', { 'x-user': user });
    assert.equal(denied.status, 429);
    assert.equal(denied.reachedUpstream, false);
    assert.equal(denied.headers['x-ratelimit-limit'], '3');
    assert.equal(denied.headers['x-ratelimit-remaining'], '0');
    const reset = Number(denied.headers['x-ratelimit-reset']);
    assert.ok(reset > 0 && reset <= 3600, `x-ratelimit-reset within the hour window (${reset})`);
    assert.equal(denied.headers['retry-after'], String(reset));
    assert.equal(denied.headers['ratelimit-limit'], '3');
    assert.equal(JSON.parse(denied.text).error.type, 'rate_limited');
    assert.equal((await call('/users/x', { 'x-user': `${run}-bob` })).status, 200, 'another user has its own counter');
  });

  it('honours the service configuration: values with their own limit, unlimited values, unknown keys', async () => {
    assert.equal((await call('/paths/strict')).status, 200);
    assert.equal((await call('/paths/strict')).status, 429, '`path=/strict` allows one a day');
    assert.equal((await call('/paths/other')).status, 200, 'no rule for `path=/other`');
    assert.equal((await call('/paths/other')).status, 200);
    for (let i = 0; i < 5; i++) assert.equal((await call('/users/x', { 'x-user': 'vip' })).status, 200, '`user=vip` is unlimited');
    const noUser = await call('/users/x');
    assert.equal(noUser.status, 200, 'no x-user header: the descriptor is dropped and the service is not asked');
    assert.equal(noUser.headers['x-ratelimit-limit'], undefined);
  });

  it('LLM tokens (type: tokens): hits_addend counts the prompt estimate, then the real usage; 429 once the team\'s 20 are spent', async () => {
    const client = new OpenAI({ baseURL: `${gw.url(port)}/llm/v1`, apiKey: 'sk-test', maxRetries: 0 });
    const hello = () => client.chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'hello' }] }).withResponse();
    const first = await hello();
    assert.equal(first.response.headers.get('x-ratelimit-limit'), '20', serviceLogs);
    assert.equal(first.response.headers.get('x-ratelimit-remaining'), '18', 'hits_addend 2: the estimate of "hello"');
    await sleep(300); // the usage call (hits_addend 14) is sent after the answer, fire and forget
    const second = await hello();
    assert.equal(second.response.headers.get('x-ratelimit-remaining'), '2', '16 real tokens counted for the first answer, 2 reserved');
    await sleep(300);
    const calls = (await mock!.journal()).length;
    const err = await hello().then(
      () => assert.fail('the call succeeded'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof OpenAI.RateLimitError, String(err));
    assert.equal(err.headers?.get('x-ratelimit-limit'), '20');
    assert.equal((await mock!.journal()).length, calls, 'the provider did not receive the refused request');
  });

  it('Redis down: the service fails, so failClosed answers 500 and failOpen passes', async () => {
    assert.equal((await call('/closed/x')).status, 200);
    await stopChild(redis);
    const closed = await call('/closed/x');
    assert.equal(closed.status, 500);
    assert.deepEqual(JSON.parse(closed.text), { error: { type: 'rate_limit_error', message: 'rate limit failed' } });
    const open = await call('/open/x');
    assert.equal(open.status, 200);
    assert.equal(open.reachedUpstream, true);
  });

  it('service down: failClosed answers 500, failOpen passes', async () => {
    await stopChild(service);
    assert.equal((await call('/closed/x')).status, 500);
    assert.equal((await call('/open/x')).status, 200);
  });
});
