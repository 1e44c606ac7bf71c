// The worked example of docs/llm-economics.md, as a new user runs it without provider keys: the LLM mock started
// with the command examples/llm-economics.yaml gives (`llmock -f examples/llm-mock`), the example with its
// `hostOverride` lines uncommented, a key made with `switchyard keys create`, a chat through the virtual model `smart`
// (plain and streamed), and `keys show` reading the catalog's cost of the mock's usage. Only the ports change.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { keysMain } from '../../kernel/boot/keys-cli.ts';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { ROOT } from '../helpers/cli.ts';

/** gpt-4o in the built-in catalog, USD per 1M tokens; the mock's "hello" answer is 11 + 5 tokens. */
const helloCost = (11 * 2.5 + 5 * 10) / 1_000_000;

describe('the LLM economics worked example, with the LLM mock', () => {
  let mock: ChildProcess;
  let gw: RunningGateway;
  let base: string;
  let secret: string;
  let keyId: string;

  const cli = async (...args: string[]): Promise<string> => {
    const out: string[] = [];
    const err: string[] = [];
    assert.equal(await keysMain([...args, '--admin', gw.adminUrl], (s) => out.push(s), (s) => err.push(s)), 0, err.join(''));
    return out.join('');
  };

  before(async () => {
    const mockPort = await freePort();
    // The command the example's comment gives, with the package's own bin file (npx would need the registry).
    const cliPath = join(ROOT, 'node_modules/@copilotkit/aimock/dist/cli.js');
    mock = spawn(process.execPath, [cliPath, '-p', String(mockPort), '-f', 'examples/llm-mock', '--log-level', 'silent'], { cwd: ROOT, stdio: 'ignore' });
    for (let i = 0; ; i++) {
      const up = await fetch(`http://127.0.0.1:${mockPort}/v1/models`).then(() => true, () => false);
      if (up) break;
      assert.ok(i < 200, 'the LLM mock started');
      await sleep(50);
    }
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    let text = readFileSync(join(ROOT, 'examples/llm-economics.yaml'), 'utf8');
    assert.equal(text.match(/# hostOverride: 127\.0\.0\.1:4010/g)?.length, 2, 'the example has the two lines to uncomment');
    text = text
      .replaceAll('# hostOverride: 127.0.0.1:4010', `hostOverride: 127.0.0.1:${mockPort}`)
      .replace('- port: 8130', `- port: ${port}`)
      .replace(/(adminAddr|statsAddr|readinessAddr): 127\.0\.0\.1:\d+/g, '$1: 127.0.0.1:0');
    gw = await startGateway(text, { env: { ...process.env, SWITCHYARD_KEYS_DB: ':memory:' } });
    const made = await cli('create', '--owner', 'ana@example.com', '--team', 'research', '--budget', 'usd=20/month');
    secret = /^(sk-swy-\S+)$/m.exec(made)![1]!;
    keyId = /created key (vk_\S+);/.exec(made)![1]!;
  });
  after(async () => {
    await gw?.stop();
    mock?.kill();
  });

  it('a chat through `smart` is answered and charged the catalog cost of the mock\'s usage', async () => {
    const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: secret, maxRetries: 0 });
    const answer = await client.chat.completions.create({ model: 'smart', max_tokens: 200, messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(answer.choices[0]!.message.content, 'Hello from aimock!');
    assert.deepEqual(answer.usage, { prompt_tokens: 11, completion_tokens: 5, total_tokens: 16 });
    const stream = await client.chat.completions.create({ model: 'smart', stream: true, messages: [{ role: 'user', content: 'hello' }] });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    assert.equal(text, 'Hello from aimock!');

    let shown = '';
    for (let i = 0; i < 100; i++) {
      shown = await cli('show', keyId);
      if (new RegExp(`usd=20/month\\s+${String(2 * helloCost).replace('.', '\\.')}\\b`).test(shown)) break;
      await sleep(50);
    }
    assert.match(shown, new RegExp(`key:${keyId}\\s+usd=20/month\\s+${String(2 * helloCost).replace('.', '\\.')}\\s`), shown);
    assert.match(shown, /team:research\s+tokens=2000000\/day\s+32\s/, shown);
  });

  // The page says the Anthropic SDK works with a key unchanged; with `"*": completions` alone its /v1/messages was read
  // as Chat Completions and answered in OpenAI's shape (a 200 whose `content` the SDK saw as undefined).
  it('an Anthropic SDK client with the key gets an Anthropic answer, through `smart` too', async () => {
    const client = new Anthropic({ baseURL: base, apiKey: secret, maxRetries: 0 });
    for (const model of ['smart', 'claude-haiku-4-5']) {
      const answer = await client.messages.create({ model, max_tokens: 200, messages: [{ role: 'user', content: 'hello' }] });
      assert.equal(answer.type, 'message');
      assert.deepEqual(answer.content, [{ type: 'text', text: 'Hello from aimock!' }]);
      assert.equal(answer.usage.input_tokens, 11);
    }
  });

  it('a key past its rate says so in words: 429, "has used its 1 request per minute", Retry-After', async () => {
    const made = await cli('create', '--team', 'product', '--budget', 'requests=1/minute');
    const key = /^(sk-swy-\S+)$/m.exec(made)![1]!;
    const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0 });
    await client.chat.completions.create({ model: 'smart', max_tokens: 20, messages: [{ role: 'user', content: 'hello' }] });
    const refused = await client.chat.completions.create({ model: 'smart', max_tokens: 20, messages: [{ role: 'user', content: 'hello' }] }).then(
      () => assert.fail('the second request of the minute was served'),
      (e: unknown) => e as { status: number; message: string; headers: Headers },
    );
    assert.equal(refused.status, 429);
    assert.match(refused.message, /has used its 1 request per minute$/);
    assert.ok(Number(refused.headers.get('retry-after')) >= 1);
  });

  it('GET /v1/models lists the virtual models', async () => {
    const res = await fetch(`${base}/v1/models`, { headers: { authorization: `Bearer ${secret}` } });
    assert.equal(res.status, 200);
    const ids = ((await res.json()) as { data: { id: string }[] }).data.map((m) => m.id);
    assert.ok(ids.includes('smart') && ids.includes('long'), ids.join(','));
  });
});
