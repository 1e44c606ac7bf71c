// A gateway whose stdout nobody reads (a log shipper that stalled, a pipe whose reader hangs) must still stop on
// SIGTERM within its drain deadline. It waited for stdout to take its last lines before exiting, so it hung for as
// long as the reader did (for ever), and an orchestrator had to SIGKILL it.
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

async function until(ok: () => Promise<boolean>, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok().catch(() => false))) {
    if (Date.now() > end) throw new Error('not in time');
    await sleep(50);
  }
}

describe('stop with a stalled stdout', () => {
  for (const workers of [1, 2])
  it(`SIGTERM ends the gateway within its drain deadline although stdout is full and unread (workers: ${workers})`, async () => {
    const port = await freePort();
    const file = join(testTempDir('switchyard-stall-'), 'gw.yaml');
    writeFileSync(
      file,
      `config:\n  workers: ${workers}\n  drainTimeout: 1s\n  adminAddr: 127.0.0.1:0\n  statsAddr: 127.0.0.1:0\n  readinessAddr: 127.0.0.1:0\nbinds:\n- port: ${port}\n  address: 127.0.0.1\n  listeners:\n  - routes:\n    - policies: { directResponse: { body: ok, status: 200 } }\n`,
    );
    // stdout is a pipe this test never reads: once the pipe and the stream's buffer are full, nothing more leaves.
    const child = spawn(process.execPath, [BIN, '-f', file], { cwd: ROOT, env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.pause();
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => child.on('exit', (code, signal) => done({ code, signal })));
    try {
      await until(async () => (await fetch(`http://127.0.0.1:${port}/`)).ok, 20_000);
      // Long paths make long access-log lines: a few MiB of them fill the pipe many times over.
      const path = `/${'x'.repeat(7000)}`;
      for (let i = 0; i < 600; i++) assert.equal((await fetch(`http://127.0.0.1:${port}${path}`)).status, 200);
      const started = Date.now();
      child.kill('SIGTERM');
      const timeout = sleep(8000).then(() => 'timeout' as const);
      const outcome = await Promise.race([exited, timeout]);
      assert.notEqual(outcome, 'timeout', `the gateway did not exit within 8 s of SIGTERM (drainTimeout 1s):\n${stderr}`);
      assert.ok(Date.now() - started < 5000, `exit took ${Date.now() - started} ms`);
      assert.deepEqual(outcome, { code: 0, signal: null }, stderr);
      // The lines it could not write are said on stderr, which is read.
      assert.match(stderr, /switchyard: \d+ log lines dropped at exit: stdout did not take them/);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    }
  });
});

