// The shared cells' arena full under `config.workers: 2` (issue 11): a config with more rate-limit buckets than the
// arena holds (4,096 cells, shared by rate limits and backend health) starts and serves; each worker logs the
// documented fallback once (the rest count per worker), and the buckets that fit stay exact for the gateway.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { SHARED_CELL_SLOTS } from '../../kernel/resources/shared-cells.ts';
import { childEnv, startCli } from '../helpers/cli-process.ts';
import type { RunningCli } from '../helpers/cli-process.ts';
import { BIN, ROOT } from '../helpers/cli.ts';
import { freePort } from '../helpers/ports.ts';
import { getFresh, twoWorkersYaml } from '../helpers/workers.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

describe('config.workers: 2 past the shared cells capacity', () => {
  let cli: RunningCli;
  let port: number;

  before(async () => {
    port = await freePort();
    const file = join(testTempDir('switchyard-shared-capacity-'), 'config.yaml');
    const many = Array.from({ length: SHARED_CELL_SLOTS + 4 }, (_, i) => ({ maxTokens: 1_000_000 + i, tokensPerFill: 1, fillInterval: '1h' }));
    writeFileSync(
      file,
      twoWorkersYaml([
        {
          port,
          listeners: [
            {
              routes: [
                { name: 'limited', matches: [{ path: { pathPrefix: '/limited' } }], policies: { workerProbe: { value: 'x' }, localRateLimit: [{ maxTokens: 10, tokensPerFill: 1, fillInterval: '1h' }], directResponse: { status: 200, body: 'ok' } } },
                { name: 'many', matches: [{ path: { pathPrefix: '/many' } }], policies: { workerProbe: { value: 'x' }, localRateLimit: many, directResponse: { status: 200, body: 'ok' } } },
              ],
            },
          ],
        },
      ]),
    );
    cli = await startCli(process.execPath, [BIN, '-f', file], { cwd: ROOT, env: childEnv(), readyMs: 90_000 });
  });

  after(async () => {
    await cli?.stop();
  });

  it('starts, serves every route, and logs the per-worker fallback once per worker', async () => {
    const answers = [];
    for (let i = 0; i < 20; i++) answers.push(await getFresh(`http://127.0.0.1:${port}/many`));
    assert.ok(answers.every((a) => a.status === 200));
    assert.equal(new Set(answers.map((a) => a.worker)).size, 2, 'both workers serve');
    const full = cli.output().split('\n').filter((l) => l.includes('shared state is full (4096 cells)'));
    assert.equal(full.length, 2, full.join('\n'));
    assert.ok(full.every((l) => l.includes('count per worker')));
  });

  it('keeps the buckets that fit one bucket for the gateway: 10 tokens allow 10 requests, whichever worker', async () => {
    const answers = [];
    for (let i = 0; i < 30; i++) answers.push(await getFresh(`http://127.0.0.1:${port}/limited`));
    assert.equal(new Set(answers.map((a) => a.worker)).size, 2, 'both workers took requests');
    assert.equal(answers.filter((a) => a.status === 200).length, 10);
    assert.equal(answers.filter((a) => a.status === 429).length, 20);
  });
});
