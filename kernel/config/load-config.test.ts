import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { blankOrCommentsOnly } from './load-config.ts';

describe('blankOrCommentsOnly (the empty config file check, ADR 0185)', () => {
  it('is true for blank text and comment lines only, false once any other line appears', () => {
    for (const text of ['', '   \n\t\n', '# a\n#b\n  # c', '#\r\n\r\n#x', '\n\n#only']) assert.equal(blankOrCommentsOnly(text), true, JSON.stringify(text));
    for (const text of ['binds: []', '# a\nbinds: []', '  x', '#a\n\n  y # b']) assert.equal(blankOrCommentsOnly(text), false, JSON.stringify(text));
  });

  it('stays linear over comment banners full of `#` and spaces (a regex took 10 s for eight such lines)', () => {
    const banner = `${'#'.repeat(64)}\n${'# note: see #1 and #2\n'.repeat(40)}${'#'.repeat(64)}\n`;
    assert.equal(blankOrCommentsOnly(`${banner}binds: []\n`), false);
    assert.equal(blankOrCommentsOnly(banner.repeat(1000)), true);
  });
});
