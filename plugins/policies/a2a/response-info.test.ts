import assert from 'node:assert/strict';
import { it } from 'node:test';
import { logResponseInfo, parseResponseInfo, responseInfo } from './response-info.ts';

it('reads v0.3 JSON-RPC results (flat, with kind)', () => {
  assert.deepEqual(responseInfo({ jsonrpc: '2.0', id: 1, result: { kind: 'task', id: 't', contextId: 'c', status: { state: 'completed' } } }, true), {
    outcome: 'success',
    resultKind: 'task',
    taskState: 'completed',
    contextId: 'c',
    taskId: 't',
  });
  assert.deepEqual(responseInfo({ jsonrpc: '2.0', id: 1, result: { kind: 'message', contextId: 'c', taskId: 't2' } }, true), { outcome: 'success', resultKind: 'message', taskState: undefined, contextId: 'c', taskId: 't2' });
});

it('reads v1.0 JSON-RPC results (one-of payload, no kind)', () => {
  assert.deepEqual(responseInfo({ jsonrpc: '2.0', id: 1, result: { task: { id: 't', contextId: 'c', status: { state: 'TASK_STATE_COMPLETED' } } } }, true), {
    outcome: 'success',
    resultKind: 'task',
    taskState: 'TASK_STATE_COMPLETED',
    contextId: 'c',
    taskId: 't',
  });
  assert.equal(responseInfo({ jsonrpc: '2.0', id: 1, result: { statusUpdate: { status: { state: 'TASK_STATE_WORKING' } } } }, true).resultKind, 'status-update');
});

it('reads errors and REST bodies', () => {
  assert.deepEqual(responseInfo({ jsonrpc: '2.0', id: 1, error: { code: -32601, message: 'nope' } }, true), { outcome: 'error', errorCode: -32601 });
  assert.deepEqual(responseInfo({ jsonrpc: '2.0', id: 1, result: null }, true), { outcome: 'unknown' });
  assert.equal(responseInfo({ task: { status: { state: 'TASK_STATE_COMPLETED' } } }, true).taskState, 'TASK_STATE_COMPLETED');
  assert.deepEqual(responseInfo({ code: 400, message: 'bad' }, false), { outcome: 'error', errorCode: 400 });
  assert.deepEqual(responseInfo('text', true), { outcome: 'unknown' });
  assert.equal(parseResponseInfo('not json', true), undefined);
});

it('reads the A2A error reason (google.rpc.ErrorInfo) of a JSON-RPC error (data) and a REST error (details)', () => {
  const info = [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org' }];
  assert.deepEqual(responseInfo({ jsonrpc: '2.0', id: 1, error: { code: -32001, message: 'm', data: info } }, true), { outcome: 'error', errorCode: -32001, errorReason: 'TASK_NOT_FOUND' });
  assert.deepEqual(responseInfo({ error: { code: 404, status: 'NOT_FOUND', message: 'm', details: [{ '@type': 'other' }, ...info] } }, false), {
    outcome: 'error',
    errorCode: 404,
    errorReason: 'TASK_NOT_FOUND',
  });
  assert.deepEqual(responseInfo({ jsonrpc: '2.0', id: 1, error: { code: -32001, data: { reason: 'x' } } }, true), { outcome: 'error', errorCode: -32001 });
  const fields: Record<string, unknown> = {};
  logResponseInfo({ outcome: 'error', errorCode: -32001, errorReason: 'TASK_NOT_FOUND' }, (k, v) => (fields[k] = v));
  assert.equal(fields['a2a.response.error_reason'], 'TASK_NOT_FOUND');
});

it('ignores values too long to log (an agent cannot grow the access log without bound)', () => {
  const long = 'x'.repeat(257);
  assert.deepEqual(responseInfo({ jsonrpc: '2.0', id: 1, result: { kind: long, id: long, contextId: long, status: { state: long } } }, true), {
    outcome: 'success',
    resultKind: undefined,
    taskState: undefined,
    contextId: undefined,
    taskId: undefined,
  });
});

it('logs only the fields it knows', () => {
  const fields: Record<string, unknown> = {};
  logResponseInfo({ outcome: 'error', errorCode: -32001 }, (k, v) => (fields[k] = v));
  assert.deepEqual(fields, { 'a2a.response.outcome': 'error', 'a2a.response.error_code': -32001 });
});
