import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { stringify } from 'yaml';
import apiKey from '../../plugins/policies/api-key/plugin.ts';
import basicAuth from '../../plugins/policies/basic-auth/plugin.ts';
import jwtAuth from '../../plugins/policies/jwt-auth/plugin.ts';
import { fullPresetWith } from '../helpers/preset.ts';
import { startGateway } from '../helpers/gateway.ts';
import { HTPASSWD } from '../helpers/htpasswd.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { testTempDir } from '../helpers/temp-dir.ts';
import { shaCrypt } from '../../plugins/policies/basic-auth/sha-crypt.ts';

const PRESET = fullPresetWith(jwtAuth, apiKey, basicAuth);

const SKIP = HTPASSWD ? false : 'htpasswd (Debian apache2-utils) is not installed: apt-get install -y apache2-utils';

/** One user per htpasswd format, each written by Debian's `htpasswd`. */
const USERS: readonly { user: string; password: string; flags: string[]; format: string }[] = [
  { user: 'alice', password: 'alice-Pw1', flags: ['-B', '-C', '5'], format: 'bcrypt' },
  { user: 'bob', password: 'bob-Pw2', flags: ['-m'], format: 'apr1-MD5' },
  { user: 'carol', password: 'carol-Pw3', flags: ['-s'], format: '{SHA}' },
  { user: 'dave', password: 'davePw4', flags: ['-d'], format: 'crypt' },
  { user: 'erin', password: 'erin-Pw5', flags: ['-2'], format: 'SHA-256-crypt' },
  { user: 'frank', password: 'frank-Pw6', flags: ['-5'], format: 'SHA-512-crypt' },
];

/** A password past the 1024 bytes basicAuth hashes (SHA-crypt's cost grows with its square), yet correctly hashed. */
const LONG_PASSWORD = 'L'.repeat(1025);

/**
 * Another process sends `argv[2]` requests at once (one connection each, `argv[4]` as Authorization) to port
 * `argv[1]`, path `argv[3]`, and prints each answer's status and, for a 503, its Retry-After and body.
 */
const FLOOD = `
const net = require('node:net');
const [port, n, path, auth] = [Number(process.argv[1]), Number(process.argv[2]), process.argv[3], process.argv[4]];
const answers = [];
for (let i = 0; i < n; i++) {
  const s = net.connect(port, '127.0.0.1', () => s.write('GET ' + path + ' HTTP/1.1\\r\\nHost: x\\r\\nAuthorization: ' + auth + '\\r\\nConnection: close\\r\\n\\r\\n'));
  let text = '';
  s.on('data', (d) => (text += d));
  s.on('close', () => {
    answers.push({ status: Number(text.split(' ')[1]), retryAfter: /retry-after: (\\S+)/i.exec(text)?.[1], body: text.slice(text.indexOf('\\r\\n\\r\\n') + 4) });
    if (answers.length === n) console.log(JSON.stringify(answers));
  });
}
`;

const basic = (user: string, password: string): string => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

