// `switchyard keys --admin` takes `host:port` or a URL (docs/llm-economics.md): an https URL reaches an admin
// address behind TLS (docs/security.md advises TLS in front of one on a network); another scheme is refused by name.
import assert from 'node:assert/strict';
import { createServer } from 'node:https';
import type { Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { childEnv, runCommand } from '../helpers/cli-process.ts';
import { makeTestPki } from '../helpers/pki.ts';
import { freePort } from '../helpers/ports.ts';
import { adminBase } from '../../kernel/boot/keys-cli.ts';
import type { TestPki } from '../helpers/pki.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

describe('switchyard keys --admin URL', () => {
  let pki: TestPki;
  let server: Server;
  let port: number;
  const paths: string[] = [];
  before(async () => {
    pki = makeTestPki({ serverName: '127.0.0.1', serverAltNames: ['IP:127.0.0.1'], label: 'keys-cli' });
    server = createServer({ cert: readFileSync(pki.serverCert), key: readFileSync(pki.serverKey) }, (req, res) => {
      paths.push(req.url!);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [{ id: 'vk_tls', owner: 'ann', team: 't', prefix: 'sk-1', source: 'api', budgets: [] }] }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    pki.remove();
  });

  const keys = (...args: string[]): ReturnType<typeof runCommand> =>
    runCommand(process.execPath, [`${ROOT}bin/switchyard.js`, 'keys', ...args], { cwd: ROOT, env: childEnv({ NODE_EXTRA_CA_CERTS: pki.ca }), timeout: 60_000 });

  it('an https admin URL is reached over TLS', async () => {
    const run = await keys('list', '--admin', `https://127.0.0.1:${port}`);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /vk_tls +ann/);
    assert.deepEqual(paths, ['/keys']);
  });

  it('another scheme is refused with a message naming what --admin takes', async () => {
    const run = await keys('list', '--admin', 'ftp://127.0.0.1:21');
    assert.equal(run.code, 1);
    assert.match(run.stderr, /--admin takes host:port or an http\(s\) URL, got `ftp:\/\/127\.0\.0\.1:21`/);
  });
});

// A first `switchyard keys create` against a gateway whose admin address is not the default (examples/llm-economics.yaml
// serves it on 15600) must say which address it tried and why that one, not only ECONNREFUSED.
describe('switchyard keys: an admin address nobody answers on names where it came from', () => {
  const run = (args: string[], env: Record<string, string> = {}): ReturnType<typeof runCommand> =>
    runCommand(process.execPath, [`${ROOT}bin/switchyard.js`, 'keys', 'list', ...args], { cwd: ROOT, env: childEnv(env), timeout: 60_000 });

  it('--admin, ADMIN_ADDR and -f FILE are each named, with the way to give another', async () => {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'keys-cli-addr-'));
    try {
      const file = join(dir, 'gw.yaml');
      writeFileSync(file, `config:\n  adminAddr: 127.0.0.1:${port}\n`);
      const cases: [string[], Record<string, string>, RegExp][] = [
        [['--admin', `127.0.0.1:${port}`], {}, /\(given by --admin\)/],
        [[], { ADMIN_ADDR: `127.0.0.1:${port}` }, /\(given by ADMIN_ADDR\)/],
        [['-f', file], {}, /\(the adminAddr of .*gw\.yaml\)/],
      ];
      for (const [args, env, source] of cases) {
        const r = await run(args, env);
        assert.equal(r.code, 1, r.stderr);
        assert.match(r.stderr, new RegExp(`cannot reach the admin address http://127\\.0\\.0\\.1:${port} `));
        assert.match(r.stderr, source);
        assert.match(r.stderr, /ECONNREFUSED/);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the default address says it is the default and how to name the gateway\'s; an empty ADMIN_ADDR is unset', async () => {
    await withConfigFile('binds: []\n', { ADMIN_ADDR: '' }, async (file) => {
      // ADMIN_ADDR set to nothing in a shell profile: no address, as for ADMIN_API_KEY.
      assert.deepEqual(await adminBase({}), { base: 'http://127.0.0.1:15000', from: 'the default; name the gateway\'s with --admin ADDR, ADMIN_ADDR or -f FILE' });
      assert.deepEqual(await adminBase({ file }), { base: 'http://127.0.0.1:15000', from: `the default: ${file} sets no adminAddr; name the gateway's with --admin ADDR or ADMIN_ADDR` });
    });
  });

  // `${VAR}` is expanded in every config value (README), adminAddr too: `-f` read it unexpanded ("Invalid URL").
  it('-f FILE expands `${VAR}` in adminAddr as the gateway does; an unset one is named', async () => {
    await withConfigFile('config:\n  adminAddr: ${SY_KEYS_TEST_ADMIN:-127.0.0.1:15999}\n', { SY_KEYS_TEST_ADMIN: undefined }, async (file) => {
      assert.equal((await adminBase({ file })).base, 'http://127.0.0.1:15999');
      process.env.SY_KEYS_TEST_ADMIN = '127.0.0.1:16001';
      assert.equal((await adminBase({ file })).base, 'http://127.0.0.1:16001');
      writeFileSync(file, 'config:\n  adminAddr: ${SY_KEYS_TEST_UNSET_VAR}\n');
      await assert.rejects(adminBase({ file }), /SY_KEYS_TEST_UNSET_VAR/);
    });
  });

  // The operator's shell rarely has the gateway's provider keys: an unset variable elsewhere is no concern of `keys`.
  it('-f FILE ignores an unset `${VAR}` outside adminAddr', async () => {
    const text = 'config:\n  adminAddr: 127.0.0.1:16002\nllm:\n  providers:\n    - name: openai\n      apiKey: ${SY_KEYS_TEST_UNSET_KEY}\n';
    await withConfigFile(text, { SY_KEYS_TEST_UNSET_KEY: undefined }, async (file) => {
      assert.equal((await adminBase({ file })).base, 'http://127.0.0.1:16002');
    });
  });
});

/** Run `fn` with a config file holding `text` and these variables set (undefined: unset); both put back after. */
async function withConfigFile(text: string, env: Record<string, string | undefined>, fn: (file: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'keys-cli-addr-'));
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  const put = (values: Record<string, string | undefined>): void => {
    for (const [k, v] of Object.entries(values)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };
  try {
    const file = join(dir, 'gw.yaml');
    writeFileSync(file, text);
    put(env);
    await fn(file);
  } finally {
    put(saved);
    rmSync(dir, { recursive: true, force: true });
  }
}
