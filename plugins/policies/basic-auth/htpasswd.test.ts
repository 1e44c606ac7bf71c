import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { costliestEntry, detectFormat, HtpasswdStore, parseHtpasswd, verifyPassword } from './htpasswd.ts';
import type { HtpasswdEntry } from './htpasswd.ts';
import { HTPASSWD } from '../../../test/helpers/htpasswd.ts';

const SKIP = HTPASSWD ? false : 'htpasswd (Debian apache2-utils) is not installed: apt-get install -y apache2-utils';

const silent = { debug() {}, info() {}, warn() {}, error() {}, child: () => silent, isEnabled: () => false };

async function check(entry: HtpasswdEntry, password: string | Buffer): Promise<boolean> {
  return verifyPassword(entry, Buffer.isBuffer(password) ? password : Buffer.from(password, 'utf8'));
}

describe('htpasswd', () => {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-htpasswd-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('the costliest entry is the decoy for unknown users, wherever it sits in the file', () => {
    const pick = (...hashes: string[]): string | undefined =>
      costliestEntry(parseHtpasswd(hashes.map((h, i) => `u${i}:${h}`).join('\n')).entries)?.user;
    const sha1 = '{SHA}stOsjhQ+/Zr2RzmhAD8uggClG7Y=';
    const apr1 = '$apr1$9IbBBuJa$' + 'a'.repeat(22);
    const bcrypt5 = '$2y$05$' + 'a'.repeat(53);
    const bcrypt10 = '$2y$10$' + 'a'.repeat(53);
    const sha512 = '$6$salt$' + 'a'.repeat(86);
    assert.equal(pick(sha1, apr1, bcrypt10), 'u2');
    assert.equal(pick(bcrypt5, sha512), 'u1', 'SHA-512-crypt at 5000 rounds costs more than bcrypt at cost 5');
    assert.equal(pick(sha512, bcrypt10), 'u1');
    assert.equal(pick(apr1, 'c6Ca5XhgoXFzE', sha1), 'u0');
    assert.equal(costliestEntry(new Map()), undefined);
  });

  it('detects every supported format and refuses plaintext and unknown ones', () => {
    assert.equal(detectFormat('$2y$05$' + 'a'.repeat(53)), 'bcrypt');
    assert.equal(detectFormat('$apr1$9IbBBuJa$' + 'a'.repeat(22)), 'apr1');
    assert.equal(detectFormat('$1$abcdefgh$' + 'a'.repeat(22)), 'md5-crypt');
    assert.equal(detectFormat('{SHA}stOsjhQ+/Zr2RzmhAD8uggClG7Y='), 'sha1');
    assert.equal(detectFormat('c6Ca5XhgoXFzE'), 'crypt');
    assert.equal(detectFormat('$5$salt$' + 'a'.repeat(43)), 'sha256-crypt');
    assert.equal(detectFormat('$6$rounds=6000$salt$' + 'a'.repeat(86)), 'sha512-crypt');
    for (const bad of ['plainpw', '$2x$05$' + 'a'.repeat(53), '$argon2id$v=19$m=65536,t=3,p=4$abc$def', '{SHA}short', '']) {
      assert.equal(detectFormat(bad), undefined, bad);
    }
  });

  it('reports each unusable line by number and user, never the hash', () => {
    const { entries, problems } = parseHtpasswd(
      ['# users', 'carol:{SHA}stOsjhQ+/Zr2RzmhAD8uggClG7Y=', '', 'plain:secretpw', 'nocolon', ':c6Ca5XhgoXFzE', 'carol:c6Ca5XhgoXFzE', 'r:$5$rounds=10$s$' + 'a'.repeat(43)].join('\n'),
    );
    assert.deepEqual([...entries.keys()], ['carol']);
    assert.deepEqual(problems.map((p) => p.line), [4, 5, 6, 7, 8]);
    assert.match(problems[0]!.message, /user `plain`.*cannot be verified.*plaintext is not supported/);
    assert.ok(!problems[0]!.message.includes('secretpw'));
    assert.match(problems[3]!.message, /already defined on line 2/);
    assert.match(problems[4]!.message, /rounds=10/);
  });

  it('CRLF line ends and extra `:field`s are accepted', async () => {
    const { entries, problems } = parseHtpasswd('carol:{SHA}stOsjhQ+/Zr2RzmhAD8uggClG7Y=:comment\r\n');
    assert.deepEqual(problems, []);
    assert.equal(await check(entries.get('carol')!, 'carolpw'), true);
  });

  it('a byte-order mark (a file saved by a Windows editor) is not part of the first user name', () => {
    const { entries, problems } = parseHtpasswd('\uFEFFcarol:{SHA}stOsjhQ+/Zr2RzmhAD8uggClG7Y=\r\n');
    assert.deepEqual(problems, []);
    assert.deepEqual([...entries.keys()], ['carol']);
  });

  it('verifies what Debian htpasswd writes for each format; a wrong password fails', { skip: SKIP }, async () => {
    const file = join(dir, 'users');
    const users: [string, string, string[]][] = [
      ['alice', 'alicepw', ['-B', '-C', '5']],
      ['bob', 'bobpw', ['-m']],
      ['carol', 'carolpw', ['-s']],
      ['dave', 'davepw', ['-d']],
      ['erin', 'erinpw', ['-2']],
      ['frank', 'frankpw', ['-5']],
      ['gina', 'gïnä-pw', ['-m']],
    ];
    execFileSync('htpasswd', ['-cb', file, 'seed', 'seed'], { stdio: 'pipe' });
    for (const [user, pw, flags] of users) execFileSync('htpasswd', ['-b', ...flags, file, user, pw], { stdio: 'pipe' });
    const store = new HtpasswdStore(file, silent);
    assert.equal(await store.load(), undefined);
    const formats = Object.fromEntries([...store.entries.values()].map((e) => [e.user, e.format]));
    assert.deepEqual(formats, { seed: 'apr1', alice: 'bcrypt', bob: 'apr1', carol: 'sha1', dave: 'crypt', erin: 'sha256-crypt', frank: 'sha512-crypt', gina: 'apr1' });
    for (const [user, pw] of users) {
      const entry = store.entries.get(user)!;
      assert.equal(await check(entry, pw), true, `${user} (${entry.format}) right password`);
      assert.equal(await check(entry, `${pw}x`), false, `${user} (${entry.format}) wrong password`);
    }
    // DES crypt only reads 8 characters (a property of the format, not of this code).
    assert.equal(await check(store.entries.get('dave')!, 'davepw'), true);
  });

  it('a store keeps its last good content when a change does not parse', async () => {
    const file = join(dir, 'store');
    writeFileSync(file, 'carol:{SHA}stOsjhQ+/Zr2RzmhAD8uggClG7Y=\n');
    const store = new HtpasswdStore(file, silent);
    assert.equal(await store.load(), undefined);
    const version = store.version;
    writeFileSync(file, 'carol:plaintext\n');
    const problems = (await store.load())!;
    assert.match(problems[0]!, new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:1: the password of user \`carol\``));
    assert.equal(store.version, version);
    assert.ok(store.entries.has('carol'));
    rmSync(file);
    await assert.rejects(store.load(), /no such file/);
    assert.ok(store.entries.has('carol'));
  });

  it('a store reads the file again after a read that failed', async () => {
    const file = join(dir, 'comes-later');
    const store = new HtpasswdStore(file, silent);
    await assert.rejects(store.load(), /no such file/);
    writeFileSync(file, 'dave:{SHA}stOsjhQ+/Zr2RzmhAD8uggClG7Y=\n');
    assert.equal(await store.load(), undefined);
    assert.ok(store.entries.has('dave'));
  });
});
