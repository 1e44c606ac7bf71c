// Messages of `SharedEvents` posted with `keepMs` (an MCP session ended): the supervisor keeps each until its time is
// up and hands them to a worker it starts later, whose subscriber of the topic gets them before `subscribe`
// returns. The e2e case (a worker restarted after a DELETE): test/e2e/workers-mcp-idle.test.ts.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { KeptEvents, WorkerEvents } from './shared-events.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

it('keeps what was posted with keepMs, for its time, and replays it to a later subscriber of its topic first', async () => {
  const scope = `test:${process.pid}:${Date.now()}`;
  const kept = new KeptEvents(scope);
  const worker = new WorkerEvents(scope);
  const topic = worker.subscribe('ended', () => undefined);
  const other = worker.subscribe('other', () => undefined);
  try {
    topic.post({ u: 'a' }, 60_000);
    topic.post({ u: 'not kept' });
    topic.post({ u: 'short' }, 50);
    other.post({ u: 'b' }, 60_000);
    await sleep(20);
    assert.deepEqual(kept.forWorker(), { ended: [{ u: 'a' }, { u: 'short' }], other: [{ u: 'b' }] });
    await sleep(60);
    const later = kept.forWorker();
    assert.deepEqual(later, { ended: [{ u: 'a' }], other: [{ u: 'b' }] });
    const heard: unknown[] = [];
    const events = new WorkerEvents(scope, later);
    const restarted = events.subscribe('ended', (m) => heard.push(m));
    assert.deepEqual([...heard], [{ u: 'a' }], 'delivered before subscribe returned');
    const again = events.subscribe('ended', (m) => heard.push(m));
    assert.deepEqual(heard, [{ u: 'a' }], 'once: a later subscriber (a reload) would get them stale');
    restarted.close();
    again.close();
  } finally {
    topic.close();
    other.close();
    kept.close();
  }
});
