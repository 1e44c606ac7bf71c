// Settings that mean something else with `config.workers`, said when the workers load them: an in-memory key store
// is one database per worker, so keys made through `/keys` (answered by one worker) work on its connections only.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { childEnv, startCli } from '../helpers/cli-process.ts';
import { BIN, ROOT } from '../helpers/cli.ts';
import { freePort } from '../helpers/ports.ts';
import { testTempDir } from '../helpers/temp-dir.ts';
import { twoWorkersYaml } from '../helpers/workers.ts';

describe('config.workers: 2, settings that differ per worker', () => {
  it('warns that a `:memory:` virtual key store is one per worker', async () => {
    const port = await freePort();
    const file = join(testTempDir('switchyard-workers-warnings-'), 'config.yaml');
    const route = { policies: { virtualKeys: { store: { sqlite: { path: ':memory:' } } }, directResponse: { status: 200, body: 'ok' } } };
    writeFileSync(file, twoWorkersYaml([{ port, listeners: [{ routes: [route] }] }]));
    const cli = await startCli(process.execPath, [BIN, '-f', file], { cwd: ROOT, env: childEnv(), readyMs: 90_000 });
    try {
      await cli.waitFor(/WARN .*`:memory:` is one database per worker/, 10_000);
    } finally {
      assert.equal(await cli.stop(), 0);
    }
  });
});
