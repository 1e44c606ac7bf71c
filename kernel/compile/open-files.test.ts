import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defaultMaxConnections, openFileLimit } from './open-files.ts';

const limits = (line: string) => (path: string) =>
  path === '/proc/self/limits' ? `Limit                     Soft Limit           Hard Limit           Units     \nMax cpu time              unlimited            unlimited            seconds   \n${line}\n` : undefined;

describe('the default maxConnectionsPerBind (ADR 0143)', () => {
  it("reads the process's soft open-file limit", () => {
    assert.equal(openFileLimit(limits('Max open files            20000                1048576              files     ')), 20000);
    assert.equal(openFileLimit(limits('Max open files            unlimited            unlimited            files     ')), undefined);
    assert.equal(openFileLimit(() => undefined), undefined);
  });

  it('is half the limit, shared by the workers; no cap when the limit is unknown', () => {
    const files = (n: number) => limits(`Max open files            ${n}                ${n}              files     `);
    assert.equal(defaultMaxConnections(1, files(1_048_576)), 524_288);
    assert.equal(defaultMaxConnections(4, files(20_000)), 2_500);
    assert.equal(defaultMaxConnections(1, files(256)), 128);
    assert.equal(defaultMaxConnections(64, files(100)), 1);
    assert.equal(defaultMaxConnections(2, () => undefined), 0);
  });
});
