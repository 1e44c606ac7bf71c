// Issue 12 item 4 with `config.workers`: the supervisor answers the admin UI (config, validation through a worker);
// the live tail is not offered there yet (501).
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import { BIN, ROOT } from '../helpers/cli.ts';
import { childEnv, startCli } from '../helpers/cli-process.ts';
import type { RunningCli } from '../helpers/cli-process.ts';
import { freePort } from '../helpers/ports.ts';

describe('admin UI with workers', () => {
  let cli: RunningCli;
  let admin: string;
  before(async () => {
    const [port, adminPort, statsPort, readinessPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
    admin = `http://127.0.0.1:${adminPort}`;
    const file = join(mkdtempSync(join(tmpdir(), 'switchyard-ui-workers-')), 'config.yaml');
    writeFileSync(
      file,
      stringify({
        config: { workers: 2, adminAddr: `127.0.0.1:${adminPort}`, statsAddr: `127.0.0.1:${statsPort}`, readinessAddr: `127.0.0.1:${readinessPort}`, drainTimeout: '1s' },
        binds: [{ port, listeners: [{ routes: [{ name: 'hello', policies: { directResponse: { status: 200, body: 'hi\n' } } }] }] }],
      }),
    );
    cli = await startCli(process.execPath, [BIN, '-f', file], { cwd: ROOT, env: childEnv(), readyMs: 90_000 });
  });
  after(() => cli?.stop());

  it('serves the page and the live config, validates through a worker, and says the tail is not available', async () => {
    assert.equal((await fetch(`${admin}/ui/`)).status, 200);
    const dump = (await (await fetch(`${admin}/ui/api/config`)).json()) as { workers: number; config: { binds: { listeners: { routes: { name: string }[] }[] }[] } };
    assert.equal(dump.workers, 2);
    assert.equal(dump.config.binds[0]!.listeners[0]!.routes[0]!.name, 'hello');
    const post = (text: string): Promise<Response> => fetch(`${admin}/ui/api/validate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text }) });
    const bad = (await (await post('binds:\n- port: 8080\n  listeners:\n  - routes:\n    - policies:\n        directRespons: { status: 200 }\n')).json()) as { ok: boolean; errors: { line: number; col: number; path: string }[] };
    assert.equal(bad.ok, false);
    assert.deepEqual([bad.errors[0]!.line, bad.errors[0]!.col], [6, 9]);
    const good = (await (await post('binds:\n- port: 8080\n  listeners:\n  - routes:\n    - policies:\n        directResponse: { status: 204 }\n')).json()) as { ok: boolean };
    assert.equal(good.ok, true);
    assert.equal((await fetch(`${admin}/ui/api/tail`)).status, 501);
  });
});
