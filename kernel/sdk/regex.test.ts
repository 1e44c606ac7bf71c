import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileUserRegex, userRegexProblem } from './regex.ts';

const compile = (pattern: string, options = {}): RegExp => {
  const re = compileUserRegex(pattern, options);
  if (typeof re === 'string') assert.fail(re);
  return re;
};

describe('compileUserRegex', () => {
  it('whole-value and search modes', () => {
    const whole = compile('/items/[0-9]+', { whole: true });
    assert.equal(whole.test('/items/42'), true);
    assert.equal(whole.test('/items/42/x'), false);
    assert.equal(compile('a|b', { whole: true }).test('ab'), false, 'alternation is grouped before anchoring');
    assert.deepEqual('x1y22'.match(compile('\\d+', { global: true })), ['1', '22']);
    assert.equal(compile('(?<=a)b').test('ab'), true, 'lookbehind runs in linear time');
  });

  it('catastrophic patterns finish in linear time', () => {
    for (const [pattern, options] of [['(a+)+', { whole: true }], ['(a|aa)+$', {}], ['(a*)*b', { global: true }], ['(?i)(A+)+B', {}]] as const) {
      const re = compile(pattern, options);
      const start = performance.now();
      re.lastIndex = 0;
      assert.equal(re.test(`${'a'.repeat(5000)}!`), false, pattern);
      assert.ok(performance.now() - start < 500, `${pattern}: ${(performance.now() - start).toFixed(0)} ms`);
    }
  });

  it('refuses what needs backtracking or Unicode mode, naming the construct and its offset', () => {
    const cases: [string, RegExp][] = [
      ['a(?=b)', /lookahead `\(\?=` at offset 1/],
      ['(?!x)', /negative lookahead `\(\?!` at offset 0/],
      ['(a)\\1', /backreference `\\1` at offset 3/],
      ['(?<n>a)\\k<n>', /named backreference `\\k<…>` at offset 7/],
      ['\\p{L}+', /Unicode property escape `\\p` at offset 0/],
      ['[\\P{L}]', /Unicode property escape `\\P` at offset 1/],
      ['\\u{1F600}', /code point escape `\\u\{…\}` at offset 0/],
      ['a(?i:b)', /modifier group `\(\?i:` .* at offset 1/],
      ['(?i)a(?=b)', /lookahead `\(\?=` at offset 5/],
      ['(?:a{1,100}){1,100}', /cannot run in linear time/],
      ['a(b', /^invalid regular expression `a\(b`: .*Unterminated group/],
      ['(?x) a', /extended mode/],
    ];
    for (const [pattern, expected] of cases) assert.match(userRegexProblem(pattern) ?? 'accepted', expected, pattern);
    // Inside a class these are plain characters.
    assert.equal(userRegexProblem('[(?=]'), undefined);
    assert.equal(userRegexProblem('a\\-b'), undefined, 'non-Unicode syntax is accepted');
  });

  it('`(?i)` matches exactly what the `i` flag matches', () => {
    const patterns = ['secret', '[a-f]+x', '[^a-z]', 'Straße', '\\x41b', '[\\u00e0-\\u00ff]', '(?<Name>k)', 'σ', '[\\w-z]', '\\bword\\b', 'a{2}', '\\cJ'];
    const inputs = ['SECRET', 'sEcReT', 'ABCX', 'abcx', 'A', '1', 'STRASSE', 'straße', 'STRAßE', 'aB', 'Ab', 'À', 'ÿ', 'Ÿ', 'K', 'k', 'K', 'Σ', 'ς', 'σ', '-', 'Z', 'WORD', 'AA', '\n', 'ſ'];
    for (const p of patterns) {
      const folded = compile(`(?i)${p}`);
      const native = new RegExp(p, 'i');
      assert.equal(folded.flags.includes('i'), false);
      for (const s of inputs) assert.equal(folded.test(s), native.test(s), `${p} on ${JSON.stringify(s)}`);
    }
  });
});
