// The Redis store sends a request's settlement with the next reservation's script (one round trip per request): the
// sums are right, a refused reservation still applies them, and a settlement alone is sent by the timer. A real
// redis-server on a free port, started and stopped here.
import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { freePort } from '../../../test/helpers/ports.ts';
import { which } from '../../../test/helpers/which.ts';
import { RedisKeyStore } from './redis-store.ts';

const redisServer = which('redis-server', ['/usr/bin', '/usr/sbin', '/usr/local/bin']);

async function listening(port: number, deadline: number): Promise<void> {
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1', () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`redis-server did not listen on ${port}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('redis store: settlements ride on the next reservation; refused reservations still apply them; the timer sends them alone', { skip: redisServer ? false : 'redis-server is not installed' }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'swy-redis-store-'));
  const port = await freePort();
  const redis = spawn(redisServer!, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
  const store = await (async () => {
    await listening(port, Date.now() + 10_000);
    return RedisKeyStore.open(`redis://127.0.0.1:${port}`, 'unit:');
  })();
  const other = await RedisKeyStore.open(`redis://127.0.0.1:${port}`, 'unit:');
  try {
    const lines = ['a', 'b'].map((x) => ({ counter: `k:${x}`, limit: 1000, amount: 10, expiresAt: 0 }));
    const deltas = lines.map((l) => ({ counter: l.counter, amount: -4, expiresAt: Date.now() + 3_600_000 }));
    assert.equal(await store.reserve(lines), -1);
    store.settle(deltas);
    store.settle(deltas);
    assert.deepEqual(await other.values(['k:a', 'k:b']), [10, 10], 'not sent yet');
    assert.equal(await store.reserve(lines), -1);
    assert.deepEqual(await other.values(['k:a', 'k:b']), [20 - 8, 20 - 8], 'sent with the reservation');
    store.settle(deltas);
    assert.equal(await store.reserve([{ ...lines[0]!, limit: 5 }]), 0, 'refused');
    assert.deepEqual(await other.values(['k:a', 'k:b']), [8, 8], 'the refused reservation still applied the settlement');
    store.settle(deltas);
    const deadline = Date.now() + 10_000;
    while ((await other.values(['k:a']))[0] !== 4 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(await other.values(['k:a', 'k:b']), [4, 4], 'sent alone by the timer');
  } finally {
    await store.close();
    await other.close();
    redis.kill('SIGTERM');
    await new Promise((r) => redis.once('exit', r));
    rmSync(dir, { recursive: true, force: true });
  }
});
