import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compilePattern, maskParts, maskSpans, patternSpans } from './mask.ts';
import { ENTITY, findBuiltin, luhnValid } from './pii.ts';
import type { Builtin } from './pii.ts';

/** The text with every `builtin` match masked as the regex guard does. */
const mask = (builtin: Builtin, text: string): string => maskSpans(text, findBuiltin(builtin, text), `<${ENTITY[builtin]}>`);
const found = (builtin: Builtin, text: string): string[] => findBuiltin(builtin, text).map((s) => text.slice(s.start, s.end));

describe('llm-guard builtin detectors', () => {
  it('email: one or several addresses', () => {
    assert.equal(mask('email', 'contact john.doe@example.com now'), 'contact <EMAIL_ADDRESS> now');
    assert.equal(mask('email', 'contact john@example.com or jane@other.com for help'), 'contact <EMAIL_ADDRESS> or <EMAIL_ADDRESS> for help');
    assert.deepEqual(found('email', 'no address @ here, nor a@b'), []);
  });

  it('ssn: dashed, spaced, dotted and bare forms; never-issued numbers are not SSNs', () => {
    assert.equal(mask('ssn', 'My ssn is 123-45-6789 ok'), 'My ssn is <SSN> ok');
    assert.deepEqual(found('ssn', 'a 123 45 6789 b 123.45.6789 c 123456789'), ['123 45 6789', '123.45.6789', '123456789']);
    assert.deepEqual(found('ssn', '000-12-3456 666-12-3456 123-00-4567 123-45-0000 111-11-1111'), []);
    assert.deepEqual(found('ssn', 'mixed 123-45.6789 and longer 1234-56-7890 and 12345678901'), []);
  });

  it('creditCard: Luhn-valid numbers with or without separators', () => {
    assert.ok(luhnValid('4111111111111111'));
    assert.ok(!luhnValid('4111111111111112'));
    assert.equal(mask('creditCard', 'Card number: 4111-1111-1111-1111 ok'), 'Card number: <CREDIT_CARD> ok');
    assert.deepEqual(found('creditCard', '5555 5555 5555 4444 and 378282246310005 and 6011111111111117'), ['5555 5555 5555 4444', '378282246310005', '6011111111111117']);
    assert.deepEqual(found('creditCard', 'not luhn 4111-1111-1111-1112'), []);
  });

  it('a builtin and a custom pattern together, in order (the reference example)', () => {
    let text = 'Card number: 4111-1111-1111-1111 or id:12-34';
    text = mask('creditCard', text);
    const re = compilePattern('\\d{2}');
    assert.ok(re instanceof RegExp);
    text = maskSpans(text, patternSpans(re, text), '<masked>');
    assert.equal(text, 'Card number: <CREDIT_CARD> or id:<masked>-<masked>');
  });

  it('caSin: formatted or nine digits', () => {
    assert.equal(mask('caSin', 'SIN 046-454-286 and 046 454 286 and 046454286.'), 'SIN <CA_SIN> and <CA_SIN> and <CA_SIN>.');
    assert.deepEqual(found('caSin', '12-345-678 and 0464542860'), []);
  });

  it('phoneNumber: national formats of US/CA, GB, DE, IL, IN, BR and international numbers', () => {
    const numbers = [
      '(415) 555-2671', // US
      '415-555-2671',
      '+1 415 555 2671',
      '020 7946 0958', // GB
      '+44 20 7946 0958',
      '07700 900123',
      '030 901820', // DE
      '+49 30 901820',
      '03-1234567', // IL
      '+972 3 123 4567',
      '98765 43210', // IN
      '+91 98765 43210',
      '(11) 91234-5678', // BR
      '+55 11 91234 5678',
      '+33 1 23 45 67 89', // any country with +
    ];
    for (const n of numbers) assert.deepEqual(found('phoneNumber', `call ${n} today`), [n], n);
  });

  it('phoneNumber: dates, short numbers, card numbers and SSNs are not phone numbers', () => {
    for (const text of ['on 2024-01-15', 'on 01.02.2024', 'order 12345', 'card 4111-1111-1111-1111', 'ssn 123-45-6789', 'version 1.2.3', 'year 2024']) {
      assert.deepEqual(found('phoneNumber', text), [], text);
    }
    assert.equal(mask('phoneNumber', 'Call me at (415) 555-2671 or +44 20 7946 0958.'), 'Call me at <PHONE_NUMBER> or <PHONE_NUMBER>.');
  });

  it('phoneNumber: two numbers written side by side are found separately', () => {
    assert.deepEqual(found('phoneNumber', 'lines: 415-555-2671 020 7946 0958'), ['415-555-2671', '020 7946 0958']);
  });

  it('every detector is linear on hostile input (a prompt is attacker-controlled)', () => {
    const hostile = ['1'.repeat(100_000) + 'x', '1 '.repeat(50_000) + 'x', 'a'.repeat(200_000) + '@', '1-'.repeat(50_000) + 'a', 'a.'.repeat(100_000) + '@b'];
    for (const builtin of ['phoneNumber', 'ssn', 'creditCard', 'caSin', 'email'] as const) {
      for (const text of hostile) {
        const start = performance.now();
        findBuiltin(builtin, text);
        const ms = performance.now() - start;
        assert.ok(ms < 1500, `${builtin} took ${ms.toFixed(0)} ms on ${JSON.stringify(text.slice(0, 12))}…`);
      }
    }
  });
});

