import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { applyAnthropicCacheMarkers, promptCachingSettings } from './prompt-caching.ts';

const EPHEMERAL = { type: 'ephemeral' };
const all = promptCachingSettings({ cacheTools: true, minTokens: 0 });

function conversation(): Record<string, unknown> {
  return {
    model: 'claude-sonnet-4',
    max_tokens: 100,
    system: 'you are helpful',
    tools: [{ name: 'a', input_schema: {} }, { name: 'b', input_schema: {} }],
    messages: [
      { role: 'user', content: 'first' },
      { role: 'assistant', content: 'reply' },
      { role: 'user', content: 'second' },
    ],
  };
}

describe('promptCaching (Anthropic cache_control markers)', () => {
  it('defaults: system and messages on, tools off, 1024 tokens minimum, offset 0', () => {
    assert.deepEqual(promptCachingSettings({}), { cacheSystem: true, cacheMessages: true, cacheTools: false, minTokens: 1024, cacheMessageOffset: 0 });
  });

  it('marks the system prompt, the second-to-last message and the last tool', () => {
    const body = conversation();
    applyAnthropicCacheMarkers(body, all);
    assert.deepEqual(body.system, [{ type: 'text', text: 'you are helpful', cache_control: EPHEMERAL }]);
    const messages = body.messages as { content: unknown }[];
    assert.deepEqual(messages[1]!.content, [{ type: 'text', text: 'reply', cache_control: EPHEMERAL }]);
    assert.equal(messages[2]!.content, 'second');
    assert.equal(messages[0]!.content, 'first');
    const tools = body.tools as Record<string, unknown>[];
    assert.deepEqual(tools[1]!.cache_control, EPHEMERAL);
    assert.equal(tools[0]!.cache_control, undefined);
  });

  it('minTokens gates the system prompt only (estimated as words × 1.3)', () => {
    const body = conversation();
    applyAnthropicCacheMarkers(body, promptCachingSettings({}));
    assert.equal(body.system, 'you are helpful');
    assert.deepEqual((body.messages as { content: unknown }[])[1]!.content, [{ type: 'text', text: 'reply', cache_control: EPHEMERAL }]);
    const long = conversation();
    long.system = 'word '.repeat(788); // 788 × 1.3 = 1024
    applyAnthropicCacheMarkers(long, promptCachingSettings({ cacheMessages: false }));
    assert.ok(Array.isArray(long.system));
  });

  it('cacheMessageOffset moves the history marker back, never before the first message', () => {
    const body = conversation();
    applyAnthropicCacheMarkers(body, promptCachingSettings({ cacheSystem: false, cacheMessageOffset: 5 }));
    assert.deepEqual((body.messages as { content: unknown }[])[0]!.content, [{ type: 'text', text: 'first', cache_control: EPHEMERAL }]);
  });

  it('the marker goes on the last cacheable block; client markers are kept and count against the four allowed', () => {
    const body = conversation();
    (body.messages as Record<string, unknown>[])[1]!.content = [
      { type: 'text', text: 'a' },
      { type: 'thinking', thinking: 'b', signature: 's' },
    ];
    applyAnthropicCacheMarkers(body, promptCachingSettings({ cacheSystem: false }));
    assert.deepEqual((body.messages as { content: unknown }[])[1]!.content, [
      { type: 'text', text: 'a', cache_control: EPHEMERAL },
      { type: 'thinking', thinking: 'b', signature: 's' },
    ]);

    const full = conversation();
    full.system = [1, 2, 3, 4].map((n) => ({ type: 'text', text: `s${n}`, cache_control: { type: 'ephemeral', ttl: '1h' } }));
    applyAnthropicCacheMarkers(full, all);
    assert.equal((full.messages as { content: unknown }[])[1]!.content, 'reply', 'no budget left');
    assert.deepEqual((full.system as Record<string, unknown>[])[3]!.cache_control, { type: 'ephemeral', ttl: '1h' });
  });

  it('one message only: no history to mark', () => {
    const body = { system: 'x', messages: [{ role: 'user', content: 'only' }] };
    applyAnthropicCacheMarkers(body, promptCachingSettings({ cacheSystem: false }));
    assert.equal(body.messages[0]!.content, 'only');
  });
});
