// The per-session event log behind Last-Event-ID resumption: ids, bounds (count and bytes), replay, unknown ids.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Logger } from 'switchyard/sdk';
import { EVENT_LOG_MAX_BYTES, EVENT_LOG_MAX_EVENTS, EventLog } from './event-log.ts';
import { SseStream } from './sse-stream.ts';

const warnings: string[] = [];
const logger: Logger = { debug() {}, info() {}, warn: (m: string) => void warnings.push(m), error() {}, child: () => logger, isEnabled: () => false };

function text(stream: SseStream): () => string {
  let out = '';
  stream.body.on('data', (c: Buffer) => (out += c.toString()));
  return () => out;
}

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('mcp event log', () => {
  it('numbers events per stream under a per-session tag, and finds only its own ids', () => {
    const log = new EventLog(logger);
    const post = log.post();
    const sse = new SseStream();
    post.attach(sse);
    post.prime();
    post.send({ jsonrpc: '2.0', method: 'a' });
    log.get.send({ jsonrpc: '2.0', method: 'b' });
    assert.match(log.tag, /^[0-9a-f]{8}$/);
    assert.equal(post.id, `${log.tag}.p1`);
    assert.deepEqual(log.find(`${log.tag}.p1_2`)?.seq, 2);
    assert.equal(log.find(`${log.tag}.p1_3`), undefined, 'an id past the last one is not ours');
    assert.equal(log.find(`${new EventLog(logger).tag}.g_1`), undefined, 'another session object’s id');
    assert.equal(log.find('garbage'), undefined);
    assert.equal(log.find(`${log.tag}.g_x`), undefined);
  });

  it(`keeps at most ${EVENT_LOG_MAX_EVENTS} events, replays what is kept after an id and warns about the gap`, async () => {
    const log = new EventLog(logger);
    for (let i = 1; i <= EVENT_LOG_MAX_EVENTS + 10; i++) log.get.send({ n: i });
    assert.equal(log.get.evictedUpTo, 10);
    assert.equal(log.after(log.get, 0).length, EVENT_LOG_MAX_EVENTS);
    const sse = new SseStream();
    const out = text(sse);
    warnings.length = 0;
    log.get.attach(sse, 5);
    await tick();
    const ids = [...out().matchAll(/^id: (.*)$/gm)].map((m) => m[1]);
    assert.equal(ids.length, EVENT_LOG_MAX_EVENTS);
    assert.equal(ids[0], `${log.tag}.g_11`);
    assert.equal(warnings.length, 1, 'the missed events 6..10 were dropped: logged');
    log.get.send({ n: 'live' });
    await tick();
    assert.match(out(), new RegExp(`id: ${log.tag}\\.g_${EVENT_LOG_MAX_EVENTS + 11}\\ndata: \\{"n":"live"\\}`));
  });

  it(`keeps at most ${EVENT_LOG_MAX_BYTES} bytes: a large event is sent but not kept`, async () => {
    const log = new EventLog(logger);
    const post = log.post();
    const sse = new SseStream();
    const out = text(sse);
    post.attach(sse);
    post.send({ small: 1 });
    post.send({ big: 'x'.repeat(EVENT_LOG_MAX_BYTES) });
    await tick();
    assert.ok(out().includes('xxxx'), 'sent live');
    assert.deepEqual(log.after(post, 0), [], 'neither kept: the big one pushed everything out, itself included');
    assert.equal(post.evictedUpTo, 2);
  });

  it('replays an ended stream and ends the response; a later resume has nothing left', async () => {
    const log = new EventLog(logger);
    const post = log.post();
    post.attach(new SseStream());
    post.prime();
    post.send({ id: 1, result: {} });
    post.end();
    assert.equal(post.resumable, false);
    assert.equal(post.hasAfter(1), true);
    const again = new SseStream();
    const out = text(again);
    post.attach(again, 1);
    await tick();
    assert.match(out(), new RegExp(`: stream resumed\\n\\nevent: message\\nid: ${log.tag}\\.p1_2\\ndata: \\{"id":1,"result":\\{\\}\\}\\n\\n$`));
    assert.equal(again.open, false, 'ended after the replay');
    assert.equal(post.hasAfter(2), false);
  });

  it('calls onGone when a resumable POST stream is not resumed in time, not when it ended or resumed', async () => {
    const log = new EventLog(logger);
    const post = log.post();
    let gone = 0;
    post.onGone = () => gone++;
    const first = new SseStream();
    post.attach(first);
    post.prime();
    first.body.destroy();
    await tick();
    assert.equal(post.live, undefined);
    post.attach(new SseStream(), 1); // resumed in time
    post.end();
    await new Promise((r) => setTimeout(r, 10));
    assert.equal(gone, 0);
    log.dispose();
  });
});
