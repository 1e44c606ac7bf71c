// ADR 0179: a reload (SIGHUP or a watched file's change) of a config with tens of thousands of problems is checked
// off the gateway's thread, like a paste (ADR 0172): the data plane keeps answering, the last good config stays, and
// the log holds the first 100 problems and the count of the rest.
import assert from 'node:assert/strict';
import { readdirSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { ConfigLoadError, createGateway, LogSink } from 'switchyard';
import { ValidatorCodeCache } from '../../kernel/config/validator-cache.ts';
import { FIRST_PARTY_KEYS } from '../../plugins/presets/catalog.ts';
import { fullPreset } from '../../plugins/presets/full.ts';
import { testTempDir } from '../helpers/temp-dir.ts';
import { logRecords, startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { requestsWhile } from '../helpers/loop-lateness.ts';
import { freePort } from '../helpers/ports.ts';

describe('a reload of a config with 20,000 problems', () => {
  let gw: RunningGateway;
  let port: number;
  before(async () => {
    port = await freePort();
    gw = await startGateway({ config: { logging: { format: 'json' } }, binds: [{ port, listeners: [{ routes: [{ name: 'hello', policies: { directResponse: { status: 200, body: 'hi' } } }] }] }] });
  });
  after(() => gw.stop());

  /** Write `route` 20,000 times as the config, reload, and time data-plane requests until the reload is over. */
  /**
   * `slowestMs`: the schema check runs wholly on its thread; a text that passes it is still parsed and validated on
   * the gateway's (its value is the snapshot's), some 0.3 s here for 20,000 routes, over 1 s at a load of 10 on 2 cores.
   */
  async function reloadMeasured(route: string, slowestMs = 1_000): Promise<{ errors: { message: string; line: number }[]; moreErrors: unknown }> {
    const routes = Array.from({ length: 20_000 }, () => route).join(',');
    writeFileSync(gw.file, `config: {adminAddr: '127.0.0.1:0', logging: {format: json}}\nbinds: [{port: ${port}, listeners: [{routes: [${routes}]}]}]\n`);
    const before = logRecords(gw).length;
    const reload = gw.gateway.reload();
    const latencies = await requestsWhile(reload, `http://127.0.0.1:${port}/`, 'hi');
    assert.equal(await reload, false);
    assert.ok(latencies.length >= 3, `only ${latencies.length} requests while the reload ran`);
    assert.ok(Math.max(...latencies) < slowestMs, `slowest data-plane request took ${Math.max(...latencies)} ms (${latencies.length} requests)`);
    assert.equal(await (await fetch(`http://127.0.0.1:${port}/`)).text(), 'hi');
    const failed = logRecords(gw)
      .slice(before)
      .find((r) => r.msg === 'config reload failed; keeping the last good config');
    assert.ok(failed, gw.logs.join('\n').slice(0, 2000));
    return failed as { errors: { message: string; line: number }[]; moreErrors: unknown };
  }

  it('schema problems: checked on a thread of its own, the data plane answers within a second', async () => {
    // Before: the schema check, its wording and a frame per problem ran on the gateway's thread, 4-5 s.
    const { errors, moreErrors } = await reloadMeasured('{policies: {directRespons: {status: 2}}}');
    assert.equal(errors.length, 100);
    assert.equal(moreErrors, 19_900);
    assert.match(errors[0]!.message, /unknown policy `directRespons`; did you mean `directResponse`\?/);
    assert.equal(errors[0]!.line, 2);
  });

  it('problems the plugins find (a CEL typo on every route): the first 100 logged, the rest counted', async () => {
    // Before: the compile held the loop throughout (its awaits yield to nothing), and every one of the 20,000 was
    // positioned, framed and logged in one line.
    const { errors, moreErrors } = await reloadMeasured('{policies: {authorization: {rules: ["request.pathh == \\"/\\""]}, directResponse: {status: 200}}}', 1_500);
    assert.equal(errors.length, 100);
    assert.equal(moreErrors, 19_900);
    assert.match(errors[99]!.message, /`request` has no field `pathh`; did you mean `path`\?/);
  });
});

// With the CLI's precompiled validator (ADR 0042) a valid reload was checked twice: on a thread (a schema compile of
// its own) and again on the gateway's. The precompiled code says "valid" in a few ms and words nothing.
describe('a valid reload with a precompiled validator', () => {
  it('starts no check thread and is validated once; an invalid one is still checked on a thread', async () => {
    const dir = testTempDir('switchyard-reload-check-');
    const text = (status: number): string => `binds:\n- port: 8080\n  listeners:\n  - routes:\n    - policies: {directResponse: {status: ${status}}}\n`;
    const gateway = createGateway(
      { preset: fullPreset, knownKeys: FIRST_PARTY_KEYS, config: { name: 'test.yaml', text: text(200) }, watch: false, env: {}, validatorCache: new ValidatorCodeCache(dir) },
      new LogSink(() => undefined),
    );
    await gateway.compile(text(200));
    // The code for this plugin set is written shortly after the first validation.
    for (let i = 0; i < 100 && !readdirSync(dir).some((f) => f.endsWith('.cjs')); i++) await sleep(50);
    let threads = 0;
    const counted = (): void => void threads++;
    process.on('worker', counted);
    try {
      assert.ok(await gateway.compile(text(201)));
      assert.equal(threads, 0, 'a valid reload started a check thread');
      await assert.rejects(gateway.compile(text(2)), (err) => err instanceof ConfigLoadError && /status/.test(err.message));
      assert.equal(threads, 1, 'an invalid reload is checked on a thread of its own');
    } finally {
      process.off('worker', counted);
    }
  });
});
