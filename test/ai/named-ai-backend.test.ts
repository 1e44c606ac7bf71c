// `ai` as a top-level named backend (`backends: [{ name, ai: {…} }]`, used as `backend: <name>`), and `ai.name`
// unique in one config.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { compileError, headlines, yaml } from '../config/helpers.ts';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { accessRecords, aiPreset, startMock, startRecorder } from './harness.ts';
import type { Mock, Recorder } from './harness.ts';

describe('ai as a named backend', () => {
  let mock: Mock;
  let rec: Recorder;
  let gw: RunningGateway;
  let base: string;

  before(async () => {
    mock = await startMock();
    rec = await startRecorder(mock.url);
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    const route = (name: string) => ({ name, matches: [{ path: { pathPrefix: `/${name}` } }], backends: [{ backend: 'gemini-shared' }] });
    gw = await startGateway(
      {
        config: { logging: { format: 'json', level: 'info' }, drainTimeout: '200ms' },
        backends: [
          {
            name: 'gemini-shared',
            policies: { backendAuth: { key: 'AIzaNamedKey' } },
            ai: { name: 'gemini-shared', provider: { gemini: { model: 'gemini-2.5-flash' } }, hostOverride: rec.hostPort },
          },
        ],
        binds: [{ port, listeners: [{ routes: [route('one'), route('two')] }] }],
      },
      { preset: aiPreset },
    );
  });
  after(async () => {
    await gw?.stop();
    await rec?.close();
    await mock?.stop();
  });

  it('serves every route that references it, with the named backend\'s policies', async () => {
    for (const prefix of ['one', 'two']) {
      const client = new OpenAI({ baseURL: `${base}/${prefix}/v1`, apiKey: 'client-key', maxRetries: 0 });
      const res = await client.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hello' }] });
      assert.equal(res.choices[0]!.message.content, 'Hello from the mock!');
      const wire = rec.last();
      assert.equal(wire.url, '/v1beta/models/gemini-2.5-flash:generateContent');
      assert.equal(wire.headers['x-goog-api-key'], 'AIzaNamedKey', 'the named backend\'s backendAuth applies');
      assert.equal(wire.headers.authorization, undefined);
      const [log] = await accessRecords(gw, `/${prefix}/v1/chat/completions`);
      assert.equal(log!['llm.provider'], 'gcp.gemini');
      assert.equal(log!['protocol'], 'llm');
    }
  });
});

describe('ai backend names', () => {
  const options = { preset: aiPreset };
  const inline = (name: string) => [`        - ai: { name: ${name}, provider: { openAI: {} } }`];

  it('refuses two ai backends with the same name, naming both places', async () => {
    const text = yaml(
      'binds:',
      '  - port: 8080',
      '    listeners:',
      '      - routes:',
      '          - matches: [{ path: { pathPrefix: /a } }]',
      '            backends:',
      ...inline('dup').map((l) => `    ${l}`),
      '          - matches: [{ path: { pathPrefix: /b } }]',
      '            backends:',
      ...inline('dup').map((l) => `    ${l}`),
    );
    const err = await compileError(text, options);
    const lines = headlines(err);
    assert.equal(lines.length, 1, lines.join('\n'));
    assert.match(
      lines[0]!,
      /ai backend name `dup` is used twice: at binds\[0\]\.listeners\[0\]\.routes\[0\]\.backends\[0\]\.ai and at binds\[0\]\.listeners\[0\]\.routes\[1\]\.backends\[0\]\.ai.*\(at binds\[0\]\.listeners\[0\]\.routes\[1\]\.backends\[0\]\.ai\.name\)/,
    );
  });

  it('refuses a route\'s ai backend named like a named ai backend, and accepts references to it', async () => {
    const text = yaml(
      'backends:',
      '  - name: shared',
      '    ai: { name: llm, provider: { openAI: {} } }',
      'binds:',
      '  - port: 8080',
      '    listeners:',
      '      - routes:',
      '          - matches: [{ path: { pathPrefix: /a } }]',
      '            backends: [{ backend: shared }]',
      '          - matches: [{ path: { pathPrefix: /b } }]',
      '            backends: [{ backend: shared }]',
      '          - matches: [{ path: { pathPrefix: /c } }]',
      '            backends:',
      '              - ai: { name: llm, provider: { anthropic: {} } }',
    );
    const err = await compileError(text, options);
    const lines = headlines(err);
    assert.equal(lines.length, 1, lines.join('\n'));
    assert.match(lines[0]!, /ai backend name `llm` is used twice: at backends\[0\]\.ai and at binds\[0\]\.listeners\[0\]\.routes\[2\]\.backends\[0\]\.ai/);
  });
});
