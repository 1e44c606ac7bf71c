// Hot reload of a mounted Kubernetes ConfigMap, as the container runs it: the CLI watches
// /etc/switchyard/config.yaml while the kubelet's atomic writer swaps the `..data` symlink to a new timestamped
// folder (config.yaml -> ..data/config.yaml -> ..2026_…/config.yaml). The file's own inode never changes, so a
// watcher on the file alone would miss the update; a bad update must leave the last good config serving.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { freePort } from '../helpers/ports.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const mount = testTempDir('switchyard-configmap-');
let generation = 0;

/** Publish a new ConfigMap version the way the kubelet does: new folder, `..data` swapped by rename, old folder removed. */
function publish(configText: string): void {
  const previous = generation > 0 ? `..2026_11_25_00_00_0${generation}` : undefined;
  generation += 1;
  const folder = `..2026_11_25_00_00_0${generation}`;
  mkdirSync(join(mount, folder));
  writeFileSync(join(mount, folder, 'config.yaml'), configText);
  symlinkSync(folder, join(mount, '..data_tmp'));
  renameSync(join(mount, '..data_tmp'), join(mount, '..data'));
  if (previous) rmSync(join(mount, previous), { recursive: true });
  if (generation === 1) symlinkSync('..data/config.yaml', join(mount, 'config.yaml'));
}

function config(port: number, readiness: number, body: string): string {
  return `config:
  adminAddr: "off"
  statsAddr: "off"
  readinessAddr: 127.0.0.1:${readiness}
binds:
- port: ${port}
  listeners:
  - routes:
    - name: hello
      policies:
        directResponse: { status: 200, body: "${body}" }
`;
}

async function bodyAt(port: number): Promise<string | undefined> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/`);
    return await res.text();
  } catch {
    return undefined;
  }
}

async function waitForBody(port: number, expected: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: string | undefined;
  while (Date.now() < deadline) {
    last = await bodyAt(port);
    if (last === expected) return;
    await sleep(50);
  }
  assert.fail(`expected ${JSON.stringify(expected)} within ${timeoutMs} ms, last answer ${JSON.stringify(last)}`);
}

describe('a ConfigMap mounted as a directory', () => {
  let child: ChildProcess | undefined;
  let output = '';
  let port = 0;
  let readiness = 0;

  before(async () => {
    port = await freePort();
    readiness = await freePort();
    publish(config(port, readiness, 'v1'));
    child = spawn(process.execPath, [join(ROOT, 'bin/switchyard.js'), '-f', join(mount, 'config.yaml')], {
      env: { ...process.env, NODE_OPTIONS: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.setEncoding('utf8').on('data', (d: string) => (output += d));
    child.stderr?.setEncoding('utf8').on('data', (d: string) => (output += d));
    await waitForBody(port, 'v1', 20_000);
  });

  after(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child?.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(mount, { recursive: true, force: true });
  });

  it('is reloaded when the kubelet swaps ..data', async () => {
    publish(config(port, readiness, 'v2'));
    await waitForBody(port, 'v2', 10_000);
  });

  it('keeps the last good config when an update is invalid, and applies the next good one', async () => {
    publish(config(port, readiness, 'v3').replace('directResponse', 'directRespons'));
    const deadline = Date.now() + 10_000;
    while (!output.includes('directRespons') && Date.now() < deadline) await sleep(50);
    assert.match(output, /directRespons/, `the rejected reload is logged with the bad key:\n${output}`);
    assert.equal(await bodyAt(port), 'v2');
    publish(config(port, readiness, 'v4'));
    await waitForBody(port, 'v4', 10_000);
  });
});
