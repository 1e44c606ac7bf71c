import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { attemptTimeout, upstreamFailure, UpstreamFailure } from './upstream-errors.ts';

// What the client is told of an upstream failure never names the upstream; the access log's message does (ADR 0117).
const ORIGIN = 'http://10.1.2.3:8443';
const coded = (code: string, message = 'x'): Error => Object.assign(new Error(message), { code });

describe('upstreamFailure', () => {
  it('keeps the upstream address out of the client message and in the log message', () => {
    const cases: [unknown, number, string][] = [
      [coded('ECONNREFUSED', 'connect ECONNREFUSED 10.1.2.3:8443'), 503, 'upstream is unreachable: ECONNREFUSED'],
      [coded('UND_ERR_HEADERS_TIMEOUT'), 504, 'upstream timed out'],
      [coded('UND_ERR_BODY_TIMEOUT'), 504, 'upstream timed out'],
      [coded('ERR_SSL_WRONG_VERSION_NUMBER'), 502, 'TLS connection to the upstream failed: ERR_SSL_WRONG_VERSION_NUMBER'],
      [coded('HPE_INVALID_HEADER_TOKEN'), 502, 'upstream failed: HPE_INVALID_HEADER_TOKEN'],
      // A message without a code may say anything: the client gets none of it.
      [new Error('cannot reach 10.1.2.3:8443 via /var/run/x.sock'), 502, 'upstream failed'],
      [coded('a code with spaces 10.1.2.3'), 502, 'upstream failed'],
    ];
    for (const [err, status, message] of cases) {
      const failure = upstreamFailure(err, ORIGIN);
      assert.ok(failure instanceof UpstreamFailure);
      assert.equal(failure.status, status);
      assert.equal(failure.message, message);
      assert.ok(failure.logMessage.includes(ORIGIN), failure.logMessage);
    }
    assert.equal((upstreamFailure(new Error('cannot reach 10.1.2.3:8443'), ORIGIN) as UpstreamFailure).logMessage, `upstream ${ORIGIN} failed: cannot reach 10.1.2.3:8443`);
  });

  it('the default deadline names itself, not the upstream', () => {
    const failure = upstreamFailure(coded('UND_ERR_HEADERS_TIMEOUT'), ORIGIN, 15000) as UpstreamFailure;
    assert.match(failure.message, /^upstream did not answer within 15000ms \(the default deadline/);
    assert.match(failure.logMessage, new RegExp(`^upstream ${ORIGIN} did not answer within 15000ms`));
    const attempt = attemptTimeout(ORIGIN, 300);
    assert.equal(attempt.message, 'upstream did not answer within 300ms');
    assert.equal(attempt.logMessage, `upstream ${ORIGIN} did not answer within 300ms`);
  });
});
