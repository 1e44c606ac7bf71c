import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CompileContext, Exchange } from 'switchyard/sdk';
import { compileRegexGuard } from './regex.ts';
import type { RegexGuardConfig } from './regex.ts';
import type { GuardMessage, GuardVerdict } from '../../lib/llm/contract.ts';

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

  it('Cyrillic and Greek look-alike letters do not hide a match (ADR 0181); a mask covers the original letters', () => {
    // "password" with a Cyrillic a, "SECRET" with Cyrillic S, E, C and a Greek capital epsilon.
    assert.equal(check({ action: 'reject', rules: [{ pattern: '(?i)password' }] }, 'my p\u0430ssword is').action, 'reject');
    assert.equal(check({ action: 'reject', rules: [{ pattern: 'SECRET' }] }, '\u0405\u0415\u0421R\u0395T').action, 'reject');
    assert.deepEqual(check({ rules: [{ pattern: 'password' }] }, 'p\u0430ss\u200bw\u03bfrd ok'), { action: 'mask', messages: [{ role: 'user', content: '<masked> ok' }] });
    // Russian words that merely share letters are left alone.
    assert.deepEqual(check({ rules: [{ pattern: 'password' }] }, '\u043f\u0430\u0440\u043e\u043b\u044c'), { action: 'pass' });
  });

  // What the model reads (ADR 0159): full-width and other compatibility forms, invisible characters in between.
  it('rules also match the text as a model reads it: NFKC forms and zero-width characters do not hide a match', () => {
    assert.equal(check({ action: 'reject', rules: [{ pattern: 'SECRET' }] }, 'the SE\u200bC\u00adRET word').action, 'reject');
    assert.equal(check({ action: 'reject', rules: [{ pattern: 'SECRET' }] }, '\uff33\uff25\uff23\uff32\uff25\uff34').action, 'reject');
    assert.deepEqual(check({ rules: [{ builtin: 'ssn' }, { builtin: 'email' }] }, 'ssn \uff11\uff12\uff13-\uff14\uff15-\uff16\uff17\uff18\uff19, mail bob\uff20exa\u200bmple.com \u00e9t\u00e9'), {
      action: 'mask',
      messages: [{ role: 'user', content: 'ssn <SSN>, mail <EMAIL_ADDRESS> \u00e9t\u00e9' }],
    });
    // A pattern written for the original characters still finds them.
    assert.deepEqual(check({ rules: [{ pattern: '\u200b' }] }, 'a\u200bb'), { action: 'mask', messages: [{ role: 'user', content: 'a<masked>b' }] });
    assert.deepEqual(check({ rules: [{ pattern: 'SECRET' }] }, 'caf\u00e9 only'), { action: 'pass' });
    // Folding is per code point (docs/security.md): decomposed text is not composed; a rule names both spellings.
    assert.deepEqual(check({ rules: [{ pattern: 'caf\u00e9' }] }, 'cafe\u0301'), { action: 'pass' });
    assert.deepEqual(check({ rules: [{ pattern: 'caf(?:\\u00e9|e\\u0301)' }] }, 'cafe\u0301 caf\u00e9'), { action: 'mask', messages: [{ role: 'user', content: '<masked> <masked>' }] });
  });

  // Parts of one content list reach the model as one text (ADR 0159): a word split across them is still found.
  it('text parts joined to the one before (GuardMessage.joined) are matched as one text; a mask spans them', () => {
    const parts = (...texts: string[]): GuardMessage[] => texts.map((content, i) => (i === 0 ? { role: 'user', content } : { role: 'user', content, joined: true }));
    const run = (config: RegexGuardConfig, messages: GuardMessage[]): GuardVerdict => compileRegexGuard(config, context()).check(ex, 'request', messages) as GuardVerdict;
    assert.equal(run({ action: 'reject', rules: [{ pattern: 'SECRET' }] }, parts('the SE', 'CR', 'ET plan')).action, 'reject');
    assert.deepEqual(run({ rules: [{ builtin: 'ssn' }] }, [{ role: 'system', content: 'x' }, ...parts('ssn 123-4', '5-6789 ok', 'done')]), {
      action: 'mask',
      messages: [
        { role: 'system', content: 'x' },
        { role: 'user', content: 'ssn <SSN>' },
        { role: 'user', content: ' ok', joined: true },
        { role: 'user', content: 'done', joined: true },
      ],
    });
    // Separate messages (another turn) are not joined.
    assert.deepEqual(run({ action: 'reject', rules: [{ pattern: 'SECRET' }] }, [{ role: 'user', content: 'SE' }, { role: 'user', content: 'CRET' }]), { action: 'pass' });
  });

  // Work grows with the text, not texts x matches: 50,000 parts (or JSON leaves) each holding an SSN took seconds.
  it('masking many parts or JSON leaves, each with a match, takes time linear in their number', () => {
    const guard = compileRegexGuard({ rules: [{ builtin: 'ssn' }] }, context());
    const parts: GuardMessage[] = Array.from({ length: 50_000 }, (_, i) => ({ role: 'user', content: 'id 123-45-6789 ', ...(i > 0 && { joined: true }) }));
    let started = performance.now();
    const v = guard.check(ex, 'request', parts) as { action: string; messages: GuardMessage[] };
    const partsMs = performance.now() - started;
    assert.equal(v.action, 'mask');
    assert.ok(v.messages.every((m) => m.content === 'id <SSN> '));
    const json = JSON.stringify(Array.from({ length: 50_000 }, () => 'id 123-45-6789'));
    started = performance.now();
    const w = guard.check(ex, 'response', [{ role: 'assistant', content: json, json: true }]) as { action: string; messages: GuardMessage[] };
    const jsonMs = performance.now() - started;
    assert.equal(w.action, 'mask');
    assert.equal(w.messages[0]!.content, JSON.stringify(Array.from({ length: 50_000 }, () => 'id <SSN>')));
    assert.ok(partsMs < 750 && jsonMs < 750, `parts ${partsMs.toFixed(0)} ms, JSON leaves ${jsonMs.toFixed(0)} ms`);
  });

  it('an invalid pattern fails the load at rules[i].pattern', () => {
    assert.throws(() => compileRegexGuard({ rules: [{ pattern: '[a-' }] }, context()), /^Error: rules\.0\.pattern: invalid regular expression `\[a-`/);
  });

  it('a JSON text (GuardMessage.json) is masked inside its strings, keys and numbers and stays valid JSON (ADR 0165)', () => {
    const guard = (config: RegexGuardConfig, content: string): GuardVerdict => compileRegexGuard(config, context()).check(ex, 'response', [{ role: 'assistant', content, json: true }]) as GuardVerdict;
    const masked = (config: RegexGuardConfig, content: string): unknown => {
      const v = guard(config, content);
      assert.equal(v.action, 'mask');
      return JSON.parse((v as { messages: readonly GuardMessage[] }).messages[0]!.content);
    };
    // A pattern that would eat the closing quote in the JSON text masks only the string's text.
    assert.deepEqual(masked({ rules: [{ pattern: 'SECRET.*' }] }, '{"a":"the SECRET plan","b":[1,"x"]}'), { a: 'the <masked>', b: [1, 'x'] });
    // An escape hides nothing: the string is matched as it decodes.
    assert.deepEqual(masked({ rules: [{ pattern: 'SECRET' }] }, '{"a":"\\u0053ECRET"}'), { a: '<masked>' });
    assert.equal(guard({ action: 'reject', rules: [{ pattern: 'SECRET' }] }, '{"a":"\\u0053ECRET"}').action, 'reject');
    // Keys and numbers are text the model wrote too; a masked number becomes a string.
    assert.deepEqual(masked({ rules: [{ builtin: 'ssn' }] }, '{"123-45-6789":true}'), { '<SSN>': true });
    assert.deepEqual(masked({ rules: [{ builtin: 'creditCard' }] }, '{"n":4111111111111111}'), { n: '<CREDIT_CARD>' });
    // Unicode folding applies inside strings as well.
    assert.deepEqual(masked({ rules: [{ builtin: 'ssn' }] }, JSON.stringify({ s: '\uff11\uff12\uff13-45-6789' })), { s: '<SSN>' });
    // An SSN right after an escaped newline (`\n123-...` reads as a word in the JSON text) and anchored patterns,
    // which read each string alone, are found; so is one string among many.
    assert.deepEqual(masked({ rules: [{ builtin: 'ssn' }] }, JSON.stringify({ a: 'line\n123-45-6789' })), { a: 'line\n<SSN>' });
    assert.deepEqual(masked({ rules: [{ pattern: '^\\d{4}$' }] }, '{"pin":"1234","n":["a 1234"]}'), { pin: '<masked>', n: ['a 1234'] });
    const many = Array.from({ length: 1000 }, (_, i) => `v${i}`);
    many[500] = 'mail bob@example.com';
    assert.deepEqual(masked({ rules: [{ builtin: 'ssn' }, { builtin: 'email' }] }, JSON.stringify(many)), many.map((v, i) => (i === 500 ? 'mail <EMAIL_ADDRESS>' : v)));
    // A JSON text with nothing to mask passes unchanged; a string that is not JSON is matched as plain text.
    assert.deepEqual(guard({ rules: [{ builtin: 'ssn' }] }, '{"a":"fine"}'), { action: 'pass' });
    const plain = guard({ rules: [{ pattern: 'SECRET.*' }] }, 'not json: SECRET "x');
    assert.equal((plain as unknown as { messages: GuardMessage[] }).messages[0]!.content, 'not json: <masked>');
  });
});
