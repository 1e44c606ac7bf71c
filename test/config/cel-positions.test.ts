// A CEL error points at the misspelt name inside the expression, whatever the YAML quoting (docs/adr/0145): plain,
// single-quoted ('' for a quote), double-quoted (escapes) and block scalars.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fullPreset } from '../../plugins/presets/full.ts';
import { compileError, summarize, withAuthorizationRules } from './helpers.ts';

const withRule = withAuthorizationRules;

async function at(text: string): Promise<string> {
  const issues = summarize((await compileError(text, { preset: fullPreset })).issues);
  assert.equal(issues.length, 1, JSON.stringify(issues));
  assert.match(issues[0]!.message, /`request` has no field `pth`; did you mean `path`\?/);
  return issues[0]!.at;
}

describe('CEL error positions inside the expression', () => {
  it('plain scalar', async () => {
    assert.equal(await at(withRule('                  - request.method == "GET" && request.pth == "/"')), 'test.yaml:9:56');
  });

  it("single-quoted, with '' for a quote", async () => {
    assert.equal(await at(withRule(`                  - 'request.method == ''GET'' && request.pth == "/"'`)), 'test.yaml:9:59');
  });

  it('double-quoted, with escapes', async () => {
    assert.equal(await at(withRule('                  - "request.method == \\"GET\\" && request.pth == \\"/\\""')), 'test.yaml:9:59');
  });

  it('after a string literal the frame hides (a possible secret), the column is still the file\'s', async () => {
    const text = withRule(`                  - 'request.headers["x-key"] == "sk-very-secret-value-12345" && request.pth == "/"'`);
    const err = await compileError(text, { preset: fullPreset });
    assert.doesNotMatch(err.issues[0]!.frame, /sk-very-secret/);
    assert.equal(await at(text), 'test.yaml:9:90');
  });

  it('block scalar, on its second line', async () => {
    assert.equal(await at(withRule('                  - |', '                    request.method == "GET" &&', '                      request.pth == "/"')), 'test.yaml:11:31');
  });
});
