import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { parseShaCryptSetting, shaCrypt, shaCryptAsync } from './sha-crypt.ts';
import { HTPASSWD } from '../../../test/helpers/htpasswd.ts';

// The test vectors published with Ulrich Drepper's specification "Unix crypt using SHA-256 and SHA-512".
const LONG = 'a very much longer text to encrypt.  This one even stretches over morethan one line.';
const VECTORS: readonly (readonly [string, string, string])[] = [
  ['$5$saltstring', 'Hello world!', '$5$saltstring$5B8vYYiY.CVt1RlTTf8KbXBH3hsxY/GNooZaBBGWEc5'],
  ['$5$rounds=10000$saltstringsaltstring', 'Hello world!', '$5$rounds=10000$saltstringsaltst$3xv.VbSHBb41AL9AvLeujZkZRBAwqFMz2.opqey6IcA'],
  ['$5$rounds=5000$toolongsaltstring', 'This is just a test', '$5$rounds=5000$toolongsaltstrin$Un/5jzAHMgOGZ5.mWJpuVolil07guHPvOW8mGRcvxa5'],
  ['$5$rounds=1400$anotherlongsaltstring', LONG, '$5$rounds=1400$anotherlongsalts$Rx.j8H.h8HjEDGomFU8bDkXm3XIUnzyxf12oP84Bnq1'],
  ['$5$rounds=77777$short', 'we have a short salt string but not a short password', '$5$rounds=77777$short$JiO1O3ZpDAxGJeaDIuqCoEFysAe1mZNJRs3pw0KQRd/'],
  ['$5$rounds=123456$asaltof16chars..', 'a short string', '$5$rounds=123456$asaltof16chars..$gP3VQ/6X7UUEW3HkBn2w1/Ptq2jxPyzV/cZKmF/wJvD'],
  ['$5$rounds=10$roundstoolow', 'the minimum number is still observed', '$5$rounds=1000$roundstoolow$yfvwcWrQ8l/K0DAWyuPMDNHpIVlTQebY9l/gL972bIC'],
  ['$6$saltstring', 'Hello world!', '$6$saltstring$svn8UoSVapNtMuq1ukKS4tPQd8iKwSMHWjl/O817G3uBnIFNjnQJuesI68u4OTLiBFdcbYEdFCoEOfaS35inz1'],
  [
    '$6$rounds=10000$saltstringsaltstring',
    'Hello world!',
    '$6$rounds=10000$saltstringsaltst$OW1/O6BYHV6BcXZu8QVeXbDWra3Oeqh0sbHbbMCVNSnCM/UrjmM0Dp8vOuZeHBy/YTBmSK6H9qs/y3RnOaw5v.',
  ],
  [
    '$6$rounds=5000$toolongsaltstring',
    'This is just a test',
    '$6$rounds=5000$toolongsaltstrin$lQ8jolhgVRVhY4b5pZKaysCLi0QBxGoNeKQzQ3glMhwllF7oGDZxUhx1yxdYcz/e1JSbq3y6JMxxl8audkUEm0',
  ],
  [
    '$6$rounds=1400$anotherlongsaltstring',
    LONG,
    '$6$rounds=1400$anotherlongsalts$POfYwTEok97VWcjxIiSOjiykti.o/pQs.wPvMxQ6Fm7I6IoYN3CmLs66x9t0oSwbtEW7o7UmJEiDwGqd8p4ur1',
  ],
  [
    '$6$rounds=77777$short',
    'we have a short salt string but not a short password',
    '$6$rounds=77777$short$WuQyW2YR.hBNpjjRhpYD/ifIw05xdfeEyQoMxIXbkvr0gge1a1x3yRULJ5CCaUeOxFmtlcGZelFl5CxtgfiAc0',
  ],
  [
    '$6$rounds=123456$asaltof16chars..',
    'a short string',
    '$6$rounds=123456$asaltof16chars..$BtCwjqMJGx5hrJhZywWvt0RLE8uZ4oPwcelCjmw2kSYu.Ec6ycULevoBK25fs2xXgMNrCzIMVcgEJAstJeonj1',
  ],
  [
    '$6$rounds=10$roundstoolow',
    'the minimum number is still observed',
    '$6$rounds=1000$roundstoolow$kUMsbe306n21p9R.FRkW3IGn.S9NPN0x50YhH1xhLsPuWGsUSklZt58jaTfF4ZEQpyUNGc0dqbpBYYBaHHrsX.',
  ],
];


describe('SHA-crypt', () => {
  it('reproduces every published test vector of the specification', () => {
    for (const [setting, key, expected] of VECTORS) assert.equal(shaCrypt(key, setting), expected, setting);
  });

  it('verifies a full hash used as the setting (what an htpasswd check does), async too', async () => {
    for (const [, key, expected] of VECTORS.slice(0, 3)) {
      assert.equal(shaCrypt(key, expected), expected);
      assert.equal(await shaCryptAsync(key, expected), expected);
      assert.notEqual(await shaCryptAsync(`${key}x`, expected), expected);
    }
  });

  it('parses settings: default and clamped rounds, salt cut at 16 characters; not SHA-crypt → undefined', () => {
    assert.deepEqual(parseShaCryptSetting('$6$abc'), { variant: '6', rounds: 5000, customRounds: false, salt: 'abc' });
    assert.equal(parseShaCryptSetting('$5$rounds=9999999999$x')!.rounds, 999_999_999);
    assert.equal(parseShaCryptSetting('$5$0123456789abcdefXYZ$hash')!.salt, '0123456789abcdef');
    assert.equal(shaCrypt('pw', '$1$abc$'), undefined);
    assert.equal(shaCrypt('pw', 'plain'), undefined);
  });

  it('matches Debian htpasswd -2 and -5 output (also with -r rounds and non-ASCII passwords)', { skip: HTPASSWD ? false : 'htpasswd (Debian apache2-utils) is not installed: apt-get install -y apache2-utils' }, () => {
    for (const [flag, password, extra] of [
      ['-2', 'erinpw', []],
      ['-5', 'erinpw', []],
      ['-5', 'pässwörd with spaces', []],
      ['-2', 'x', ['-r', '1234']],
      ['-5', 'a'.repeat(100), ['-r', '20000']],
    ] as const) {
      const line = execFileSync('htpasswd', ['-nb', flag, ...extra, 'erin', password], { encoding: 'utf8' }).trim();
      const hash = line.slice('erin:'.length);
      assert.equal(shaCrypt(password, hash), hash, `${flag} ${extra.join(' ')}`);
      assert.notEqual(shaCrypt(`${password}!`, hash), hash);
    }
  });
});
