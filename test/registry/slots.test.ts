// Open slots and variants (issue 10 item 1): a third-party package declares its own slot with `defineSlot`, fills it
// with `defineVariant`, names its entries in config errors, and hands compiled state from a policy to its backend
// with a typed facet; the kernel declares only routePolicies, backendPolicies and backend, so a trimmed distribution
// carries no MCP or LLM slots and no `config.session`.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { defineBackend, defineConfigSection, defineFacet, definePolicy, defineSlot, defineVariant, localReply } from 'switchyard/sdk';
import { assembleSchema } from '../../kernel/config/assemble-schema.ts';
import { buildRegistry } from '../../kernel/boot/build-registry.ts';
import { PluginRegistry } from '../../kernel/registry/registry.ts';
import { fullPreset } from '../../plugins/presets/full.ts';
import { minimalPreset } from '../../plugins/presets/minimal.ts';
import { startRoutesGateway } from '../helpers/gateway.ts';
import type { RoutesGateway } from '../helpers/gateway.ts';
import { BASIC_PRESET, compileError, headlines, summarize } from '../config/helpers.ts';

/** The contract of the `greeting` slot's variants. */
interface Greeting {
  greet(name: string): string;
}

const greetingSlot = defineSlot<Greeting>({ name: 'greeting', type: 'oneOf', accepts: 'variant', noun: 'greeting style', description: 'How a greeter greets.' });

const formal = defineVariant(greetingSlot, {
  key: 'formal',
  description: 'Good day.',
  schema: { type: 'object', additionalProperties: false, properties: { title: { type: 'string', description: 'Title before the name.' } } },
  compile: (config: { title?: string }) => ({ greet: (name: string) => `Good day, ${config.title ?? 'dear'} ${name}` }),
});

const casual = defineVariant(greetingSlot, {
  key: 'casual',
  description: 'Hi.',
  schema: { type: 'object', additionalProperties: false, properties: {}, description: 'No settings.' },
  compile: () => ({ greet: (name: string) => `hi ${name}` }),
});

// The instance contract is a type: a variant whose instance lacks `greet` does not compile.
defineVariant(greetingSlot, {
  key: 'broken',
  description: 'Not a greeting.',
  schema: {},
  // @ts-expect-error `wave` is not `greet`
  compile: () => ({ wave: () => 'o/' }),
});

/** What a `signature` policy hands to the greeter at compile time. */
const signatureFacet = defineFacet<string>('test.signature');

const signature = definePolicy<string>({
  key: 'signature',
  description: 'Signs greetings.',
  schema: { type: 'string', description: 'The signature.' },
  attach: ['routePolicies', 'backendPolicies'],
  phase: 'mutate',
  // No hook: the value reaches the backend at compile time.
  compile: (value) => ({ provides: [signatureFacet.of(value)] }),
});

/** `config.greetings`, a section of the static config the greeter owns. */
const greetingsSection = defineConfigSection<string>({
  name: 'greetings',
  schema: {
    type: 'object',
    description: 'Settings of every greeter.',
    properties: { punctuation: { type: 'string', description: 'Put after every greeting.' } },
    additionalProperties: false,
  },
  resolve: (raw) => (raw as { punctuation?: string } | undefined)?.punctuation ?? '',
});

/** A backend that owns the `greeting` slot: `greeter: { <style>: {…} }`. */
const greeter = defineBackend<Record<string, unknown>>({
  key: 'greeter',
  description: 'Greets the caller named by `?name=`.',
  schema: { 'x-slot': 'greeting', description: 'The greeting style: exactly one key.' },
  slots: [greetingSlot],
  configSections: [greetingsSection],
  async compile(config, ctx) {
    const punctuation = ctx.configSection(greetingsSection);
    const { key, instance } = await ctx.compileVariant(greetingSlot, config, []);
    const signed = ctx.policies.facet(signatureFacet);
    return {
      handle: (ex) => {
        const name = new URLSearchParams(ex.query.slice(1)).get('name') ?? 'you';
        return localReply(200, `${instance.greet(name)}${punctuation}${signed ? ` -- ${signed}` : ''}`, { 'x-style': key });
      },
    };
  },
});

const preset = [...BASIC_PRESET, greeter, formal, casual, signature];

