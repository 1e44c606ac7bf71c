// Files the config names (issue 14 item 3): a device, a FIFO, a directory or an oversized file in `jwks.file`,
// `htpasswd.file`, `backendAuth.key.file`, `backendTLS.root` or a listener's `tls.cert` is a positioned config
// error, found quickly and with bounded memory, at start, at --validate-only and at reload; a reload keeps the last
// good config serving, and the event loop stays responsive while the bad file is looked at.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { after, before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import { request } from 'undici';
import { FILE_SIZE_LIMITS, FileReadError, readLocalFile } from 'switchyard/sdk';
import { fullPreset } from '../../plugins/presets/full.ts';
import { runCli } from '../helpers/cli.ts';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { compileError, headlines } from './helpers.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

const dir = testTempDir('switchyard-files-');
const fifo = join(dir, 'pipe');
execFileSync('mkfifo', [fifo]);
const directory = join(dir, 'a-directory');
mkdirSync(directory);
/** Sparse files one byte over a cap: nothing is written to disk. */
function oversized(name: string, limit: number): string {
  const file = join(dir, name);
  writeFileSync(file, '');
  truncateSync(file, limit + 1);
  return file;
}
const bigKey = oversized('big.key', FILE_SIZE_LIMITS.key);
const bigHtpasswd = oversized('big.htpasswd', FILE_SIZE_LIMITS.htpasswd);

