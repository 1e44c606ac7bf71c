import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { authorizationValue, withQueryParameter } from './key.ts';

describe('authorizationValue (DECIDED 8)', () => {
  it('a bare token is sent as Bearer', () => {
    assert.equal(authorizationValue('sk-abc123'), 'Bearer sk-abc123');
  });
  it('a value with a space is sent verbatim', () => {
    assert.equal(authorizationValue('Bearer sk-abc'), 'Bearer sk-abc');
    assert.equal(authorizationValue('Basic dXNlcjpwYXNz'), 'Basic dXNlcjpwYXNz');
    assert.equal(authorizationValue('Token a b'), 'Token a b');
  });
  it('surrounding whitespace and a trailing newline (a key file) are ignored', () => {
    assert.equal(authorizationValue('  sk-file\n'), 'Bearer sk-file');
    assert.equal(authorizationValue('Basic abc\r\n'), 'Basic abc');
  });
  it('refuses empty values and control characters, without echoing the key', () => {
    assert.deepEqual(authorizationValue(' \n'), { error: 'is empty' });
    const bad = authorizationValue('sk-abc\nX-Injected: 1');
    assert.equal(typeof bad, 'object');
    assert.doesNotMatch((bad as { error: string }).error, /sk-abc/);
    assert.equal(typeof authorizationValue('clé-ü€'), 'object');
  });
});

describe('withQueryParameter (ADR 0175)', () => {
  it('appends the pair, dropping every parameter of that name however it is encoded', () => {
    assert.equal(withQueryParameter('/x', 'api key', 'api%20key=K'), '/x?api%20key=K');
    assert.equal(withQueryParameter('/x?', 'k', 'k=K'), '/x?k=K');
    assert.equal(withQueryParameter('/x?a=1&k=bad&api+key=2&k&b=%zz', 'k', 'k=K'), '/x?a=1&api+key=2&b=%zz&k=K');
    assert.equal(withQueryParameter('/x?api+key=bad&api%20key=bad2', 'api key', 'api%20key=K'), '/x?api%20key=K');
  });
});
