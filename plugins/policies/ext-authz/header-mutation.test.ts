import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { HeaderMap } from 'switchyard/sdk';
import { applyHeaderOption, removeHeaders } from './header-mutation.ts';

const opt = (key: string, value: string, extra: { append?: boolean; action?: number } = {}) => ({
  header: { key, value },
  append: extra.append === undefined ? null : { value: extra.append },
  append_action: extra.action ?? 0,
});

it('applies Envoy HeaderValueOption semantics: deprecated append wins, else append_action', () => {
  const h: HeaderMap = { a: '1', b: '1', c: '1', d: '1' };
  applyHeaderOption(h, opt('A', '2', { append: true }));
  applyHeaderOption(h, opt('b', '2', { append: false }));
  applyHeaderOption(h, opt('c', '2')); // APPEND_IF_EXISTS_OR_ADD
  applyHeaderOption(h, opt('d', '2', { action: 1 })); // ADD_IF_ABSENT
  applyHeaderOption(h, opt('e', '2', { action: 1 }));
  applyHeaderOption(h, opt('f', '2', { action: 3 })); // OVERWRITE_IF_EXISTS
  applyHeaderOption(h, opt('d', '3', { action: 2 })); // OVERWRITE_IF_EXISTS_OR_ADD
  assert.deepEqual(h, { a: ['1', '2'], b: '2', c: ['1', '2'], d: '3', e: '2' });
});

it('never touches pseudo headers or gateway-owned framing headers', () => {
  const h: HeaderMap = { host: 'h', 'content-length': '3', x: '1' };
  applyHeaderOption(h, opt('Host', 'evil', { append: false }));
  applyHeaderOption(h, opt(':path', '/x', { append: false }));
  removeHeaders(h, ['HOST', 'content-length', 'X']);
  assert.deepEqual(h, { host: 'h', 'content-length': '3' });
});
