// Rotation of a Kubernetes Secret whose files the config names without being the config: an upstream API key
// (`backendAuth.key.file`), as the kubelet updates a mounted Secret (a new timestamped folder, `..data` swapped by
// rename, the old folder removed). The config file itself never changes, so only a watch on the named file (or a
// SIGHUP that looks at it) brings the new key; each rotation must reach every worker, the second and third too.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { childEnv } from '../helpers/cli-process.ts';
import { freePort } from '../helpers/ports.ts';
import { testTempDir } from '../helpers/temp-dir.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { getFresh } from '../helpers/workers.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** A Secret volume: `name` -> `..data/name` -> `..<n>/name`, updated the kubelet's way. */
class SecretMount {
  private generation = 0;
  readonly dir: string;
  constructor(dir: string) {
    this.dir = dir;
  }
  publish(name: string, text: string): void {
    const previous = this.generation > 0 ? `..2026_11_28_00_00_0${this.generation}` : undefined;
    this.generation += 1;
    const folder = `..2026_11_28_00_00_0${this.generation}`;
    mkdirSync(join(this.dir, folder));
    writeFileSync(join(this.dir, folder, name), text);
    symlinkSync(folder, join(this.dir, '..data_tmp'));
    renameSync(join(this.dir, '..data_tmp'), join(this.dir, '..data'));
    if (previous) rmSync(join(this.dir, previous), { recursive: true });
    if (this.generation === 1) symlinkSync(`..data/${name}`, join(this.dir, name));
  }
}

function config(port: number, upstream: TestUpstream, keyFile: string, workers: number): string {
  return `config:
  adminAddr: "off"
  statsAddr: "off"
  readinessAddr: "off"
  workers: ${workers}
binds:
- port: ${port}
  listeners:
  - routes:
    - name: api
      backends:
      - host: 127.0.0.1:${upstream.port}
      policies:
        backendAuth: { key: { file: ${JSON.stringify(keyFile)} } }
`;
}

/** The Authorization every one of `n` fresh connections carried upstream (fresh: SO_REUSEPORT spreads them). */
async function keysSent(port: number, upstream: TestUpstream, n: number): Promise<Set<string>> {
  upstream.received.length = 0;
  for (let i = 0; i < n; i++) await getFresh(`http://127.0.0.1:${port}/`).catch(() => undefined);
  return new Set(upstream.received.map((r) => String(r.headers.authorization)));
}

async function waitForKey(port: number, upstream: TestUpstream, expected: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = new Set<string>();
  while (Date.now() < deadline) {
    last = await keysSent(port, upstream, 6);
    if (last.size === 1 && last.has(expected)) return;
    await sleep(100);
  }
  assert.fail(`expected only ${expected} upstream within ${timeoutMs} ms, last saw ${JSON.stringify([...last])}`);
}

for (const workers of [1, 2]) {
  describe(`a rotated Secret named by the config (workers: ${workers})`, () => {
    const dir = testTempDir('switchyard-secret-');
    let child: ChildProcess | undefined;
    let upstream: TestUpstream | undefined;
    let output = '';

    after(async () => {
      if (child && child.exitCode === null) {
        const exited = new Promise((resolve) => child?.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
      await upstream?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('sends the new key after each of three kubelet updates, and after a SIGHUP of an edited file', async () => {
      upstream = await startUpstream();
      const port = await freePort();
      const secrets = new SecretMount(join(dir, 'secrets'));
      mkdirSync(secrets.dir);
      secrets.publish('api-key', 'key-1');
      const file = join(dir, 'config.yaml');
      writeFileSync(file, config(port, upstream, join(secrets.dir, 'api-key'), workers));
      child = spawn(process.execPath, [join(ROOT, 'bin/switchyard.js'), '-f', file], { env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
      child.stdout?.setEncoding('utf8').on('data', (d: string) => (output += d));
      child.stderr?.setEncoding('utf8').on('data', (d: string) => (output += d));
      const ready = Date.now() + 30_000;
      while (!output.includes('switchyard ready') && Date.now() < ready) await sleep(50);
      assert.match(output, /switchyard ready/, output);
      await waitForKey(port, upstream, 'Bearer key-1', 5_000);
      for (const n of [2, 3, 4]) {
        secrets.publish('api-key', `key-${n}`);
        await waitForKey(port, upstream, `Bearer key-${n}`, 10_000);
      }
      // A plain file edited in place (no watch event assumed): `systemctl reload` looks at the files again.
      const plain = join(dir, 'plain-key');
      writeFileSync(plain, 'plain-1');
      writeFileSync(file, config(port, upstream, plain, workers));
      await waitForKey(port, upstream, 'Bearer plain-1', 10_000);
      writeFileSync(plain, 'plain-2');
      child.kill('SIGHUP');
      await waitForKey(port, upstream, 'Bearer plain-2', 10_000);
      assert.doesNotMatch(output, /config reload failed/, output);
    });
  });
}
