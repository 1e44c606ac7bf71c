// The real Envoy rate limit service (github.com/envoyproxy/ratelimit, Go) backed by a real Redis (started by redis.ts,
// as for the key-store suites), for the tests that need a global limit. The service is built with the Go toolchain on
// first use and cached outside the repository (~/.cache/switchyard/envoy-ratelimit/<version>/);
// `SWITCHYARD_RATELIMIT_BIN` points at a prebuilt binary instead.
import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir} from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { freePort } from './ports.ts';
import { stopChild } from './processes.ts';
import { redisSkip, startRedis } from './redis.ts';
import type { RunningRedis } from './redis.ts';
import { which } from './which.ts';
import { testTempDir } from './temp-dir.ts';

/** envoyproxy/ratelimit publishes no semver tags after v1.4.0; this is its main branch of 2026-01-22. */
const RATELIMIT_PACKAGE = 'github.com/envoyproxy/ratelimit/src/service_cmd';
const RATELIMIT_VERSION = 'v1.4.1-0.20260122083618-3fb702589d36';
/** A cold build (module download and compile) took about a minute here; give up well before the test runner does. */
const BUILD_TIMEOUT_MS = 240_000;
const CACHE_DIR = join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'switchyard', 'envoy-ratelimit', RATELIMIT_VERSION);

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

/**
 * The service binary, or why the suite must skip (`false` when nothing is missing): redis-server is looked for first
 * (redis.ts), so a machine without it does not build the service for nothing.
 */
export async function locateRateLimitService(): Promise<{ skip: string | false; bin?: string }> {
  if (redisSkip) return { skip: `the service stores its counts in Redis: ${redisSkip}` };
  const located = await locateRatelimit();
  if ('skip' in located) return { skip: located.skip };
  return { skip: false, bin: located.bin };
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

export interface RateLimitService {
  /** The service's gRPC port (the `host` of a `remoteRateLimit` policy is `127.0.0.1:<grpcPort>`). */
  readonly grpcPort: number;
  /** Its Redis (stop it to take the service's store away). */
  readonly redis: RunningRedis;
  readonly service: ChildProcess;
  /** The service's last output. */
  logs(): string;
  stop(): Promise<void>;
}

/** Start redis-server and the service (its rules: `serviceConfig`, one YAML domain file) on free ports. */
export async function startRateLimitService(found: { bin?: string }, serviceConfig: string): Promise<RateLimitService> {
  const dir = testTempDir('switchyard-rls-');
  mkdirSync(join(dir, 'runtime', 'ratelimit', 'config'), { recursive: true });
  writeFileSync(join(dir, 'runtime', 'ratelimit', 'config', 'switchyard.yaml'), serviceConfig);
  let redis: RunningRedis | undefined;
  let service: ChildProcess | undefined;
  let serviceLogs = '';
  try {
    redis = await startRedis();
    const [httpPort, debugPort, grpcPort] = [await freePort(), await freePort(), await freePort()];
    service = spawn(found.bin!, [], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        PATH: process.env.PATH,
        USE_STATSD: 'false',
        LOG_LEVEL: 'warn',
        REDIS_SOCKET_TYPE: 'tcp',
        REDIS_URL: `127.0.0.1:${redis.port}`,
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
    const svc = service;
    const db = redis;
    return {
      grpcPort,
      redis: db,
      service: svc,
      logs: () => serviceLogs,
      async stop() {
        await stopChild(svc);
        await db.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await stopChild(service);
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}
