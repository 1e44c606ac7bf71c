// Virtual-key budgets shared by two gateway processes (issue 13 item 4, ADR 0035): an in-process gateway and a
// `switchyard` child process on one store, the embedded SQLite file and a real redis-server (started and stopped
// here) and a real PostgreSQL server (initdb in a temp dir, stopped after). Keys are made, used and revoked with the `switchyard keys` CLI on either admin address and take effect on
// both gateways at once; N concurrent requests spread over both cannot overshoot a shared team budget by more than
// one request's estimate. Real `openai` client against aimock ("hello" = 11 + 5 = 16 tokens, prompt estimate 2).
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import OpenAI from 'openai';
import { stringify } from 'yaml';
import { BIN, ROOT, runCli } from '../helpers/cli.ts';
import { childEnv, startCli } from '../helpers/cli-process.ts';
import type { RunningCli } from '../helpers/cli-process.ts';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { locatePostgres, startPostgres } from '../helpers/postgres.ts';
import type { RunningPostgres } from '../helpers/postgres.ts';
import { redisSkip, startRedis } from '../helpers/redis.ts';
import type { RunningRedis } from '../helpers/redis.ts';
import { aiPreset, rejection, startMock } from './harness.ts';
import type { Mock } from './harness.ts';
import { testTempDir } from '../helpers/temp-dir.ts';
import { LAZY_MS } from '../../plugins/lib/key-store/lazy-sums.ts';

const TEAM_LIMIT = 200;
const ESTIMATE = 2 + 20; // prompt estimate + max_tokens

const pgFound = locatePostgres();

