// `config.workers` / `workerThreads` (ADR 0033): bad values are config errors with the file position, the
// reference's name is accepted, and a worker that cannot start (a port in use) fails the start with exit 1.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { runCli } from '../helpers/cli.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

const dir = testTempDir('switchyard-workers-config-');
function configFile(name: string, statics: string, port = 18080): string {
  const file = join(dir, name);
  writeFileSync(
    file,
    `config:\n${statics}  adminAddr: 127.0.0.1:0\n  statsAddr: 127.0.0.1:0\n  readinessAddr: 127.0.0.1:0\nbinds:\n- port: ${port}\n  listeners:\n  - routes:\n    - policies: { directResponse: { body: ok, status: 200 } }\n`,
  );
  return file;
}

describe('config.workers', () => {
  it('accepts auto, a number, and the reference name workerThreads', async () => {
    for (const statics of ['  workers: auto\n', '  workers: 3\n', '  workerThreads: 2\n', '  workers: 2\n  workerThreads: 2\n']) {
      const run = await runCli(['-f', configFile('ok.yaml', statics), '--validate-only']);
      assert.equal(run.code, 0, `${statics}: ${run.stderr}`);
    }
  });

  it('refuses 0, 65, a word other than auto, and workers differing from workerThreads, with positions', async () => {
    const cases: [string, RegExp][] = [
      ['  workers: 0\n', /bad\.yaml:2:\d+.*config\.workers|config\.workers[\s\S]*bad\.yaml:2/],
      ['  workers: 65\n', /bad\.yaml:2/],
      ['  workers: many\n', /bad\.yaml:2/],
      ['  workers: 2\n  workerThreads: 4\n', /bad\.yaml:3[\s\S]*`workerThreads` is another name for `workers`/],
    ];
    for (const [statics, pattern] of cases) {
      const run = await runCli(['-f', configFile('bad.yaml', statics), '--validate-only']);
      assert.equal(run.code, 1, statics);
      assert.match(run.stderr, pattern, `${statics}: ${run.stderr}`);
    }
  });

  it('exits 1 with the reason when the workers cannot listen (the port is taken)', async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as { port: number }).port;
    try {
      const run = await runCli(['-f', configFile('taken.yaml', '  workers: 2\n', port)], { timeoutMs: 90_000 });
      assert.equal(run.code, 1, run.stderr);
      assert.match(run.stderr, /EADDRINUSE|address already in use|cannot listen/i);
    } finally {
      blocker.close();
    }
  });
});
