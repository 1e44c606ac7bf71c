import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HashGate } from './hash-gate.ts';

/** A task that runs until `finish` is called, recording when it started. */
function pending(log: string[], name: string): { task: () => Promise<string>; finish: () => void; fail: () => void } {
  let resolve!: (v: string) => void;
  let reject!: (e: Error) => void;
  const done = new Promise<string>((res, rej) => ((resolve = res), (reject = rej)));
  return {
    task: () => {
      log.push(name);
      return done;
    },
    finish: () => resolve(name),
    fail: () => reject(new Error(`${name} failed`)),
  };
}

describe('HashGate', () => {
  it('runs one task at a time, in arrival order, and turns tasks away past the queue', async () => {
    const gate = new HashGate(2);
    const log: string[] = [];
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((n) => pending(log, n)) as [ReturnType<typeof pending>, ReturnType<typeof pending>, ReturnType<typeof pending>, ReturnType<typeof pending>];
    const pa = gate.run(a.task)!;
    const pb = gate.run(b.task)!;
    const pc = gate.run(c.task)!;
    assert.equal(gate.run(d.task), undefined, 'the queue holds two');
    assert.deepEqual(log, ['a']);
    a.finish();
    assert.equal(await pa, 'a');
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(log, ['a', 'b']);
    // A failing task lets the next one run, and rejects its own promise.
    b.fail();
    await assert.rejects(pb, /b failed/);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(log, ['a', 'b', 'c']);
    c.finish();
    assert.equal(await pc, 'c');
    assert.equal(gate.queued, 0);
    // Idle again: the next task runs at once.
    const e = pending(log, 'e');
    const pe = gate.run(e.task)!;
    assert.deepEqual(log.at(-1), 'e');
    e.finish();
    assert.equal(await pe, 'e');
  });

  it('a task that throws synchronously frees the gate', async () => {
    const gate = new HashGate(1);
    await assert.rejects(gate.run(() => {
      throw new Error('sync');
    })!, /sync/);
    assert.equal(await gate.run(async () => 'next'), 'next');
  });
});
