// `npx switchyard` and `npm start` run the gateway as npm -> sh -c -> node. npm forwards SIGTERM to the shell only,
// the shell dies without passing it on, and the gateway kept serving, reparented, after `docker stop` (ADR 0161).
// The chain is made here with a shell that cannot exec the gateway in its place (as npm's `sh -c` does not).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { BIN, ROOT } from '../helpers/cli.ts';
import { childEnv } from '../helpers/cli-process.ts';
import { freePort } from '../helpers/ports.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function underShell(npmLaunched: boolean): Promise<{ pid: number; port: number; output: () => string; shell: ReturnType<typeof spawn> }> {
  const port = await freePort();
  const file = join(testTempDir('switchyard-npm-launcher-'), 'gw.yaml');
  writeFileSync(file, `config:\n  adminAddr: 127.0.0.1:0\n  statsAddr: 127.0.0.1:0\n  readinessAddr: 127.0.0.1:0\nbinds:\n- port: ${port}\n  address: 127.0.0.1\n  listeners:\n  - routes:\n    - policies: { directResponse: { body: up, status: 200 } }\n`);
  const env = childEnv({ GW_NODE: process.execPath, GW_BIN: BIN, GW_FILE: file });
  if (npmLaunched) env.npm_lifecycle_event = 'npx';
  else delete env.npm_lifecycle_event;
  // The shell prints the gateway's PID and waits for it, like npm's `sh -c` waits for its command.
  const shell = spawn('/bin/sh', ['-c', '"$GW_NODE" "$GW_BIN" -f "$GW_FILE" & echo "pid=$!"; wait'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  shell.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  shell.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const end = Date.now() + 20_000;
  while (!output.includes('switchyard ready')) {
    assert.ok(Date.now() < end, `not ready:\n${output}`);
    await sleep(50);
  }
  const pid = Number(/pid=(\d+)/.exec(output)?.[1]);
  assert.ok(pid > 0, output);
  return { pid, port, output: () => output, shell };
}

describe('a gateway started by npm', () => {
  it('stops (drains, exits) when the shell npm started it through dies of the forwarded SIGTERM', async () => {
    const gw = await underShell(true);
    try {
      assert.equal(await (await fetch(`http://127.0.0.1:${gw.port}/`)).text(), 'up');
      gw.shell.kill('SIGTERM');
      const end = Date.now() + 10_000;
      while (alive(gw.pid)) {
        assert.ok(Date.now() < end, `still running:\n${gw.output()}`);
        await sleep(100);
      }
      assert.match(gw.output(), /the npm process that started the gateway is gone; stopping/);
      assert.match(gw.output(), /switchyard stopped/);
      await assert.rejects(fetch(`http://127.0.0.1:${gw.port}/`));
    } finally {
      if (alive(gw.pid)) process.kill(gw.pid, 'SIGKILL');
    }
  });

  it('not started by npm, it keeps serving when the shell that started it goes (a daemon outlives its shell)', async () => {
    const gw = await underShell(false);
    try {
      gw.shell.kill('SIGTERM');
      await sleep(2500);
      assert.ok(alive(gw.pid), gw.output());
      assert.equal(await (await fetch(`http://127.0.0.1:${gw.port}/`)).text(), 'up');
    } finally {
      process.kill(gw.pid, 'SIGTERM');
      const end = Date.now() + 10_000;
      while (alive(gw.pid) && Date.now() < end) await sleep(100);
      if (alive(gw.pid)) process.kill(gw.pid, 'SIGKILL');
    }
  });
});
