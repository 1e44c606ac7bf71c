// `switchyard keys --admin` takes `host:port` or a URL (docs/llm-economics.md): an https URL reaches an admin
// address behind TLS (docs/security.md advises TLS in front of one on a network); another scheme is refused by name.
import assert from 'node:assert/strict';
import { createServer } from 'node:https';
import type { Server } from 'node:https';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { childEnv, runCommand } from '../helpers/cli-process.ts';
import { makeTestPki } from '../helpers/pki.ts';
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