describe('llm-guard masking helpers', () => {
  it('overlapping spans collapse into one placeholder', () => {
    assert.equal(maskSpans('abcdef', [{ start: 1, end: 3 }, { start: 2, end: 5 }], '#'), 'a#f');
    assert.equal(maskSpans('abcdef', [], '#'), 'abcdef');
  });

  // Spans over texts read as one: each placeholder lands in the text where its (merged) span starts.
  it('maskParts agrees with a character-by-character reading on random texts and spans', () => {
    let seed = 7;
    const rand = (n: number): number => ((seed = (seed * 1103515245 + 12345) % 2147483648) % n);
    for (let round = 0; round < 300; round++) {
      const texts = Array.from({ length: 1 + rand(6) }, () => 'abcdefgh'.slice(0, rand(5)));
      const total = texts.join('').length;
      const spans = Array.from({ length: total === 0 ? 0 : rand(5) }, () => {
        const start = rand(total);
        return { start, end: start + 1 + rand(total - start) };
      });
      // Reference: sort and merge overlapping spans, then copy each character outside them, a placeholder at each start.
      const merged: { start: number; end: number }[] = [];
      for (const sp of [...spans].sort((a, b) => a.start - b.start)) {
        const last = merged[merged.length - 1];
        if (last && sp.start < last.end) last.end = Math.max(last.end, sp.end);
        else merged.push({ ...sp });
      }
      let base = 0;
      const expected = texts.map((t) => {
        let piece = '';
        for (let p = base; p < base + t.length; p++) {
          if (merged.some((m) => m.start === p)) piece += '#';
          else if (!merged.some((m) => m.start < p && p < m.end)) piece += t[p - base];
        }
        base += t.length;
        return piece;
      });
      assert.deepEqual(maskParts(texts, spans, '#'), expected, JSON.stringify({ texts, spans }));
    }
  });

  it('zero-width matches mask nothing', () => {
    const re = compilePattern('x*');
    assert.ok(re instanceof RegExp);
    assert.deepEqual(patternSpans(re, 'abxxc'), [{ start: 2, end: 4 }]);
  });

  it('compilePattern: inline flags, unicode fallback, and errors with the engine message', () => {
    const ci = compilePattern('(?i)secret');
    assert.ok(ci instanceof RegExp && ci.test('SECRET') && !ci.flags.includes('i')); // spelled out as case variants (docs/adr/0021)
    const loose = compilePattern('a\\-b'); // fine without unicode mode only
    assert.ok(loose instanceof RegExp && loose.test('a-b'));
    const bad = compilePattern('(unclosed');
    assert.equal(typeof bad, 'string');
    assert.match(bad as string, /^invalid regular expression `\(unclosed`: .*Unterminated group/);
    assert.match(compilePattern('(?x) a b') as string, /extended mode/);
  });
});
