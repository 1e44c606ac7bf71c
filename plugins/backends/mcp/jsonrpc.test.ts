// isValidMessage is the SDK's JSONRPCMessageSchema written out (it runs on every client message): both must agree.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';
import { isValidMessage } from './jsonrpc.ts';

const TASK = 'io.modelcontextprotocol/related-task';

const CASES: unknown[] = [
  // requests
  { jsonrpc: '2.0', id: 1, method: 'tools/call' },
  { jsonrpc: '2.0', id: 'a', method: 'tools/call', params: { name: 'x', arguments: { a: 1 } } },
  { jsonrpc: '2.0', id: 0, method: '' },
  { jsonrpc: '2.0', id: -5, method: 'm', params: {} },
  { jsonrpc: '2.0', id: 1.5, method: 'm' },
  { jsonrpc: '2.0', id: 2 ** 60, method: 'm' },
  { jsonrpc: '2.0', id: null, method: 'm' },
  { jsonrpc: '2.0', id: true, method: 'm' },
  { jsonrpc: '2.0', id: [1], method: 'm' },
  { jsonrpc: '2.0', id: {}, method: 'm' },
  { jsonrpc: '2.0', id: 1, method: 5 },
  { jsonrpc: '2.0', id: 1, method: 'm', params: [] },
  { jsonrpc: '2.0', id: 1, method: 'm', params: null },
  { jsonrpc: '2.0', id: 1, method: 'm', params: 'x' },
  { jsonrpc: '2.0', id: 1, method: 'm', extra: 1 },
  { jsonrpc: '2.0', id: 1, method: 'm', params: { _meta: { progressToken: 't' } } },
  { jsonrpc: '2.0', id: 1, method: 'm', params: { _meta: { progressToken: 7 } } },
  { jsonrpc: '2.0', id: 1, method: 'm', params: { _meta: { progressToken: 7.5 } } },
  { jsonrpc: '2.0', id: 1, method: 'm', params: { _meta: { progressToken: null } } },
  { jsonrpc: '2.0', id: 1, method: 'm', params: { _meta: null } },
  { jsonrpc: '2.0', id: 1, method: 'm', params: { _meta: [] } },
  { jsonrpc: '2.0', id: 1, method: 'm', params: { _meta: { other: [1, 2] } } },
  { jsonrpc: '2.0', id: 1, method: 'm', params: { _meta: { [TASK]: { taskId: 't1' } } } },
  { jsonrpc: '2.0', id: 1, method: 'm', params: { _meta: { [TASK]: { taskId: 3 } } } },
  { jsonrpc: '2.0', id: 1, method: 'm', params: { _meta: { [TASK]: 'x' } } },
  { jsonrpc: '2.0', id: 1, method: 'm', params: { _meta: { [TASK]: { taskId: 't', more: 1 } } } },
  // notifications
  { jsonrpc: '2.0', method: 'notifications/initialized' },
  { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 3, reason: 'x' } },
  { jsonrpc: '2.0', method: 'n', params: { _meta: { progressToken: {} } } },
  { jsonrpc: '2.0', method: 'n', result: {} },
  { jsonrpc: '2.0', method: 'n', error: { code: 1, message: 'm' } },
  // results
  { jsonrpc: '2.0', id: 1, result: {} },
  { jsonrpc: '2.0', id: 'r', result: { content: [], _meta: { progressToken: 'p' } } },
  { jsonrpc: '2.0', id: 1, result: { _meta: { progressToken: false } } },
  { jsonrpc: '2.0', id: 1, result: [] },
  { jsonrpc: '2.0', id: 1, result: null },
  { jsonrpc: '2.0', id: 1, result: 'ok' },
  { jsonrpc: '2.0', result: {} },
  { jsonrpc: '2.0', id: null, result: {} },
  { jsonrpc: '2.0', id: 1, result: {}, extra: true },
  { jsonrpc: '2.0', id: 1, result: {}, error: { code: 1, message: 'm' } },
  // errors
  { jsonrpc: '2.0', id: 1, error: { code: -32601, message: 'Method not found' } },
  { jsonrpc: '2.0', error: { code: -32700, message: 'Parse error' } },
  { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } },
  { jsonrpc: '2.0', id: 1, error: { code: 1.5, message: 'm' } },
  { jsonrpc: '2.0', id: 1, error: { code: '1', message: 'm' } },
  { jsonrpc: '2.0', id: 1, error: { code: 1 } },
  { jsonrpc: '2.0', id: 1, error: { code: 1, message: 'm', data: { any: ['thing'] } } },
  { jsonrpc: '2.0', id: 1, error: { code: 1, message: 'm', extra: 1 } },
  { jsonrpc: '2.0', id: 1, error: null },
  { jsonrpc: '2.0', id: 1, error: [] },
  { jsonrpc: '2.0', id: 1, error: { code: 1, message: 'm' }, extra: 1 },
  // not JSON-RPC 2.0
  { jsonrpc: '1.0', id: 1, method: 'm' },
  { id: 1, method: 'm' },
  { jsonrpc: '2.0' },
  { jsonrpc: '2.0', id: 1 },
  [],
  [{ jsonrpc: '2.0', id: 1, method: 'm' }],
  null,
  'text',
  42,
  JSON.parse('{"jsonrpc":"2.0","id":1,"method":"m","__proto__":{}}'),
];

describe('isValidMessage', () => {
  it('agrees with the SDK schema on every case', () => {
    for (const c of CASES) assert.equal(isValidMessage(c), JSONRPCMessageSchema.safeParse(c).success, JSON.stringify(c));
  });
});
