// `config.workers: 2` and files the config names (issue 11 item 2): an htpasswd file, a `jwks.file`, a backend
// key file, a listener's certificate and key are read once for the gateway, not once per worker: at start, on a change of the file (both workers
// take the new content), and not again on a config reload that leaves them unchanged. The supervisor runs in this
// process and counts shared loads (`switchyard_shared_loads_total`).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { connect } from 'node:tls';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as jose from 'jose';
import { Agent } from 'undici';
import { LogSink } from 'switchyard';
import { Supervisor } from '../../kernel/boot/supervisor.ts';
import { BIN } from '../helpers/cli.ts';
import { makeTestPki } from '../helpers/pki.ts';
import type { TestPki } from '../helpers/pki.ts';
import { freePort } from '../helpers/ports.ts';
import { getFresh as get, twoWorkersYaml } from '../helpers/workers.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

const ISSUER = 'https://idp.example';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sha = (password: string) => `{SHA}${createHash('sha1').update(password).digest('base64')}`;
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

describe('config.workers: 2, files the config names', () => {
  let supervisor: Supervisor;
  let port: number;
  let dir: string;
  let configFile: string;
  let upstream: TestUpstream;
  let token: string;
  let config: (probe: string, keyFile?: string) => string;
  let pki: TestPki;
  let tlsPort: number;

  before(async () => {
    port = await freePort();
    tlsPort = await freePort();
    pki = makeTestPki({ serverName: 'localhost', serverAltNames: ['DNS:localhost', 'IP:127.0.0.1'], label: 'workers-files' });
    dir = testTempDir('switchyard-workers-files-');
    upstream = await startUpstream();
    writeFileSync(join(dir, 'users.htpasswd'), `alice:${sha('alice-pw')}\n`);
    const { publicKey, privateKey } = await jose.generateKeyPair('ES256', { extractable: true });
    writeFileSync(join(dir, 'jwks.json'), JSON.stringify({ keys: [{ ...(await jose.exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' }] }));
    token = await new jose.SignJWT({ sub: 'bob' }).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).setIssuer(ISSUER).setAudience('orders').setExpirationTime('5m').sign(privateKey);
    writeFileSync(join(dir, 'key.txt'), 'upstream-token\n');
    config = (probe, keyFile = 'key.txt') => {
      const backend = [{ host: `127.0.0.1:${upstream.port}`, policies: { backendAuth: { key: { file: join(dir, keyFile) } } } }];
      return twoWorkersYaml([
          {
            port,
            listeners: [
              {
                routes: [
                  { name: 'basic', matches: [{ path: { pathPrefix: '/basic' } }], policies: { workerProbe: { value: probe }, basicAuth: { mode: 'strict', htpasswd: { file: join(dir, 'users.htpasswd') } } }, backends: backend },
                  { name: 'jwt', matches: [{ path: { pathPrefix: '/jwt' } }], policies: { workerProbe: { value: probe }, jwtAuth: { mode: 'strict', issuer: ISSUER, audiences: ['orders'], jwks: { file: join(dir, 'jwks.json') } } }, backends: backend },
                ],
              },
            ],
          },
          { port: tlsPort, listeners: [{ protocol: 'HTTPS', tls: { cert: pki.serverCert, key: pki.serverKey }, routes: [{ policies: { workerProbe: { value: probe }, directResponse: { status: 200, body: 'tls' } } }] }] },
      ]);
    };
    configFile = join(dir, 'config.yaml');
    writeFileSync(configFile, config('one'));
    supervisor = new Supervisor({ entry: BIN, config: { file: configFile }, count: 2, sink: new LogSink(() => undefined), watch: false });
    await supervisor.start();
  });

  after(async () => {
    await supervisor?.stop();
    await upstream?.close();
    pki?.remove();
  });

  const loads = (name: string) => supervisor.sharedLoads.get(`file:${join(dir, name)}`) ?? 0;
  const spread = async (path: string, headers: Record<string, string>) => {
    const answers = [];
    for (let i = 0; i < 20; i += 10) answers.push(...(await Promise.all(Array.from({ length: 10 }, () => get(`http://127.0.0.1:${port}${path}`, headers)))));
    return answers;
  };

  it('reads each file once for both workers at start', async () => {
    const users = await spread('/basic', { authorization: basic('alice', 'alice-pw') });
    assert.deepEqual([...new Set(users.map((a) => a.status))], [200]);
    assert.equal(new Set(users.map((a) => a.worker)).size, 2, 'both workers served');
    const tokens = await spread('/jwt', { authorization: `Bearer ${token}` });
    assert.deepEqual([...new Set(tokens.map((a) => a.status))], [200]);
    assert.ok(upstream.received.every((r) => r.headers.authorization === 'Bearer upstream-token'));
    assert.deepEqual([loads('users.htpasswd'), loads('jwks.json'), loads('key.txt')], [1, 1, 1]);
    // The listener's certificate and key (read by the kernel at load) too.
    assert.deepEqual([supervisor.sharedLoads.get(`file:${pki.serverCert}`), supervisor.sharedLoads.get(`file:${pki.serverKey}`)], [1, 1]);
    const tls = await fetch(`https://127.0.0.1:${tlsPort}/`, { dispatcher: new Agent({ connect: { ca: readFileSync(pki.ca) } }) } as RequestInit);
    assert.equal(await tls.text(), 'tls');
    assert.match(await supervisor.metrics(), /^switchyard_shared_loads_total\{kind="file"\} 5$/m);
  });

  it('reads a changed htpasswd file once, and both workers take the new users', async () => {
    writeFileSync(join(dir, 'users.htpasswd'), `alice:${sha('alice-pw')}\ncarol:${sha('carol-pw')}\n`);
    let answers: { status: number; worker: string }[] = [];
    for (let i = 0; i < 50; i++) {
      await sleep(200);
      answers = await spread('/basic', { authorization: basic('carol', 'carol-pw') });
      if (answers.every((a) => a.status === 200)) break;
    }
    assert.deepEqual([...new Set(answers.map((a) => a.status))], [200]);
    assert.equal(new Set(answers.map((a) => a.worker)).size, 2);
    // Each worker's watcher saw the change; one read for both.
    await sleep(1500);
    assert.equal(loads('users.htpasswd'), 2);
  });

  it('does not read unchanged files again on a config reload', async () => {
    writeFileSync(configFile, config('two'));
    assert.equal(await supervisor.reload(), true);
    const answers = await spread('/jwt', { authorization: `Bearer ${token}` });
    assert.ok(answers.every((a) => a.status === 200 && a.worker !== 'undefined'));
    assert.deepEqual([loads('users.htpasswd'), loads('jwks.json'), loads('key.txt')], [2, 1, 1]);
  });

  it('a listener certificate renewed on disk is served by every worker after a reload of the unchanged config (SIGHUP, ADR 0138)', async () => {
    const run = (...args: string[]) => execFileSync('/usr/bin/openssl', args, { cwd: pki.dir, stdio: 'ignore' });
    run('req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'renewed.key', '-out', 'renewed.csr', '-subj', '/CN=localhost');
    run('x509', '-req', '-in', 'renewed.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-set_serial', '9', '-days', '2', '-extfile', 'server.ext', '-out', 'renewed.pem');
    renameSync(join(pki.dir, 'renewed.pem'), pki.serverCert);
    renameSync(join(pki.dir, 'renewed.key'), pki.serverKey);
    assert.equal(await supervisor.reload(), false, 'the config did not change');
    const serials = await Promise.all(
      Array.from(
        { length: 12 },
        () =>
          new Promise<string>((resolve, reject) => {
            const s = connect({ host: '127.0.0.1', port: tlsPort, servername: 'localhost', ca: readFileSync(pki.ca) }, () => {
              resolve(s.getPeerCertificate().serialNumber);
              s.destroy();
            });
            s.on('error', reject);
          }),
      ),
    );
    assert.deepEqual([...new Set(serials)], ['09']);
  });

  /** Run `fn` with every message the supervisor sends its workers given to `spy` first (it may answer instead). */
  async function spied(spy: (message: { t: string; what?: string; checked?: boolean }) => Promise<unknown> | undefined, fn: () => Promise<void>): Promise<void> {
    type Ask = (slot: unknown, message: { t: string }, timeoutMs: number) => Promise<unknown>;
    const own = supervisor as unknown as { ask: Ask };
    const ask = own.ask.bind(supervisor);
    own.ask = (slot, message, timeoutMs) => spy(message) ?? ask(slot, message, timeoutMs);
    try {
      await fn();
    } finally {
      delete (own as { ask?: Ask }).ask;
    }
  }

  // Each worker started a check thread of its own on the same text (a 512 MiB heap and a schema compile each).
  it('a reload is checked once, by one worker: each worker compiles it without a check of its own', async () => {
    const sent: { t: string; checked?: boolean }[] = [];
    await spied(
      (m) => void sent.push(m),
      async () => {
        writeFileSync(configFile, config('three'));
        assert.equal(await supervisor.reload(), true);
      },
    );
    assert.equal(sent.filter((m) => m.t === 'check').length, 1);
    assert.deepEqual(sent.filter((m) => m.t === 'stage').map((m) => m.checked), [true, true]);
    // A text the check refuses is compiled by no worker.
    sent.length = 0;
    await spied(
      (m) => void sent.push(m),
      async () => {
        writeFileSync(configFile, config('four').replace('directResponse', 'directRespons'));
        assert.equal(await supervisor.reload(), false);
      },
    );
    assert.deepEqual(sent.map((m) => m.t).filter((t) => t !== 'query'), ['check']);
  });

  // The stamps were taken from the `statics` query after the reload only: when it failed, the old files stayed watched.
  it('follows the files a reloaded config read when the `statics` query after it gets no answer', async () => {
    writeFileSync(join(dir, 'key2.txt'), 'second-token\n');
    const noStatics = (m: { t: string; what?: string }) => (m.t === 'query' && m.what === 'statics' ? Promise.reject(new Error('no answer')) : undefined);
    await spied(noStatics, async () => {
      writeFileSync(configFile, config('five', 'key2.txt'));
      assert.equal(await supervisor.reload(), true);
    });
    // Edited in place; the watch is off here: a SIGHUP looks at the live config's files.
    writeFileSync(join(dir, 'key2.txt'), 'third-token\n');
    assert.equal(await supervisor.reload(), true, 'the edited key file reloads the config');
    upstream.received.length = 0;
    await spread('/basic', { authorization: basic('alice', 'alice-pw') });
    assert.deepEqual([...new Set(upstream.received.map((r) => r.headers.authorization))], ['Bearer third-token']);
  });
});
