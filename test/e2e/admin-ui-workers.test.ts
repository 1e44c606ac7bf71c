// Issue 12 item 4 with `config.workers`: the supervisor answers the admin UI (config, validation through a worker),
// enforces `config.adminUi` credentials (read from the workers' compiled config, reloaded with it), and streams the
// live tail of every worker (each batches its requests, bounded, to the supervisor).
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse, stringify } from 'yaml';
import { BIN, ROOT } from '../helpers/cli.ts';
import { childEnv, startCli } from '../helpers/cli-process.ts';
import type { RunningCli } from '../helpers/cli-process.ts';
import { freePort } from '../helpers/ports.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

const BASIC = `Basic ${Buffer.from('admin:s3cret-passw0rd').toString('base64')}`;

/** One request on a fresh connection, so SO_REUSEPORT may hand it to either worker. */
function get(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { agent: false, headers: { connection: 'close' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('admin UI with workers', () => {
  let cli: RunningCli;
  let admin: string;
  let port: number;
  let file: string;
  let config: (password: string) => string;
  before(async () => {
    const [adminPort, statsPort, readinessPort] = [await freePort(), await freePort(), await freePort()];
    port = await freePort();
    admin = `http://127.0.0.1:${adminPort}`;
    file = join(testTempDir('switchyard-ui-workers-'), 'config.yaml');
    config = (password) =>
      stringify({
        config: {
          workers: 2,
          adminAddr: `127.0.0.1:${adminPort}`,
          statsAddr: `127.0.0.1:${statsPort}`,
          readinessAddr: `127.0.0.1:${readinessPort}`,
          drainTimeout: '1s',
          logging: { accessLog: false },
          adminUi: { basicAuth: { username: 'admin', password } },
        },
        binds: [{ port, listeners: [{ routes: [{ name: 'hello', policies: { directResponse: { status: 200, body: 'hi\n' } } }] }] }],
      });
    writeFileSync(file, config('s3cret-passw0rd'));
    cli = await startCli(process.execPath, [BIN, '-f', file], { cwd: ROOT, env: childEnv({ SWY_UI_WORKERS_SECRET: 'sk-worker-env-secret-42' }), readyMs: 90_000 });
  });
  after(() => cli?.stop());

  const auth = { authorization: BASIC };

  it('serves the page and the live config, and validates through a worker', async () => {
    assert.equal((await fetch(`${admin}/ui/`, { headers: auth })).status, 200);
    const dump = (await (await fetch(`${admin}/ui/api/config`, { headers: auth })).json()) as { workers: number; config: { binds: { listeners: { routes: { name: string }[] }[] }[] } };
    assert.equal(dump.workers, 2);
    assert.equal(dump.config.binds[0]!.listeners[0]!.routes[0]!.name, 'hello');
    const post = (text: string): Promise<Response> =>
      fetch(`${admin}/ui/api/validate`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ text }) });
    const bad = (await (await post('binds:\n- port: 8080\n  listeners:\n  - routes:\n    - policies:\n        directRespons: { status: 200 }\n')).json()) as { ok: boolean; errors: { line: number; col: number; path: string }[] };
    assert.equal(bad.ok, false);
    assert.deepEqual([bad.errors[0]!.line, bad.errors[0]!.col], [6, 9]);
    const good = (await (await post('binds:\n- port: 8080\n  listeners:\n  - routes:\n    - policies:\n        directResponse: { status: 204 }\n')).json()) as { ok: boolean };
    assert.equal(good.ok, true);
    // The worker validates without the gateway's environment, as a single process does (ADR 0124).
    const env = (await (await post('binds:\n- port: 8080\n  listeners:\n  - routes:\n    - policies:\n        directResponse: { status: 200, body: "${SWY_UI_WORKERS_SECRET}" }\n')).json()) as { ok: boolean; errors: { code: string; message: string }[] };
    assert.equal(env.ok, false);
    assert.equal(env.errors[0]!.code, 'SWY_ERR_CONFIG_ENV');
    assert.match(env.errors[0]!.message, /validates without the gateway's environment/);
    // Nor reads a file the paste names (ADR 0131): the worker's answer keeps its warnings.
    const file = (await (await post('binds:\n- port: 8080\n  listeners:\n  - routes:\n    - policies:\n        basicAuth: { htpasswd: { file: /etc/passwd } }\n        directResponse: { status: 204 }\n')).json()) as { ok: boolean; warnings: { code: string; path: string }[] };
    assert.equal(file.ok, true);
    assert.deepEqual(file.warnings.map((w) => [w.code, w.path]), [['SWY_ERR_CONFIG_UNCHECKED', 'binds[0].listeners[0].routes[0].policies.basicAuth.htpasswd.file']]);
  });

  it('enforces config.adminUi credentials, and a reload of them', async () => {
    const page = await fetch(`${admin}/ui/`);
    assert.equal(page.status, 401);
    assert.match(page.headers.get('www-authenticate') ?? '', /^Basic /);
    assert.equal((await fetch(`${admin}/ui/api/config`)).status, 401);
    assert.equal((await fetch(`${admin}/ui/api/tail`)).status, 401);
    assert.equal((await fetch(`${admin}/ui/api/config`, { headers: { authorization: `Basic ${Buffer.from('admin:wrong').toString('base64')}` } })).status, 401);
    // They guard the whole admin address, plugin endpoints answered by a worker included (ADR 0136).
    assert.equal((await fetch(`${admin}/config_dump`)).status, 401);
    assert.equal((await fetch(`${admin}/keys`, { method: 'POST' })).status, 401);
    assert.equal((await fetch(`${admin}/config_dump`, { headers: auth })).status, 200);
    writeFileSync(file, config('n3w-passw0rd-x'));
    await cli.waitFor(/config reloaded workers=2/, 30_000);
    assert.equal((await fetch(`${admin}/ui/`, { headers: auth })).status, 401, 'the old password no longer opens it');
    assert.equal((await fetch(`${admin}/config_dump`, { headers: auth })).status, 401, 'nor the rest of the admin address');
    assert.equal((await fetch(`${admin}/ui/`, { headers: { authorization: `Basic ${Buffer.from('admin:n3w-passw0rd-x').toString('base64')}` } })).status, 200);
    writeFileSync(file, config('s3cret-passw0rd'));
    await cli.waitFor(/config reloaded workers=2[\s\S]*config reloaded workers=2/, 30_000);
  });

  it('streams the requests of every worker in the live tail', async () => {
    const controller = new AbortController();
    const res = await fetch(`${admin}/ui/api/tail`, { headers: auth, signal: controller.signal });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    const seen = new Set<string>();
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    const read = (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += value;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const event = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = /^data: (.*)$/m.exec(event)?.[1];
          if (!data || event.startsWith('event:')) continue;
          for (const r of (JSON.parse(data) as { requests: Record<string, unknown>[] }).requests) seen.add(String(r['http.path']));
          if (seen.size >= 30) return;
        }
      }
    })();
    try {
      // The tail attaches to the workers by message: give it a moment before the requests.
      await new Promise((r) => setTimeout(r, 300));
      // Fresh connections: SO_REUSEPORT spreads them over both workers; every one must show in the one tail.
      for (let i = 0; i < 30; i += 10) assert.deepEqual(await Promise.all(Array.from({ length: 10 }, (_, k) => get(`http://127.0.0.1:${port}/hello?i=${i + k}`))), Array(10).fill(200));
      await Promise.race([read, new Promise((_, reject) => setTimeout(() => reject(new Error(`tail showed ${seen.size} of 30: ${[...seen].join(' ')}`)), 10_000))]);
      assert.equal(seen.size, 30);
    } finally {
      controller.abort();
      await read.catch(() => undefined);
    }
  });

  it('a validation takes no cell of the state the workers share (pasted rate limits would fill it for good)', async () => {
    // More distinct buckets than the arena has cells (4,096): each used to claim one, never freed.
    const buckets = Array.from({ length: 4200 }, (_, i) => ({ maxTokens: i + 1, tokensPerFill: 1, fillInterval: '1s' }));
    const paste = { binds: [{ port, listeners: [{ routes: [{ name: 'many', policies: { localRateLimit: buckets, directResponse: { status: 200 } } }] }] }] };
    const res = await fetch(`${admin}/ui/api/validate`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ text: JSON.stringify(paste) }) });
    assert.equal(((await res.json()) as { ok: boolean }).ok, true);
    // The live config's new limit is then one limit for the whole gateway, not one per worker.
    const reloads = (): number => cli.output().match(/config reloaded workers=2/g)?.length ?? 0;
    const before = reloads();
    const live = parse(config('s3cret-passw0rd')) as { binds: { listeners: { routes: { policies: Record<string, unknown> }[] }[] }[] };
    live.binds[0]!.listeners[0]!.routes[0]!.policies.localRateLimit = [{ maxTokens: 3, tokensPerFill: 1, fillInterval: '1h' }];
    writeFileSync(file, stringify(live));
    for (let i = 0; i < 300 && reloads() === before; i++) await new Promise((r) => setTimeout(r, 100));
    assert.ok(reloads() > before, 'the reload did not happen');
    const statuses = await Promise.all(Array.from({ length: 12 }, () => get(`http://127.0.0.1:${port}/hello`)));
    assert.equal(statuses.filter((s) => s === 200).length, 3, `statuses ${statuses.join(' ')}`);
    assert.doesNotMatch(cli.output(), /shared state is full/);
  });
});
