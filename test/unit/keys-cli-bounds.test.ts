// `switchyard keys` reads the admin address's answers with a cap (docs/security.md "Bounded reads of what a peer
// sends"): an address that answers without end is an error, not a CLI that grows until it runs out of memory.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runClosingStdoutEarly } from '../helpers/cli-process.ts';
import { keysMain } from '../../kernel/boot/keys-cli.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';

describe('switchyard keys: answers of the admin address are read bounded', () => {
  let huge: TestUpstream;
  let small: TestUpstream;
  let hugeClosedEarly = false;

  before(async () => {
    // Valid JSON (a key list with a long pad) 16 MiB past the cap: without the cap the command reads it all and
    // succeeds, so this test fails on a CLI that reads without a bound; written as fast as the socket drains.
    huge = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(1024 * 1024, 'x');
      let left = 64 + 16; // MiB: the cap is 64 MiB
      res.write('{"keys":[],"pad":"');
      const pump = (): void => {
        while (!res.destroyed && left > 0) {
          left--;
          if (!res.write(chunk)) return;
        }
        if (left === 0 && !res.writableEnded) res.end('"}');
      };
      res.on('drain', pump);
      res.on('close', () => (hugeClosedEarly = left > 0));
      pump();
    });
    small = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: [{ id: 'k1', owner: 'ann', team: 't', prefix: 'sk-1', source: 'api', budgets: [] }] }));
    });
  });
  after(async () => {
    await huge?.close();
    await small?.close();
  });

  it('an answer past 64 MiB: exit 1, a message naming the limit, the connection given up', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await keysMain(['list', '--admin', `127.0.0.1:${huge.port}`], (s) => out.push(s), (s) => err.push(s));
    assert.equal(code, 1, `stdout: ${out.join('').slice(0, 200)}`);
    assert.match(err.join(''), /larger than 64 MiB, the limit of this command/);
    assert.equal(out.join(''), '');
    // The CLI stopped reading: the upstream's write ended with the connection closed before the whole body went.
    for (let i = 0; i < 100 && !hugeClosedEarly; i++) await new Promise((r) => setTimeout(r, 50));
    assert.ok(hugeClosedEarly, 'the connection closed before the whole answer was sent');
  });

  it('an answer under the cap is read and printed', async () => {
    const out: string[] = [];
    const err: string[] = [];
    assert.equal(await keysMain(['list', '--admin', `127.0.0.1:${small.port}`], (s) => out.push(s), (s) => err.push(s)), 0, err.join(''));
    assert.match(out.join(''), /^ID +OWNER/);
    assert.match(out.join(''), /k1 +ann/);
  });
});

// `switchyard keys list | head` (a long list, a reader that stops early) ended in an unhandled EPIPE stack, where
// `switchyard schema | head` ends quietly with 0.
describe('switchyard keys: output to a reader that stops early', () => {
  let many: TestUpstream;
  before(async () => {
    const keys = Array.from({ length: 5000 }, (_, i) => ({ id: `vk_${i}`, owner: `owner-${i}@example.com`, team: 't', prefix: 'sk-swy-x', source: 'api', budgets: [{ usd: 1, period: 'day' }] }));
    many = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys, total: keys.length }));
    });
  });
  after(async () => {
    await many?.close();
  });

  it('`keys list | head -1` ends quietly with 0', async () => {
    const bin = fileURLToPath(new URL('../../bin/switchyard.js', import.meta.url));
    const { code, stderr } = await runClosingStdoutEarly(process.execPath, [bin, 'keys', 'list', '--admin', `127.0.0.1:${many.port}`]);
    assert.equal(code, 0, stderr);
    assert.equal(stderr, '');
  });
});

// An admin address guarded by `adminUi.basicAuth` alone asks for a user and password (a Basic challenge), which this
// command cannot send: "set ADMIN_API_KEY to its config.adminUi.apiKey" named a key such a config does not have.
describe('switchyard keys: an admin address asking for basicAuth', () => {
  let basic: TestUpstream;
  before(async () => {
    basic = await startUpstream((_req, res) => {
      res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Basic realm="switchyard admin", charset="UTF-8"' });
      res.end('{"error":{"message":"unauthorized"}}');
    });
  });
  after(async () => {
    await basic?.close();
  });

  it('says the command sends an apiKey only, and that one is to be added beside basicAuth', async () => {
    const err: string[] = [];
    const saved = process.env.ADMIN_API_KEY;
    delete process.env.ADMIN_API_KEY;
    try {
      assert.equal(await keysMain(['list', '--admin', `127.0.0.1:${basic.port}`], () => undefined, (s) => err.push(s)), 1);
    } finally {
      if (saved !== undefined) process.env.ADMIN_API_KEY = saved;
    }
    assert.match(err.join(''), /needs credentials: set ADMIN_API_KEY \(or --admin-key\) to its config\.adminUi\.apiKey \(this command cannot send basicAuth's user and password: a config with basicAuth alone needs an apiKey too\)/);
  });
});
