// `ai` backend configs: accepted spellings, and errors at the right place with words that point at the fix.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileError, compileValue, headlines, yaml } from '../config/helpers.ts';
import { aiPreset } from './harness.ts';

const ai = (...body: string[]): string =>
  yaml('binds:', '  - port: 8080', '    listeners:', '      - routes:', '          - backends:', '              - ai:', ...body.map((l) => `                  ${l}`));

const options = { preset: aiPreset };

describe('ai backend config', () => {
  it('accepts the neutral provider words as aliases and stores the real key', async () => {
    for (const [neutral, real, extra] of [
      ['vendorOne', 'openAI', ''],
      ['vendorTwo', 'gemini', ''],
      ['vendorThree', 'anthropic', ''],
      ['vendorFour', 'vertex', 'projectId: p'],
      ['vendorFive', 'bedrock', 'region: us-east-1'],
      ['vendorSix', 'azureOpenAI', 'host: r.openai.azure.com'],
    ] as const) {
      const fields = extra ? ['model: m', extra] : ['model: m'];
      const value = await compileValue(ai('name: x', 'provider:', `  ${neutral}:`, ...fields.map((f) => `    ${f}`), 'hostOverride: 127.0.0.1:9'), options);
      const routes = (value.binds as { listeners: { routes: { backends: { ai: { provider: Record<string, unknown> } }[] }[] }[] }[])[0]!.listeners[0]!.routes;
      assert.deepEqual(Object.keys(routes[0]!.backends[0]!.ai.provider), [real], `${neutral} → ${real}`);
    }
  });

  it('requires exactly one provider', async () => {
    const none = await compileError(ai('name: x', 'provider: {}'), options);
    assert.match(headlines(none)[0]!, /exactly one of `openAI`, .*`anthropic`.* is required/);
    const two = await compileError(ai('name: x', 'provider:', '  openAI: {}', '  anthropic: {}'), options);
    assert.match(headlines(two)[0]!, /only one of .* may be set, found `openAI` and `anthropic`/);
  });

  it('requires name and provider', async () => {
    const err = await compileError(ai('hostOverride: 127.0.0.1:9'), options);
    const lines = headlines(err).join('\n');
    assert.match(lines, /missing required key `name`/);
    assert.match(lines, /missing required key `provider`/);
  });

  it('rejects a hostOverride that is not host:port, at the value', async () => {
    const err = await compileError(ai('name: x', 'provider: { openAI: {} }', 'hostOverride: "not a host/path"'), options);
    assert.match(headlines(err)[0]!, /^test\.yaml:9:33: must be `host:port`.*\(at binds\[0\]\.listeners\[0\]\.routes\[0\]\.backends\[0\]\.ai\.hostOverride\)/);
  });

  it('needs the provider fields the spec requires', async () => {
    assert.match(headlines(await compileError(ai('name: x', 'provider: { azureOpenAI: { model: m } }'), options))[0]!, /missing required key `host`/);
    assert.match(headlines(await compileError(ai('name: x', 'provider: { bedrock: {} }'), options))[0]!, /missing required key `region`/);
    assert.match(headlines(await compileError(ai('name: x', 'provider: { vertex: { region: us-central1 } }'), options))[0]!, /missing required key `projectId`/);
  });

  it('rejects an unknown provider field with a suggestion', async () => {
    const err = await compileError(ai('name: x', 'provider: { openAI: { modle: gpt-4o } }'), options);
    assert.match(headlines(err)[0]!, /unknown key `modle`; did you mean `model`\?/);
  });
});
