import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { switchMatches, upgradeAllowed } from './upgrade-protocols.ts';

describe('upgrade protocols (ADR 0118)', () => {
  it('an upgrade is allowed when every protocol offered is enabled, by name, without regard to case', () => {
    const ws = ['websocket'];
    assert.equal(upgradeAllowed('websocket', ws), true);
    assert.equal(upgradeAllowed('WebSocket', ws), true);
    assert.equal(upgradeAllowed(' websocket ,', ws), true);
    assert.equal(upgradeAllowed('foo', ws), false);
    assert.equal(upgradeAllowed('websocket, foo', ws), false);
    assert.equal(upgradeAllowed('TLS/1.0', ws), false);
    assert.equal(upgradeAllowed('', ws), false);
    assert.equal(upgradeAllowed(',', ws), false);
    assert.equal(upgradeAllowed(undefined, ws), false);
    assert.equal(upgradeAllowed('foo/2, websocket', ['websocket', 'foo']), true);
  });

  it("a 101 must name only protocols the client asked for (RFC 9110 section 7.8)", () => {
    assert.equal(switchMatches('websocket', 'websocket'), true);
    assert.equal(switchMatches('websocket', 'WebSocket'), true);
    assert.equal(switchMatches('FOO', 'foo'), true);
    assert.equal(switchMatches('foo, websocket', 'websocket'), true);
    assert.equal(switchMatches('websocket', 'foo'), false);
    assert.equal(switchMatches('websocket', 'websocket, foo'), false);
    assert.equal(switchMatches('websocket', undefined), false);
    assert.equal(switchMatches('websocket', ''), false);
    assert.equal(switchMatches(undefined, 'websocket'), false);
    // Versions: one side without a version names the protocol; both with one must agree.
    assert.equal(switchMatches('foo', 'foo/2'), true);
    assert.equal(switchMatches('foo/2', 'foo'), true);
    assert.equal(switchMatches('foo/2', 'FOO/2'), true);
    assert.equal(switchMatches('foo/2', 'foo/3'), false);
    assert.equal(switchMatches('foo/2', 'foobar'), false);
  });
});
