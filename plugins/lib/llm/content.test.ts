import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_EVENTS, MAX_HELD_BYTES, StreamContent } from './content.ts';
import { completions } from './formats/completions.ts';

const chunk = (content: string) => ({ type: undefined, data: { id: 'c', object: 'chat.completion.chunk', model: 'm', choices: [{ index: 0, delta: { content } }] } });

describe('StreamContent (captured content of a streamed answer)', () => {
  it('rebuilds the answer from its events', () => {
    const held = new StreamContent(completions);
    held.add({ type: undefined, data: { id: 'c', object: 'chat.completion.chunk', model: 'm', choices: [{ index: 0, delta: { role: 'assistant', content: '' } }] } });
    for (const word of ['Hello', ', ', 'world']) held.add(chunk(word));
    assert.deepEqual(JSON.parse(held.output()!), [{ role: 'assistant', parts: [{ type: 'text', content: 'Hello, world' }] }]);
  });

  it('holds at most MAX_HELD_BYTES of event JSON, however few the events', () => {
    const held = new StreamContent(completions);
    const big = 'x'.repeat(1024 * 1024);
    for (let i = 0; i < 50; i++) held.add(chunk(big));
    assert.ok(held.held <= MAX_HELD_BYTES / big.length, `held ${held.held} events of 1 MiB`);
    assert.ok(held.held >= 3);
    // What was held still rebuilds (the text is cut at 16 KiB).
    assert.match(held.output()!, /^\[\{"role":"assistant","parts":\[\{"type":"text","content":"x{16384}…"\}\]\}\]$/);
  });

  it('holds at most MAX_EVENTS events', () => {
    const held = new StreamContent(completions);
    for (let i = 0; i < MAX_EVENTS + 100; i++) held.add(chunk('a'));
    assert.equal(held.held, MAX_EVENTS);
  });
});