/** Writers opened on the FIFO by tests (a reader on old code would wait for one); stopped by their PID. */
const writers: ChildProcess[] = [];
after(() => {
  for (const w of writers) if (w.exitCode === null && w.pid !== undefined) process.kill(w.pid, 'SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

const USER = 'carol';
const PASSWORD = 'carol-Pw3';
const htpasswd = join(dir, 'users.htpasswd');
writeFileSync(htpasswd, `${USER}:{SHA}${createHash('sha1').update(PASSWORD).digest('base64')}\n`);
const basic = `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}`;

/** One config naming `file` at the field under test; `at` is the field's config path. */
interface Field {
  readonly name: string;
  readonly at: string;
  config(file: string, port?: number): Record<string, unknown>;
}

const route = (policies: Record<string, unknown>): Record<string, unknown> => ({ policies, backends: [{ host: '127.0.0.1:1' }] });
const single = (port: number, r: Record<string, unknown>, listener: Record<string, unknown> = {}): Record<string, unknown> => ({
  binds: [{ port, listeners: [{ ...listener, routes: [r] }] }],
});
const R = 'binds[0].listeners[0].routes[0].policies';

const FIELDS: readonly Field[] = [
  { name: 'jwks.file', at: `${R}.jwtAuth.jwks.file`, config: (f, p = 8080) => single(p, route({ jwtAuth: { issuer: 'https://issuer.test', jwks: { file: f } } })) },
  { name: 'htpasswd.file', at: `${R}.basicAuth.htpasswd.file`, config: (f, p = 8080) => single(p, route({ basicAuth: { htpasswd: { file: f } } })) },
  { name: 'backendAuth.key.file', at: `${R}.backendAuth.key.file`, config: (f, p = 8080) => single(p, route({ backendAuth: { key: { file: f } } })) },
  { name: 'backendTLS.root', at: `${R}.backendTLS.root`, config: (f, p = 8080) => single(p, route({ backendTLS: { root: f } })) },
  {
    name: 'listener tls.cert',
    at: 'binds[0].listeners[0].tls.cert',
    config: (f, p = 8080) => single(p, route({ directResponse: { status: 200 } }), { protocol: 'HTTPS', tls: { cert: f, key: bigKey } }),
  },
];

const BAD: readonly { readonly name: string; readonly file: string; readonly reason: RegExp }[] = [
  { name: '/dev/zero', file: '/dev/zero', reason: /is a character device, not a regular file/ },
  { name: '/dev/urandom', file: '/dev/urandom', reason: /is a character device, not a regular file/ },
  { name: 'a FIFO', file: fifo, reason: /is a FIFO \(named pipe\), not a regular file/ },
  { name: 'a directory', file: directory, reason: /is a directory/ },
  { name: 'an oversized file', file: bigKey, reason: /is larger than 1 MiB, the limit for this file/ },
];

describe('readLocalFile: the one reader of files a config names', () => {
  it('reads a regular file', async () => {
    assert.equal(await readLocalFile(htpasswd, 1024), `${USER}:{SHA}${createHash('sha1').update(PASSWORD).digest('base64')}\n`);
  });

  for (const bad of BAD) {
    it(`refuses ${bad.name} at once`, async () => {
      const t0 = performance.now();
      await assert.rejects(readLocalFile(bad.file, FILE_SIZE_LIMITS.key), (err: Error) => {
        assert.ok(err instanceof FileReadError);
        assert.match(err.message, bad.reason);
        return true;
      });
      assert.ok(performance.now() - t0 < 1000);
    });
  }

  it('a file exactly at the cap is read; one byte more is refused', async () => {
    const file = join(dir, 'exact');
    writeFileSync(file, 'x'.repeat(4096));
    assert.equal((await readLocalFile(file, 4096)).length, 4096);
    await assert.rejects(readLocalFile(file, 4095), /is larger than 4095 bytes/);
  });

  it('htpasswd files have a larger cap than keys', async () => {
    assert.ok(FILE_SIZE_LIMITS.htpasswd > FILE_SIZE_LIMITS.key);
    await assert.rejects(readLocalFile(bigHtpasswd, FILE_SIZE_LIMITS.htpasswd), /is larger than 16 MiB/);
  });
});

describe('files named by the config: compile (what --validate-only and a reload run)', () => {
  for (const field of FIELDS) {
    for (const bad of BAD) {
      it(`${field.name} = ${bad.name}: a config error at the field`, async () => {
        const t0 = performance.now();
        // htpasswd files have their own, larger cap.
        const file = bad.file === bigKey && field.name === 'htpasswd.file' ? bigHtpasswd : bad.file;
        const err = await compileError(stringify(field.config(file)), { preset: fullPreset });
        const line = headlines(err).find((l) => l.includes(`(at ${field.at})`));
        assert.ok(line, err.message);
        assert.match(line, /^test\.yaml:\d+:\d+: cannot read the .* file `/);
        assert.match(line, file === bigHtpasswd ? /is larger than 16 MiB/ : bad.reason);
        assert.ok(performance.now() - t0 < 5000, `took ${performance.now() - t0} ms`);
      });
    }
  }
});

describe('files named by the config: the CLI', () => {
  const configFile = (name: string, value: Record<string, unknown>): string => {
    const file = join(dir, name);
    writeFileSync(file, stringify({ config: { adminAddr: 'off', statsAddr: 'off', readinessAddr: 'off' }, ...value }));
    return file;
  };

  // Each bad kind through a different field, so every field and every kind is met once at start.
  const startCases: [Field, (typeof BAD)[number]][] = [
    [FIELDS[0]!, BAD[0]!],
    [FIELDS[1]!, BAD[1]!],
    [FIELDS[2]!, BAD[2]!],
    [FIELDS[3]!, BAD[3]!],
    [FIELDS[4]!, BAD[4]!],
  ];
  for (const [field, bad] of startCases) {
    it(`start with ${field.name} = ${bad.name}: exit 1 with a positioned error, quickly, in bounded memory`, async () => {
      const file = configFile(`start-${field.name.replace(/\W/g, '-')}.yaml`, field.config(bad.file, 1));
      const r = await runCli(['-f', file], { timeoutMs: 15_000 });
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, /^switchyard: invalid config\n/);
      assert.match(r.stderr, new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:\\d+:\\d+: cannot read the .*\\(at ${field.at.replace(/[.[\]]/g, '\\$&')}\\)`));
      assert.match(r.stderr, bad.reason);
      assert.ok(r.peakRssMiB < 400, `peak RSS ${r.peakRssMiB.toFixed(0)} MiB`);
    });
  }

  it('--validate-only with htpasswd.file = a FIFO: exit 1 at once', async () => {
    const file = configFile('validate-fifo.yaml', FIELDS[1]!.config(fifo, 1));
    const r = await runCli(['--validate-only', '-f', file], { timeoutMs: 15_000 });
    assert.equal(r.code, 1, r.stderr);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /cannot read .*pipe\): is a FIFO \(named pipe\), not a regular file/);
  });

  it('-f naming /dev/zero or a FIFO: exit 1 naming the config file', async () => {
    for (const bad of ['/dev/zero', fifo]) {
      const r = await runCli(['--validate-only', '-f', bad], { timeoutMs: 15_000 });
      assert.equal(r.code, 1, r.stderr);
      assert.ok(r.stderr.includes(`${bad}:1:1: cannot read the config file: is a`), r.stderr);
      assert.ok(r.peakRssMiB < 400, `peak RSS ${r.peakRssMiB.toFixed(0)} MiB`);
    }
  });
});

describe('files named by the config: reload', () => {
  let gw: RunningGateway;
  let port: number;
  const good = (): Record<string, unknown> => ({
    config: { adminAddr: '127.0.0.1:0', statsAddr: '127.0.0.1:0', readinessAddr: '127.0.0.1:0' },
    binds: [{ port, listeners: [{ routes: [{ policies: { basicAuth: { htpasswd: { file: htpasswd }, mode: 'strict' }, directResponse: { status: 200, body: 'ok' } } }] }] }],
  });

  before(async () => {
    port = await freePort();
    gw = await startGateway(stringify(good()), { watch: true });
  });
  after(() => gw?.stop());

  const call = async (): Promise<number> => {
    const res = await request(`${gw.url(port)}/`, { headers: { authorization: basic } });
    await res.body.text();
    return res.statusCode;
  };
  const failures = (): number => gw.logs.filter((l) => l.includes('config reload failed')).length;

  for (const bad of [
    { name: 'a FIFO', file: fifo },
    { name: '/dev/zero', file: '/dev/zero' },
    { name: 'a directory', file: directory },
  ]) {
    it(`htpasswd.file changed to ${bad.name}: the last good config keeps serving and the event loop stays responsive`, async () => {
      assert.equal(await call(), 200);
      if (bad.file === fifo) {
        // A reader that blocks on the FIFO is released after 3 s, so old code fails on the delay (over 2 s) instead of hanging.
        const writer = spawn('sh', ['-c', `sleep 3; printf 'x:y\\n' > '${fifo}'`], { stdio: 'ignore' });
        writers.push(writer);
      }
      const before = failures();
      const delay = monitorEventLoopDelay({ resolution: 10 });
      delay.enable();
      const config = good();
      ((config.binds as { listeners: { routes: { policies: { basicAuth: { htpasswd: { file: string } } } }[] }[] }[])[0]!.listeners[0]!.routes[0]!.policies.basicAuth.htpasswd.file = bad.file);
      writeFileSync(gw.file, stringify(config));
      const deadline = Date.now() + 10_000;
      while (failures() === before && Date.now() < deadline) {
        assert.equal(await call(), 200);
        await new Promise((r) => setTimeout(r, 20));
      }
      delay.disable();
      assert.ok(failures() > before, 'the bad reload is logged');
      const logged = gw.logs.slice(gw.logs.findLastIndex((l) => l.includes('config reload failed'))).join('\n');
      assert.match(logged, /cannot read .*(is a FIFO|is a character device|is a directory)/);
      assert.ok(delay.max / 1e6 < 2000, `event loop stalled ${(delay.max / 1e6).toFixed(0)} ms`);
      assert.equal(await call(), 200);
      writeFileSync(gw.file, stringify(good()));
    });
  }
});