for (const kind of ['sqlite', 'redis', 'postgres'] as const) {
  const skip =
    kind === 'redis' && redisSkip ? redisSkip : kind === 'postgres' && 'skip' in pgFound ? pgFound.skip : false;
  describe(`virtualKeys shared by two gateway processes (${kind})`, { skip }, () => {
    let mock: Mock;
    let dir: string;
    let redis: RunningRedis | undefined;
    let postgres: RunningPostgres | undefined;
    let a: RunningGateway;
    let b: RunningCli;
    const bases: string[] = [];
    const admins: string[] = [];

    before(async () => {
      mock = await startMock();
      dir = testTempDir(`switchyard-vk-${kind}-`);
      let store: Record<string, unknown>;
      if (kind === 'redis') {
        redis = await startRedis();
        store = { redis: { url: redis.url, prefix: 'test:' } };
      } else if (kind === 'postgres') {
        postgres = await startPostgres(pgFound as { initdb: string; postgres: string });
        store = { postgres: { url: postgres.url } };
      } else store = { sqlite: { path: join(dir, 'keys.db') } };
      const virtualKeys = { store, teams: [{ name: 'research', budgets: [{ tokens: TEAM_LIMIT, period: 'day' }] }] };
      const config = (port: number, adminAddr: string) => ({
        config: { adminAddr, statsAddr: 'off', readinessAddr: 'off', logging: { format: 'json' }, drainTimeout: '200ms' },
        binds: [{ port, listeners: [{ routes: [{ name: 'chat', matches: [{ path: { pathPrefix: '/' } }], backends: [{ ai: { name: 'openai', provider: { openAI: {} }, hostOverride: mock.hostPort } }], policies: { virtualKeys } }] }] }],
      });
      const [portA, portB, adminB] = [await freePort(), await freePort(), await freePort()];
      a = await startGateway(config(portA, '127.0.0.1:0'), { preset: aiPreset });
      const fileB = join(dir, 'b.yaml');
      writeFileSync(fileB, stringify(config(portB, `127.0.0.1:${adminB}`)));
      b = await startCli(process.execPath, [BIN, '-f', fileB], { cwd: dir, env: childEnv() });
      bases.push(`http://127.0.0.1:${portA}`, `http://127.0.0.1:${portB}`);
      admins.push(a.adminUrl.replace('http://', ''), `127.0.0.1:${adminB}`);
    });
    after(async () => {
      await a?.stop();
      await b?.stop();
      await mock?.stop();
      await redis?.stop();
      await postgres?.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    const hello = (base: string, key: string, extra: Record<string, unknown> = {}) =>
      new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0 }).chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }], ...extra } as never) as Promise<OpenAI.ChatCompletion>;
    const keys = async (admin: string, ...args: string[]) => {
      const run = await runCli(['keys', ...args, '--admin', admin], { cwd: ROOT });
      assert.equal(run.code, 0, run.stderr);
      return run.stdout;
    };
    const teamUsed = async (admin: string, id: string): Promise<number> => {
      const shown = JSON.parse(await keys(admin, 'show', id, '--json')) as { usage: { scope: string; used: number }[] };
      return shown.usage.find((u) => u.scope === 'team:research')!.used;
    };

    it('a key made with `switchyard keys create` on one gateway works on both; revoked on the other, it stops on both', async () => {
      const out = await keys(admins[0]!, 'create', '--owner', 'frank@example.com', '--team', 'research', '--budget', 'requests=1000/minute');
      const [, id, secret] = /created key (\S+); its secret \(shown only now\):\n(\S+)/.exec(out)!;
      assert.match(secret!, /^sk-swy-/);
      // max_tokens keeps each reservation small (22): a settlement lands just after its answer, maybe after the next request.
      for (const base of bases) assert.equal((await hello(base, secret!, { max_tokens: 20 })).choices.length, 1);
      const listed = await keys(admins[1]!, 'list', '--team', 'research');
      assert.match(listed, new RegExp(`${id}\\s+frank@example.com\\s+research\\s+sk-swy-\\S+\\s+active\\s+api\\s+requests=1000/minute`));
      assert.ok(!listed.includes(secret!), 'never the secret');

      const rotated = /\n(sk-swy-\S+)/.exec(await keys(admins[1]!, 'rotate', id!))![1]!;
      for (const base of bases) {
        await rejection(hello(base, secret!), OpenAI.AuthenticationError);
        assert.equal((await hello(base, rotated, { max_tokens: 20 })).choices.length, 1);
      }
      await keys(admins[1]!, 'revoke', id!);
      for (const base of bases) assert.equal((await rejection(hello(base, rotated), OpenAI.AuthenticationError)).status, 401);
      for (const until = Date.now() + 5000; Date.now() < until && (await teamUsed(admins[0]!, id!)) !== 64; ) await sleep(25);
      const shown = await keys(admins[0]!, 'show', id!);
      assert.match(shown, /revoked/);
      assert.match(shown, /team:research\s+tokens=200\/day\s+64\s+136/, 'four answers of 16 tokens on the team budget');
      // Lifetime usage (ADR 0072): the four answers of both gateways, on the shared store, shown by either (a
      // gateway's own lifetime sums are written within about 2 × LAZY_MS, 10 s, when it is idle, or at once when it
      // reads them: ADR 0111).
      const lifetime = async (admin: string): Promise<number> => (JSON.parse(await keys(admin, 'show', id!, '--json')) as { lifetime: { tokens: number } }).lifetime.tokens;
      for (const admin of admins) {
        let tokens = 0;
        for (const until = Date.now() + 2 * LAZY_MS + 5000; Date.now() < until && (tokens = await lifetime(admin)) !== 64; ) await sleep(100);
        assert.equal(tokens, 64, 'four answers of 16 tokens, over both gateways');
      }
      assert.match(await keys(admins[1]!, 'show', id!), /lifetime: 64 tokens, \d/);
    });

    it('a key this gateway has just used (cached) and the other revokes is refused at once, with or without budgets', async () => {
      const make = async (body: Record<string, unknown>): Promise<{ id: string; secret: string }> => {
        const res = await fetch(`http://${admins[1]!}/keys`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
        assert.equal(res.status, 201);
        const made = (await res.json()) as { key: { id: string }; secret: string };
        return { id: made.key.id, secret: made.secret };
      };
      // One key has a budget (its request reserves); one has none (its request is only checked). No team: the team
      // budget is left to the next test.
      const budgeted = await make({ owner: 'heidi@example.com', budgets: [{ requests: 100, period: 'minute' }] });
      const free = await make({ owner: 'ivan@example.com' });
      for (const k of [budgeted, free]) {
        assert.equal((await hello(bases[0]!, k.secret, { max_tokens: 1 })).choices.length, 1);
        const res = await fetch(`http://${admins[1]!}/keys/${k.id}/revoke`, { method: 'POST' });
        assert.equal(res.status, 200);
        const refused = await rejection(hello(bases[0]!, k.secret, { max_tokens: 1 }), OpenAI.AuthenticationError);
        assert.equal(refused.status, 401);
        assert.match(String((refused.error as { message?: string } | undefined)?.message), /virtual key authentication failure/);
      }
    });

    it('N concurrent requests over both gateways cannot overshoot the shared team budget by more than one estimate', async () => {
      const out = await keys(admins[1]!, 'create', '--owner', 'grace@example.com', '--team', 'research');
      const [, id, secret] = /created key (\S+); its secret \(shown only now\):\n(\S+)/.exec(out)!;
      const before = await teamUsed(admins[0]!, id!);
      assert.equal(before, 64);
      const results = await Promise.allSettled(Array.from({ length: 30 }, (_, i) => hello(bases[i % 2]!, secret!, { max_tokens: 20 })));
      const ok = results.filter((r) => r.status === 'fulfilled').length;
      const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      assert.ok(refused.length > 0 && refused.every((r) => r.reason instanceof OpenAI.RateLimitError), 'the rest are 429');
      assert.ok(ok >= Math.ceil((TEAM_LIMIT - before) / ESTIMATE), `${ok} admitted`);
      let used = 0;
      for (const until = Date.now() + 5000; Date.now() < until; await sleep(25)) {
        used = await teamUsed(admins[1]!, id!);
        if (used === before + 16 * ok) break;
      }
      assert.equal(used, before + 16 * ok, 'every answer settled to its real usage, on one shared counter');
      assert.ok(used <= TEAM_LIMIT + ESTIMATE, `spent ${used} of ${TEAM_LIMIT}: overshoot bounded by one estimate`);
    });
  });
}

