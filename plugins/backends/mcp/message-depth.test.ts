// How deeply a target's message may nest (ADR 0134): an answer past MAX_MESSAGE_DEPTH becomes an error for its
// request, anything else is dropped with a reason; depth is measured without recursion.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_MESSAGE_DEPTH, withinDepth } from './message-depth.ts';
import { nestsDeeperThan } from '../../lib/json-depth/json-depth.ts';
import type { RpcMessage } from './jsonrpc.ts';

const nested = (levels: number): unknown => JSON.parse(`${'['.repeat(levels)}${']'.repeat(levels)}`);

describe('message depth', () => {
  it('measures any depth, counting the message itself as level 1', () => {
    assert.equal(nestsDeeperThan({ a: [1, { b: 2 }] }, 3), false);
    assert.equal(nestsDeeperThan({ a: [1, { b: {} }] }, 3), true);
    assert.equal(nestsDeeperThan(nested(1_000_000), MAX_MESSAGE_DEPTH), true);
    assert.equal(nestsDeeperThan('text', 0), false);
  });

  it('an answer too deep becomes an error for its request; a notification too deep is dropped, saying why', () => {
    const dropped: string[] = [];
    const ok: RpcMessage = { jsonrpc: '2.0', id: 1, result: { content: nested(MAX_MESSAGE_DEPTH - 3) as never } };
    assert.equal(withinDepth(ok, 'target `t`', (why) => dropped.push(why)), ok);
    const deep: RpcMessage = { jsonrpc: '2.0', id: 7, result: { content: nested(100_000) as never } };
    assert.deepEqual(withinDepth(deep, 'target `t`', (why) => dropped.push(why)), {
      jsonrpc: '2.0',
      id: 7,
      error: { code: -32603, message: `target \`t\` answered with JSON nested deeper than ${MAX_MESSAGE_DEPTH} levels` },
    });
    assert.equal(withinDepth({ jsonrpc: '2.0', method: 'notifications/message', params: { data: nested(100_000) as never } }, 'target `t`', (why) => dropped.push(why)), undefined);
    assert.deepEqual(dropped, [`\`notifications/message\` nested deeper than ${MAX_MESSAGE_DEPTH} levels`]);
  });
});
