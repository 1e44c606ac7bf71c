import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { assembleSchema, PluginRegistry } from 'switchyard';
import { fullPreset } from '../../plugins/presets/full.ts';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import stampPlugin from './fixtures/neutral-alias-plugin.ts';
import { compileError, headlines, yaml } from './helpers.ts';

// A plugin's `aliases` (the neutral words of NAMES.md) are accepted wherever its key is; the gateway then speaks
// of the real key (issue 2 "Plugin SDK and registry", BEHAVIOUR.md §1).

const PRESET = [...fullPreset, stampPlugin];

const stampedRoute = (name: string, spelling: string) => ({
  name,
  matches: [{ path: { exact: `/${name}` } }],
  policies: { [spelling]: { value: name }, directResponse: { status: 200, body: name } },
});

describe('neutral aliases', () => {
  let gw: RunningGateway;
  let port: number;

  before(async () => {
    port = await freePort();
    gw = await startGateway(
      { binds: [{ port, listeners: [{ routes: [stampedRoute('real', 'stampHeader'), stampedRoute('neutral', 'neutralWord')] }] }] },
      { preset: PRESET },
    );
  });
  after(() => gw.stop());

  it('the real key works', async () => {
    const res = await request(`${gw.url(port)}/real`);
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['x-stamp'], 'real');
    assert.equal(await res.body.text(), 'real');
  });

  it('the neutral alias works the same', async () => {
    const res = await request(`${gw.url(port)}/neutral`);
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['x-stamp'], 'neutral');
    assert.equal(await res.body.text(), 'neutral');
  });

  it('/config_dump shows the real key, never the alias', async () => {
    const res = await request(`${gw.adminUrl}/config_dump`);
    assert.equal(res.statusCode, 200);
    const dump = (await res.body.json()) as { config: { binds: { listeners: { routes: { policies: Record<string, unknown> }[] }[] }[] } };
    const routes = dump.config.binds[0]!.listeners[0]!.routes;
    for (const r of routes) {
      assert.deepEqual(Object.keys(r.policies), ['stampHeader', 'directResponse']);
    }
    assert.deepEqual(routes[1]!.policies.stampHeader, { value: 'neutral' });
    assert.doesNotMatch(JSON.stringify(dump), /neutralWord/);
  });

  it('the assembled schema accepts both spellings and says which key the alias stands for', () => {
    const registry = new PluginRegistry();
    for (const p of PRESET) registry.register(p, { name: 'switchyard' });
    const schema = assembleSchema(registry.finalize()) as { $defs: Record<string, { properties: Record<string, { $ref: string; description: string }> }> };
    const slot = schema.$defs['slot.routePolicies']!.properties;
    assert.equal(slot.stampHeader!.$ref, '#/$defs/policy.stampHeader');
    assert.equal(slot.neutralWord!.$ref, '#/$defs/policy.stampHeader');
    assert.match(slot.neutralWord!.description, /^Same as `stampHeader` \(neutral name\)\./);
  });
});

describe('neutral aliases: errors', () => {
  const route = (...policyLines: string[]): string =>
    yaml('binds:', '  - port: 8080', '    listeners:', '      - routes:', '          - policies:', ...policyLines.map((l) => `              ${l}`));

  it('setting both the key and its alias is an error at the second spelling', async () => {
    const err = await compileError(route('stampHeader: { value: a }', 'neutralWord: { value: b }'), { preset: PRESET });
    assert.deepEqual(headlines(err), [
      'test.yaml:7:15: `neutralWord` and `stampHeader` are the same policy; set only one (at binds[0].listeners[0].routes[0].policies.neutralWord) [SWY_ERR_CONFIG_INVALID]',
    ]);
  });

  it('the same in the other order', async () => {
    const err = await compileError(route('neutralWord: { value: b }', 'stampHeader: { value: a }'), { preset: PRESET });
    assert.deepEqual(headlines(err), [
      'test.yaml:7:15: `stampHeader` and `neutralWord` are the same policy; set only one (at binds[0].listeners[0].routes[0].policies.stampHeader) [SWY_ERR_CONFIG_INVALID]',
    ]);
  });

  it('errors inside an aliased value keep the spelling the user wrote in the path', async () => {
    const err = await compileError(route('neutralWord: { value: 3 }'), { preset: PRESET });
    assert.deepEqual(headlines(err), [
      'test.yaml:6:37: must be a string, got number 3 (at binds[0].listeners[0].routes[0].policies.neutralWord.value) [SWY_ERR_CONFIG_SCHEMA]',
    ]);
  });

  it('a misspelled alias gets a did-you-mean', async () => {
    const err = await compileError(route('neutralWrd: { value: b }'), { preset: PRESET });
    assert.equal(err.issues[0]!.message, 'unknown policy `neutralWrd`; did you mean `neutralWord`?');
  });
});