describe('basicAuth', { skip: SKIP }, () => {
  let gw: RunningGateway;
  let port: number;
  let upstream: TestUpstream;
  let dir: string;
  let usersFile: string;

  async function call(path: string, headers: Record<string, string> = {}): Promise<Answer> {
    const res = await request(`${gw.url(port)}${path}`, { headers });
    return { status: res.statusCode, headers: res.headers, body: await res.body.text() };
  }
  const seen = () => upstream.received.at(-1)!.headers;

  function assertRejected(a: Answer, realm: string, message: string): void {
    assert.equal(a.status, 401, a.body);
    assert.equal(a.headers['www-authenticate'], `Basic realm="${realm}"`);
    assert.equal(a.headers['content-type'], 'application/json');
    assert.deepEqual(JSON.parse(a.body), { error: { type: 'authentication_failed', message: `basic authentication failure: ${message}` } });
  }

  /** Poll until `check` holds (the file watcher polls once a second). */
  async function eventually(check: () => Promise<boolean>, what: string): Promise<void> {
    for (let i = 0; i < 60; i++) {
      if (await check()) return;
      await sleep(100);
    }
    assert.fail(`timed out waiting for: ${what}`);
  }

  before(async () => {
    port = await freePort();
    upstream = await startUpstream();
    dir = testTempDir('switchyard-basic-');
    usersFile = join(dir, 'users.htpasswd');
    execFileSync('htpasswd', ['-cb', ...USERS[0]!.flags, usersFile, USERS[0]!.user, USERS[0]!.password], { stdio: 'pipe' });
    for (const u of USERS.slice(1)) execFileSync('htpasswd', ['-b', ...u.flags, usersFile, u.user, u.password], { stdio: 'pipe' });
    // htpasswd refuses passwords past 255 bytes: these users are hashed here, with the code checked against it above.
    const longFile = join(dir, 'long.htpasswd');
    writeFileSync(longFile, `long:${shaCrypt(LONG_PASSWORD, '$6$longsalt')}\nedge:${shaCrypt(LONG_PASSWORD.slice(1), '$6$edgesalt')}\n`);
    // A bcrypt cost that takes bcryptjs about 100 ms: what a flood of wrong passwords makes the gateway spend.
    const slowFile = join(dir, 'slow.htpasswd');
    execFileSync('htpasswd', ['-cbB', '-C', '10', slowFile, 'slow', 'slow-Pw8'], { stdio: 'pipe' });
    // A cheap hash first, then a costly one: an unknown user must not answer at the cheap one's speed.
    const mixedFile = join(dir, 'mixed.htpasswd');
    execFileSync('htpasswd', ['-cbm', mixedFile, 'quick', 'quick-Pw9'], { stdio: 'pipe' });
    execFileSync('htpasswd', ['-bB', '-C', '10', mixedFile, 'slow', 'slow-Pw8'], { stdio: 'pipe' });
    // Relative to the gateway's working directory (this process's cwd).
    const file = relative(process.cwd(), usersFile);
    const route = (name: string, policy: Record<string, unknown>, users = file) => ({
      name,
      matches: [{ path: { pathPrefix: `/${name}` } }],
      policies: { basicAuth: { htpasswd: { file: users }, ...policy }, transformations: { request: { set: { 'x-user': 'basicAuth.username' } } } },
      backends: [{ host: `127.0.0.1:${upstream.port}` }],
    });
    gw = await startGateway(
      {
        binds: [
          {
            port,
            listeners: [
              {
                routes: [
                  route('strict', { mode: 'strict', realm: 'Switchyard "test"' }),
                  route('optional', {}),
                  route('permissive', { mode: 'permissive' }),
                  route('long', { mode: 'strict' }, longFile),
                  route('slow', {}, slowFile),
                  route('mixed', {}, relative(process.cwd(), mixedFile)),
                  { name: 'open', matches: [{ path: { pathPrefix: '/open' } }], backends: [{ host: `127.0.0.1:${upstream.port}` }] },
                ],
              },
            ],
          },
        ],
      },
      { preset: PRESET },
    );
  });

  after(async () => {
    await gw?.stop();
    await upstream?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  for (const u of USERS) {
    it(`${u.format} (htpasswd ${u.flags[0]}): the right password passes, Authorization is stripped, basicAuth.username is set; a wrong one is 401`, async () => {
      const ok = await call('/strict', { authorization: basic(u.user, u.password) });
      assert.equal(ok.status, 200, ok.body);
      assert.equal(seen().authorization, undefined, 'DECIDED 6: the credential does not go upstream');
      assert.equal(seen()['x-user'], u.user);
      // Again: answered from the verified-credential cache.
      assert.equal((await call('/strict', { authorization: basic(u.user, u.password) })).status, 200);
      assertRejected(await call('/strict', { authorization: basic(u.user, `${u.password}x`) }), 'Switchyard \\"test\\"', 'invalid credentials');
      assertRejected(await call('/optional', { authorization: basic(u.user, 'wrong') }), 'Restricted', 'invalid credentials');
    });
  }

  it('unknown users, malformed credentials and another scheme', async () => {
    assertRejected(await call('/optional', { authorization: basic('mallory', 'alice-Pw1') }), 'Restricted', 'invalid credentials');
    assertRejected(await call('/optional', { authorization: 'Basic !!!notbase64' }), 'Restricted', 'invalid credentials');
    assertRejected(await call('/optional', { authorization: `Basic ${Buffer.from('no-colon').toString('base64')}` }), 'Restricted', 'invalid credentials');
    assertRejected(await call('/strict', { authorization: 'Bearer abc' }), 'Switchyard \\"test\\"', 'no basic authentication credentials found');
  });

  it('a password past 1024 bytes is refused unhashed, even the right one; up to 1024 bytes it is checked', async () => {
    // SHA-crypt hashes the password once per byte of it: 12 KiB (what fits in a header) blocked the event loop for
    // about 150 ms per request, for any user name (an unknown one is checked against the first user's hash).
    assertRejected(await call('/long', { authorization: basic('long', LONG_PASSWORD) }), 'Restricted', 'invalid credentials');
    const edge = await call('/long', { authorization: basic('edge', LONG_PASSWORD.slice(1)) });
    assert.equal(edge.status, 200, edge.body);
    assert.equal(seen()['x-user'], 'edge');
  });

  it('a flood of wrong passwords never stalls the gateway: slow hashes run one at a time, a bounded queue waits, the rest get 503', async () => {
    // bcryptjs works in slices of up to 100 ms, and ran every request's slice before the event loop read a socket
    // again: 200 wrong passwords at once held an unrelated request for about 27 s. The gateway runs in this process,
    // so the longest gap between two ticks of a 10 ms timer is how long it stopped serving anything.
    let longest = 0;
    let last = performance.now();
    const ticker = setInterval(() => {
      const now = performance.now();
      longest = Math.max(longest, now - last);
      last = now;
    }, 10);
    // From another process: a client in this one would wait on the same event loop.
    const out = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, ['-e', FLOOD, String(port), '100', '/slow', basic('slow', 'wrong')], { encoding: 'utf8' }, (err, stdout) => (err ? reject(err) : resolve(stdout))),
    );
    const answers = JSON.parse(out) as { status: number; retryAfter?: string; body: string }[];
    clearInterval(ticker);
    assert.ok(longest < 1000, `the event loop stalled for ${Math.round(longest)} ms`);
    const statuses = answers.map((a) => a.status);
    assert.ok(statuses.includes(401), 'the queued ones are checked');
    const busy = answers.filter((a) => a.status === 503);
    assert.ok(busy.length > 0, 'past the queue: 503');
    assert.equal(statuses.length, statuses.filter((s) => s === 401 || s === 503).length);
    assert.equal(busy[0]!.retryAfter, '1');
    assert.deepEqual(JSON.parse(busy[0]!.body), { error: { type: 'authentication_unavailable', message: 'basic authentication unavailable: too many passwords are being checked; retry shortly' } });
    // Once the flood is over, the right password is checked as usual.
    assert.equal((await call('/slow', { authorization: basic('slow', 'slow-Pw8') })).status, 200);
  });

  it('an unknown user costs what the costliest entry costs, not the first line\'s: the answer time does not tell who exists', async () => {
    // The file starts with an apr1 user (about 1 ms) and has a bcrypt cost-10 one (about 55 ms). An unknown user was
    // checked against the first line: 50 times faster than a wrong password of `slow`, so `slow` showed as existing.
    const timed = async (user: string): Promise<number> => {
      const times: number[] = [];
      for (let i = 0; i < 3; i++) {
        const t0 = performance.now();
        assertRejected(await call('/mixed', { authorization: basic(user, `wrong-${i}`) }), 'Restricted', 'invalid credentials');
        times.push(performance.now() - t0);
      }
      return times.sort((a, b) => a - b)[1]!;
    };
    const known = await timed('slow');
    const unknown = await timed('nobody');
    assert.ok(unknown > known / 2, `an unknown user took ${unknown.toFixed(1)} ms, a known bcrypt user ${known.toFixed(1)} ms`);
  });

  it('missing credentials: strict 401 with the realm; optional passes without a user', async () => {
    assertRejected(await call('/strict'), 'Switchyard \\"test\\"', 'no basic authentication credentials found');
    assert.equal((await call('/optional')).status, 200);
    assert.equal(seen()['x-user'], undefined);
  });

  it('permissive: wrong credentials pass (withheld from the upstream), right ones are accepted', async () => {
    assert.equal((await call('/permissive', { authorization: basic('bob', 'nope') })).status, 200);
    assert.equal(seen()['x-user'], undefined);
    assert.equal(seen().authorization, undefined);
    assert.equal((await call('/permissive', { authorization: basic('bob', 'bob-Pw2') })).status, 200);
    assert.equal(seen()['x-user'], 'bob');
  });

  it('the file is re-read when it changes: a new user works, a removed one stops working', async () => {
    execFileSync('htpasswd', ['-b', '-5', usersFile, 'gina', 'gina-Pw7'], { stdio: 'pipe' });
    await eventually(async () => (await call('/strict', { authorization: basic('gina', 'gina-Pw7') })).status === 200, 'gina accepted');
    assert.equal(seen()['x-user'], 'gina');
    execFileSync('htpasswd', ['-D', usersFile, 'gina'], { stdio: 'pipe' });
    await eventually(async () => (await call('/strict', { authorization: basic('gina', 'gina-Pw7') })).status === 401, 'gina removed');
    assert.ok(gw.logs.some((l) => l.includes('htpasswd file reloaded')));
  });

  it('a change that cannot be verified is logged with its line and ignored: the last good users keep working', async () => {
    const good = readFileSync(usersFile, 'utf8');
    const lines = good.trimEnd().split('\n').length;
    appendFileSync(usersFile, 'henry:henry-plaintext-pw\n');
    await eventually(async () => gw.logs.some((l) => l.includes('htpasswd file change ignored')), 'the bad change is logged');
    const logged = gw.logs.find((l) => l.includes('htpasswd file change ignored'))!;
    assert.match(logged, new RegExp(`users\\.htpasswd:${lines + 1}: the password of user .henry. is in a format that cannot be verified`));
    assert.ok(!logged.includes('henry-plaintext-pw'), 'the line content is not logged');
    assert.equal((await call('/strict', { authorization: basic('carol', 'carol-Pw3') })).status, 200);
    assertRejected(await call('/strict', { authorization: basic('henry', 'henry-plaintext-pw') }), 'Switchyard \\"test\\"', 'invalid credentials');
    writeFileSync(usersFile, good);
  });

  it('an unverifiable line at load is a config error naming the file line', async () => {
    const bad = join(dir, 'bad.htpasswd');
    writeFileSync(bad, `${readFileSync(usersFile, 'utf8')}plain:plainpw\n# comment\nivan:$2x$05$${'a'.repeat(53)}\n`);
    const text = stringify({
      binds: [{ port, listeners: [{ routes: [{ policies: { basicAuth: { htpasswd: { file: bad } } }, backends: [{ host: '127.0.0.1:1' }] }] }] }],
    });
    const first = USERS.length + 1;
    await assert.rejects(gw.gateway.compile(text), (err: Error) => {
      assert.match(err.message, new RegExp(`bad\\.htpasswd:${first}: the password of user \`plain\` is in a format that cannot be verified \\(plaintext is not supported`));
      assert.match(err.message, new RegExp(`bad\\.htpasswd:${first + 2}: the password of user \`ivan\``));
      assert.match(err.message, /basicAuth\.htpasswd\.file/);
      assert.ok(!err.message.includes('plainpw'));
      return true;
    });
    await assert.rejects(gw.gateway.compile(text.replace(bad, join(dir, 'missing'))), /cannot read the htpasswd file .*missing.*: no such file/);
  });

  it('passwords appear neither in logs nor in /config_dump', async () => {
    const dump = await (await request(`${gw.adminUrl}/config_dump`)).body.text();
    assert.match(dump, /basicAuth/);
    for (const u of USERS) {
      assert.ok(!dump.includes(u.password));
      assert.ok(!gw.logs.some((l) => l.includes(u.password) || l.includes(basic(u.user, u.password))), `logs hold no password of ${u.user}`);
    }
  });
});
