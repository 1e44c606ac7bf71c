// The `error_type` label of `gen_ai_client_operation_duration_seconds` (ADR 0129): a bounded set whatever failed, so
// an error's text (a provider's message, a host name) never becomes a series of its own.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GatewayError } from 'switchyard/sdk';
import { errorType, streamErrorType } from './error-type.ts';

describe('LLM call error type', () => {
  it('is the status, timeout, or _OTHER', () => {
    assert.equal(errorType('429'), '429');
    assert.equal(errorType('rate limited by upstream api.example.com'), '_OTHER');
    assert.equal(errorType(new GatewayError(504, 'timeout', 'upstream timed out')), '504');
    assert.equal(errorType(Object.assign(new Error('body timeout'), { code: 'UND_ERR_BODY_TIMEOUT' })), 'timeout');
    assert.equal(errorType(new DOMException('signal timed out', 'TimeoutError')), 'timeout');
    assert.equal(errorType(Object.assign(new Error('x'), { status: 1234 })), '_OTHER');
    assert.equal(errorType(new Error('connect ECONNREFUSED 10.0.0.1:443')), '_OTHER');
    assert.equal(errorType(undefined), '_OTHER');
  });

  it('tells a client that left from a provider that cut its answer (ADR 0135)', () => {
    assert.equal(errorType(new GatewayError(499, 'client_closed', 'client closed the connection')), 'cancelled');
    assert.equal(errorType(Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' })), 'provider_disconnected');
    assert.equal(errorType(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })), 'provider_disconnected');
    // An upstream answering 499 itself is only a status.
    assert.equal(errorType('499'), '499');
  });

  it("an error reported in a provider's stream: its status, else the status its type names, else _OTHER", () => {
    assert.equal(streamErrorType({ type: 'overloaded_error', message: 'Overloaded' }), '529');
    assert.equal(streamErrorType({ code: 502, message: 'Provider returned error' }), '502');
    assert.equal(streamErrorType({ code: 429, status: 'RESOURCE_EXHAUSTED' }), '429');
    assert.equal(streamErrorType({ code: 'server_error', message: 'x' }), '500');
    assert.equal(streamErrorType({ code: 'toString' }), '_OTHER');
    assert.equal(streamErrorType({ type: 'something new from the provider' }), '_OTHER');
    assert.equal(streamErrorType({ code: 200 }), '_OTHER');
    assert.equal(streamErrorType(undefined), '_OTHER');
  });
});