describe('virtualKeys with config.workers: 2 (one SQLite file, two worker threads)', () => {
  let mock: Mock;
  let dir: string;
  let cli: RunningCli;
  let base: string;
  let admin: string;

  before(async () => {
    mock = await startMock();
    dir = testTempDir('switchyard-vk-workers-');
    const [port, adminPort] = [await freePort(), await freePort()];
    const virtualKeys = { store: { sqlite: { path: join(dir, 'keys.db') } }, teams: [{ name: 'research', budgets: [{ tokens: TEAM_LIMIT, period: 'day' }] }] };
    writeFileSync(
      join(dir, 'gw.yaml'),
      stringify({
        config: { workers: 2, adminAddr: `127.0.0.1:${adminPort}`, statsAddr: 'off', readinessAddr: 'off', drainTimeout: '200ms' },
        binds: [{ port, listeners: [{ routes: [{ name: 'chat', matches: [{ path: { pathPrefix: '/' } }], backends: [{ ai: { name: 'openai', provider: { openAI: {} }, hostOverride: mock.hostPort } }], policies: { virtualKeys } }] }] }],
      }),
    );
    cli = await startCli(process.execPath, [BIN, '-f', join(dir, 'gw.yaml')], { cwd: dir, env: childEnv() });
    base = `http://127.0.0.1:${port}`;
    admin = `127.0.0.1:${adminPort}`;
  });
  after(async () => {
    await cli?.stop();
    await mock?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the supervisor serves /keys through a worker; both workers share the keys and the budget', async () => {
    const run = await runCli(['keys', 'create', '--team', 'research', '--admin', admin], { cwd: ROOT });
    assert.equal(run.code, 0, run.stderr);
    const secret = /\n(sk-swy-\S+)/.exec(run.stdout)![1]!;
    // A fresh client (and connection) per request, so SO_REUSEPORT spreads them over both workers.
    const results = await Promise.allSettled(
      Array.from({ length: 24 }, () => new OpenAI({ baseURL: `${base}/v1`, apiKey: secret, maxRetries: 0 }).chat.completions.create({ model: 'gpt-4o', max_tokens: 20, messages: [{ role: 'user', content: 'hello' }] })),
    );
    const ok = results.filter((r) => r.status === 'fulfilled').length;
    assert.ok(ok >= Math.ceil(TEAM_LIMIT / ESTIMATE) && ok < 24, `${ok} admitted`);
    const id = /created key (\S+);/.exec(run.stdout)![1]!;
    let used = 0;
    for (const until = Date.now() + 5000; Date.now() < until; await sleep(25)) {
      const shown = await runCli(['keys', 'show', id, '--json', '--admin', admin], { cwd: ROOT });
      used = (JSON.parse(shown.stdout) as { usage: { scope: string; used: number }[] }).usage.find((u) => u.scope === 'team:research')!.used;
      if (used === 16 * ok) break;
    }
    assert.equal(used, 16 * ok);
    assert.ok(used <= TEAM_LIMIT + ESTIMATE, `spent ${used} of ${TEAM_LIMIT}`);
  });
});
