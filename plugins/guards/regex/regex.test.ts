import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CompileContext, Exchange } from 'switchyard/sdk';
import { compileRegexGuard } from './regex.ts';
import type { RegexGuardConfig } from './regex.ts';
import type { GuardVerdict } from '../../lib/llm/contract.ts';

/** Only `fail` and `warn` are used by the regex guard. */
function context(warnings: string[] = []): CompileContext {
  return {
    path: ['g'],
    fail: (message: string, sub: readonly (string | number)[] = []) => {
      throw new Error(`${[...sub].join('.')}: ${message}`);
    },
    warn: (message: string) => void warnings.push(message),
  } as unknown as CompileContext;
}

const ex = {} as Exchange;
const check = (config: RegexGuardConfig, ...texts: string[]): GuardVerdict =>
  compileRegexGuard(config, context()).check(
    ex,
    'request',
    texts.map((content) => ({ role: 'user', content })),
  ) as GuardVerdict;

describe('regex guard', () => {
  it('mask (default): builtins become <ENTITY>, patterns <masked>; untouched messages stay as they are', () => {
    assert.deepEqual(check({ rules: [{ builtin: 'email' }, { builtin: 'caSin' }, { pattern: 'token-[a-z]+' }] }, 'hello', 'a@b.io sin 046-454-286 token-abc'), {
      action: 'mask',
      messages: [
        { role: 'user', content: 'hello' },
        { role: 'user', content: '<EMAIL_ADDRESS> sin <CA_SIN> <masked>' },
      ],
    });
  });

  it('nothing found: pass', () => {
    assert.deepEqual(check({ rules: [{ builtin: 'ssn' }] }, 'nothing here'), { action: 'pass' });
  });

  it('reject: the first match in any message rejects', () => {
    assert.equal(check({ action: 'reject', rules: [{ builtin: 'phoneNumber' }] }, 'fine', 'call +1 415 555 2671').action, 'reject');
  });

  it('an invalid pattern fails the load at rules[i].pattern', () => {
    assert.throws(() => compileRegexGuard({ rules: [{ pattern: '[a-' }] }, context()), /^Error: rules\.0\.pattern: invalid regular expression `\[a-`/);
  });
});
