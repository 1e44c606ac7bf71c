import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { foldText } from './fold.ts';

const IGNORABLE = /^\p{Default_Ignorable_Code_Point}$/u;

/** The folding as ADR 0159 defines it, one code point at a time, with where each folded unit came from. */
function reference(text: string): { text: string; from: number[] } {
  let out = '';
  const from: number[] = [];
  for (let i = 0; i < text.length; ) {
    const cp = text.codePointAt(i)!;
    const size = cp > 0xffff ? 2 : 1;
    const original = text.slice(i, i + size);
    const folded = cp < 0x80 ? original : IGNORABLE.test(original) ? '' : original.normalize('NFKC');
    for (let k = 0; k < folded.length; k++) from.push(i);
    out += folded;
    i += size;
  }
  return { text: out, from };
}

const PIECES = ['a', 'SECRET ', 'x'.repeat(70), '\u200b', '\u00ad', '\uff11', '\uff21', '\ufb01', '\u2460', '\ufdfa', '\u{1d400}', '\u{1f600}', '\u00e9', 'e\u0301', '\u4e2d', '\u0130', '\ud800', '\udc00', '\u{e0041}', ' '];

describe('foldText (ADR 0159; cheaper walk, ADR 0165)', () => {
  it('folds as the one-code-point-at-a-time definition does, and maps every span back to the same characters', () => {
    let seed = 7;
    const random = (n: number): number => ((seed = (seed * 1103515245 + 12345) % 2147483648), seed % n);
    for (let round = 0; round < 400; round++) {
      let text = '';
      for (let k = random(40); k >= 0; k--) text += PIECES[random(PIECES.length)];
      const want = reference(text);
      const got = foldText(text);
      if (got === undefined) {
        assert.equal(want.text, text, JSON.stringify(text));
        continue;
      }
      assert.equal(got.text, want.text, JSON.stringify(text));
      for (let s = 0; s < want.text.length; s += 1 + random(3)) {
        const e = s + 1 + random(Math.min(8, want.text.length - s));
        const last = want.from[e - 1]!;
        const end = last + (text.codePointAt(last)! > 0xffff ? 2 : 1);
        assert.deepEqual(got.back({ start: s, end: e }), { start: want.from[s]!, end }, `${JSON.stringify(text)} ${s}-${e}`);
      }
    }
  });

  it('a long text pays for the characters that fold, not for its length (2 MiB, the request body limit)', () => {
    const cases = ['a'.repeat(2 * 1024 * 1024) + '\u200b', '\u4e2d'.repeat(1024 * 1024) + '\uff11', ('x'.repeat(500) + '\uff11').repeat(4000)];
    for (const text of cases) {
      let best = Infinity;
      for (let round = 0; round < 3; round++) {
        const t0 = performance.now();
        assert.ok(foldText(text));
        best = Math.min(best, performance.now() - t0);
      }
      // The walk of ADR 0159 took over 100 ms for each of these; now a few.
      assert.ok(best < 60, `${best} ms`);
    }
  });
});
