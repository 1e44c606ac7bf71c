// Opening the embedded store's file while other connections open it too (config.workers: each worker opens the same
// file at start): `journal_mode = WAL` answers SQLITE_BUSY at once in that race, and the open waits and tries again.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { setUpDatabase } from './sqlite-schema.ts';

const busy = (): Error => Object.assign(new Error('database is locked'), { errcode: 5 });

test('sqlite set-up: a busy answer to the WAL switch is retried with a growing wait; any other error, or busy for about 5 s, fails the open', async () => {
  const waits: number[] = [];
  const sleep = async (ms: number): Promise<void> => void waits.push(ms);
  let walTries = 0;
  const ran: string[] = [];
  const flaky = {
    exec(sql: string): void {
      if (sql.includes('journal_mode') && ++walTries <= 2) throw busy();
      ran.push(sql.trim().split(/\s+/).slice(0, 3).join(' '));
    },
  };
  await setUpDatabase(flaky, sleep);
  assert.deepEqual(waits, [10, 20]);
  assert.deepEqual(ran, ['PRAGMA busy_timeout =', 'PRAGMA journal_mode =', 'CREATE TABLE IF'], 'the schema after WAL, once');

  const broken = { exec: (sql: string): void => { if (sql.includes('CREATE')) throw Object.assign(new Error('disk I/O error'), { errcode: 10 }); } };
  await assert.rejects(setUpDatabase(broken, sleep), /disk I\/O error/);

  waits.length = 0;
  const locked = { exec: (sql: string): void => { if (sql.includes('journal_mode')) throw busy(); } };
  await assert.rejects(setUpDatabase(locked, sleep), /database is locked/);
  assert.equal(waits.length, 9);
  assert.ok(waits.reduce((a, b) => a + b) >= 5000 && waits.reduce((a, b) => a + b) < 6000, `about 5 s in all: ${waits.join(', ')}`);
});

test('sqlite set-up: four worker threads opening one new file at once all open it, every time', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'swy-sqlite-open-'));
  const module = new URL('./sqlite-schema.ts', import.meta.url).href;
  const code = `
    const { DatabaseSync } = require('node:sqlite');
    const { workerData, parentPort } = require('node:worker_threads');
    import(workerData.module).then(({ setUpDatabase }) => {
      const db = new DatabaseSync(workerData.path);
      return setUpDatabase(db).then(() => { db.close(); parentPort.postMessage('ok'); });
    }).catch((err) => parentPort.postMessage(String(err.message)));`;
  try {
    for (let round = 0; round < 20; round++) {
      const path = join(dir, `keys-${round}.db`);
      const answers = await Promise.all(
        Array.from({ length: 4 }, () => new Promise<string>((resolve, reject) => {
          const worker = new Worker(code, { eval: true, workerData: { path, module } });
          worker.once('message', (m: string) => void worker.terminate().then(() => resolve(m)));
          worker.once('error', reject);
        })),
      );
      assert.deepEqual(answers, ['ok', 'ok', 'ok', 'ok'], `round ${round}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
