import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fullPreset } from '../../plugins/presets/full.ts';
import { compileError, compileValue, summarize, withAuthorizationRules, yaml } from './helpers.ts';

// `response` is known only once the answer is sent: `config.logging` expressions may read it; a policy rule that
// does would always evaluate as an error (false), so the config is refused at load, positioned, with the hint.

const guarded = (rule: string): string => withAuthorizationRules('                  - request.path == "/x"', `                  - '${rule}'`);

describe('CEL: `response` outside config.logging', () => {
  it('an authorization rule reading response is a positioned config error naming where response is available', async () => {
    const err = await compileError(guarded('response.code == 200'), { preset: fullPreset });
    const issues = summarize(err.issues);
    assert.equal(issues.length, 1, JSON.stringify(issues));
    assert.equal(issues[0]!.at, 'test.yaml:10:21');
    assert.equal(issues[0]!.path, 'binds[0].listeners[0].routes[0].policies.authorization.rules[1]');
    assert.match(issues[0]!.message, /`response` is only available in `config\.logging`/);
    assert.match(err.message, /test\.yaml:10:21/);
  });

  it('a macro variable named response is not the response', async () => {
    await compileValue(guarded('["a"].exists(response, response == request.path)'), { preset: fullPreset });
  });

  it('config.logging fields and filter may still read response', async () => {
    await compileValue(
      yaml(
        'config:',
        '  logging:',
        '    filter: response.code >= 400',
        '    fields:',
        '      add:',
        '        status: response.code',
        'binds:',
        '  - port: 8080',
        '    listeners:',
        '      - routes:',
        '          - backends: [{ host: "127.0.0.1:9" }]',
      ),
      { preset: fullPreset },
    );
  });
});
