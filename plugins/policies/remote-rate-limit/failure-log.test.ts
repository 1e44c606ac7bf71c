import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'switchyard/sdk';
import { FailureLog } from './failure-log.ts';

function recorder(): { logger: Logger; lines: { message: string; fields?: Record<string, unknown> }[] } {
  const lines: { message: string; fields?: Record<string, unknown> }[] = [];
  const logger: Logger = {
    debug() {},
    info() {},
    warn: (message, fields) => void lines.push({ message, fields }),
    error() {},
    child: () => logger,
    isEnabled: () => true,
  };
  return { logger, lines };
}

describe('FailureLog', () => {
  it('logs the first failure at once, then one summary per interval with the exact count', async () => {
    const { logger, lines } = recorder();
    const log = new FailureLog(logger, 60);
    for (let i = 0; i < 5; i++) log.failed('rate limit service failed', { error: `e${i}` });
    assert.deepEqual(lines, [{ message: 'rate limit service failed', fields: { error: 'e0' } }]);
    await sleep(90);
    assert.equal(lines.length, 2);
    assert.deepEqual(lines[1]!.fields, { failures: 4, message: 'rate limit service failed', error: 'e4' });
    log.failed('rate limit service failed', { error: 'e5' });
    await sleep(80);
    assert.equal(lines.length, 3, 'a failure while the service kept failing waits for the next summary');
    assert.equal((lines[2]!.fields as { failures?: number }).failures, 1);
    await sleep(80);
    assert.equal(lines.length, 3, 'no failures in an interval: no summary');
    log.failed('rate limit service failed', { error: 'e6' });
    assert.deepEqual(lines[3], { message: 'rate limit service failed', fields: { error: 'e6' } }, 'quiet again: logged at once');
  });
});