describe('a slot a third-party backend declares, and its variants', () => {
  let gw: RoutesGateway;

  before(async () => {
    gw = await startRoutesGateway(
      [
        { name: 'formal', matches: [{ path: { pathPrefix: '/formal' } }], backends: [{ greeter: { formal: { title: 'Dr.' } } }] },
        { name: 'casual', matches: [{ path: { pathPrefix: '/casual' } }], policies: { signature: 'route' }, backends: [{ greeter: { casual: {} } }] },
        {
          name: 'both',
          matches: [{ path: { pathPrefix: '/both' } }],
          policies: { signature: 'route' },
          backends: [{ greeter: { casual: {} }, policies: { signature: 'backend' } }],
        },
      ],
      { preset, config: { greetings: { punctuation: '!' } } },
    );
  });

  after(async () => {
    await gw?.stop();
  });

  it('compiles the chosen variant through the slot and serves it, with the plugin\'s `config:` section resolved', async () => {
    const res = await request(`${gw.base}/formal?name=Ada`);
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['x-style'], 'formal');
    assert.equal(await res.body.text(), 'Good day, Dr. Ada!');
  });

  it('hands a policy value to the backend at compile time (typed facet); the backend level wins over the route', async () => {
    const route = await request(`${gw.base}/casual?name=Bo`);
    assert.equal(await route.body.text(), 'hi Bo! -- route');
    const both = await request(`${gw.base}/both?name=Bo`);
    assert.equal(await both.body.text(), 'hi Bo! -- backend');
  });

  it('names an unknown entry with the slot noun, positioned, with did-you-mean', async () => {
    const text = ['binds:', '- port: 8080', '  listeners:', '  - routes:', '    - backends:', '      - greeter: { formall: {} }', ''].join('\n');
    const err = await compileError(text, { preset });
    const [issue] = summarize(err.issues);
    assert.equal(issue!.at, 'test.yaml:6:20');
    assert.equal(issue!.path, 'binds[0].listeners[0].routes[0].backends[0].greeter.formall');
    assert.match(issue!.message, /^unknown greeting style `formall`; did you mean `formal`\?/);
    const two = await compileError(text.replace('{ formall: {} }', '{ formal: {}, casual: {} }'), { preset });
    assert.match(headlines(two).join('\n'), /only one of .*`formal`.*`casual`/);
  });

  it('refuses a `config:` section the gateway already defines, naming the package', async () => {
    const logging = defineConfigSection({ name: 'logging', schema: { type: 'object', description: 'Taken.' }, resolve: () => undefined });
    const greedy = defineBackend({ ...greeter, key: 'greedy', slots: [], configSections: [logging] });
    assert.throws(() => assembleSchema(registryOf([greedy])), /plugin `greedy` from switchyard contributes `config\.logging`, which the gateway or another plugin already defines/);
  });

  it('refuses a plugin of a kind it does not know (an older SDK\'s `guard` kind), saying how variants are made now', () => {
    const old = { ...casual, kind: 'guard' };
    assert.throws(() => new PluginRegistry().register(old, { name: 'old-guard@1.0.0' }), /plugin `casual` from old-guard@1\.0\.0 is of kind `guard`; .*defineVariant/);
  });

  it('refuses a slot declared twice with another shape', () => {
    const registry = new PluginRegistry();
    registry.register(greetingSlot, { name: 'pkg-a' });
    registry.register(defineSlot({ name: 'greeting', type: 'oneOf', accepts: 'variant', description: 'Same shape: the same slot.' }), { name: 'pkg-b' });
    assert.throws(
      () => registry.register(defineSlot({ name: 'greeting', type: 'map', accepts: 'policy', description: 'Another shape.' }), { name: 'pkg-c' }),
      /slot `greeting` is declared twice, differently: by pkg-a and by pkg-c/,
    );
  });
});

function registryOf(plugins: readonly unknown[]): PluginRegistry {
  const registry = new PluginRegistry();
  for (const p of plugins) registry.register(p, { name: 'switchyard' });
  return registry.finalize();
}

describe('the kernel declares only its own slots', () => {
  const slotDefs = (schema: Record<string, unknown>) =>
    Object.keys(schema.$defs as object)
      .filter((k) => k.startsWith('slot.'))
      .sort();
  const configKeys = (schema: Record<string, unknown>) => Object.keys(((schema.$defs as Record<string, { properties: object }>).staticConfig.properties));
  const timeoutKeys = (schema: Record<string, unknown>) =>
    (schema.$defs as Record<string, { properties: Record<string, { properties: object }> }>).staticConfig.properties.defaultTimeouts!.properties;

  it('a minimal distribution has no MCP, LLM or guard slots, no `config.session` and no LLM deadline', async () => {
    const schema = assembleSchema(await buildRegistry(minimalPreset, [], undefined));
    assert.deepEqual(slotDefs(schema), ['slot.backend', 'slot.backendPolicies', 'slot.routePolicies']);
    assert.ok(!configKeys(schema).includes('session'));
    // The kernel's `defaultTimeouts` holds its own deadlines only; the LLM one comes with the `ai` backend.
    assert.deepEqual(Object.keys(timeoutKeys(schema)), ['backendRequestTimeout', 'streamIdleTimeout']);
  });

  it('the full preset gets them from the plugins that own them, `config.session` from the `mcp` backend', async () => {
    const registry = await buildRegistry(fullPreset, [], undefined);
    const schema = assembleSchema(registry);
    assert.deepEqual(slotDefs(schema), [
      'slot.backend',
      'slot.backendAuth',
      'slot.backendPolicies',
      'slot.guard',
      'slot.llmProvider',
      'slot.mcpTargetPolicies',
      'slot.mcpTransport',
      'slot.routePolicies',
    ]);
    assert.ok(configKeys(schema).includes('session'));
    assert.deepEqual(Object.keys(timeoutKeys(schema)), ['backendRequestTimeout', 'streamIdleTimeout', 'llmBackendRequestTimeout', 'a2aBackendRequestTimeout']);
    assert.deepEqual(registry.slotNouns(), {
      routePolicies: 'policy',
      backendPolicies: 'backend policy',
      backend: 'backend kind',
      llmProvider: 'LLM provider',
      backendAuth: 'backendAuth variant',
      mcpTransport: 'MCP transport',
      mcpTargetPolicies: 'MCP target policy',
      guard: 'guard type',
    });
  });
});
