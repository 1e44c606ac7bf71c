// Issue 10 item 6: the three example plugin packages under examples/plugins (a prompt guard, an LLM provider, a
// backend kind), each built with `tsc` against the installed gateway's .d.ts as its author would, laid out in the
// app's node_modules as `npm install` lays out a published package, and run by the installed gateway (type stripping
// off) against real peers: the LLM mock (aimock) through the real `openai` client, and files on disk.
// Registered by test/install/package.test.ts inside its suite, so they share its one `npm pack` + install.
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { request } from 'undici';
import { stringify } from 'yaml';
import { startMock } from '../ai/harness.ts';
import type { Mock } from '../ai/harness.ts';
import { runCommand, startCli } from '../helpers/cli-process.ts';
import type { Run } from '../helpers/cli-process.ts';
import { freePort } from '../helpers/ports.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');
const PACKAGES = ['switchyard-plugin-denylist', 'switchyard-plugin-ollama', 'switchyard-plugin-static'] as const;

const ok = (r: Run, what: string): Run => {
  assert.equal(r.code, 0, `${what} failed (exit ${r.code}):\n${r.stdout}\n${r.stderr}`);
  return r;
};

/** Every module specifier a source file imports. */
function imports(file: string): string[] {
  return [...readFileSync(file, 'utf8').matchAll(/^\s*(?:import|export)\b[^'"]*?from\s+'([^']+)'/gm)].map((m) => m[1]!);
}

export function describeExamplePlugins(appDir: () => string, env: NodeJS.ProcessEnv): void {
  describe('the example plugin packages (examples/plugins), built with tsc and installed', () => {
    let app: string;
    let mock: Mock;
    let front: number;
    let gw: Awaited<ReturnType<typeof startCli>> | undefined;
    /** The installed gateway with type stripping off: everything that runs is built JavaScript. */
    const runEnv = { ...env, NODE_OPTIONS: '--no-experimental-strip-types' };
    const validate = (file: string): Promise<Run> => runCommand(join(app, 'node_modules/.bin/switchyard'), ['--validate-only', '-f', file], { cwd: app, env: runEnv, timeout: 60_000 });

    /** `tsc` in a copy of the package inside the app (so `switchyard` resolves to the installed one), then its `files` into node_modules. */
    async function buildAndInstall(name: string): Promise<void> {
      const src = join(ROOT, 'examples/plugins', name);
      const work = join(app, `src-${name}`);
      cpSync(src, work, { recursive: true, filter: (f) => !/[\\/](node_modules|dist)([\\/]|$)/.test(f.slice(src.length)) });
      mkdirSync(join(work, 'node_modules/@types'), { recursive: true });
      symlinkSync(join(ROOT, 'node_modules/@types/node'), join(work, 'node_modules/@types/node'), 'dir');
      ok(await runCommand(process.execPath, [TSC, '-p', work], { cwd: work, env, timeout: 180_000 }), `tsc build of ${name}`);
      const pkg = JSON.parse(readFileSync(join(work, 'package.json'), 'utf8')) as { files: string[] };
      const target = join(app, 'node_modules', name);
      mkdirSync(target);
      cpSync(join(work, 'package.json'), join(target, 'package.json'));
      for (const f of pkg.files) cpSync(join(work, f), join(target, f), { recursive: true });
    }

    before(
      async () => {
        app = appDir();
        await Promise.all(PACKAGES.map(buildAndInstall));
        mock = await startMock();
        const site = join(app, 'site');
        mkdirSync(join(site, 'docs'), { recursive: true });
        writeFileSync(join(site, 'index.html'), '<p>home</p>\n');
        writeFileSync(join(site, 'docs/notes.txt'), 'notes\n');
        writeFileSync(join(app, 'secret.txt'), 'outside the root\n');
        front = await freePort();
        const config = {
          config: { adminAddr: `127.0.0.1:${await freePort()}`, statsAddr: 'off', readinessAddr: 'off', plugins: [...PACKAGES] },
          backends: [{ name: 'site', staticFiles: { root: 'site', maxAge: 60 } }],
          binds: [
            {
              port: front,
              address: '127.0.0.1',
              listeners: [
                {
                  routes: [
                    { name: 'site', matches: [{ path: { pathPrefix: '/site' } }], backends: [{ backend: 'site' }] },
                    {
                      name: 'llm',
                      policies: {
                        ai: {
                          routes: { '/v1/chat/completions': 'completions', '/v1/embeddings': 'embeddings', '/v1/messages': 'messages' },
                          promptGuard: {
                            request: [{ denylist: { words: ['launch code'] }, rejection: { status: 422, body: 'not here' } }],
                            response: [{ denylist: { words: ['another'], wholeWords: true, action: 'mask', replacement: '[redacted]' } }],
                          },
                        },
                      },
                      backends: [{ ai: { name: 'local', provider: { ollama: { url: mock.url, model: 'llama3.2' } } } }],
                    },
                  ],
                },
              ],
            },
          ],
        };
        writeFileSync(join(app, 'examples.yaml'), stringify(config));
        gw = await startCli(join(app, 'node_modules/.bin/switchyard'), ['-f', 'examples.yaml'], { cwd: app, env: runEnv, readyMs: 60_000 });
      },
      { timeout: 420_000 },
    );

    after(async () => {
      if (gw) assert.equal(await gw.stop(), 0, gw.output());
      await mock?.stop();
    });

    it('each package imports only the published switchyard modules (and node:), nothing of the repository', () => {
      for (const name of PACKAGES) {
        const specs = imports(join(ROOT, 'examples/plugins', name, 'src/index.ts'));
        assert.ok(specs.length > 0);
        for (const s of specs) assert.match(s, /^(switchyard\/(sdk|slots\/(ai|mcp|backend-auth))|node:[a-z/]+)$/, `${name} imports ${s}`);
        const pkg = JSON.parse(readFileSync(join(ROOT, 'examples/plugins', name, 'package.json'), 'utf8')) as Record<string, Record<string, unknown>>;
        assert.ok(pkg.peerDependencies?.switchyard, `${name} has a peer dependency on switchyard`);
        assert.deepEqual(pkg.exports?.['.'], { types: './dist/index.d.ts', default: './dist/index.js' });
        assert.ok(existsSync(join(app, 'node_modules', name, 'dist/index.d.ts')), `${name} ships declarations`);
        assert.ok(existsSync(join(ROOT, 'examples/plugins', name, 'README.md')), `${name} has a README`);
      }
    });

    it('`switchyard plugins` names the three packages', async () => {
      const r = ok(await runCommand(join(app, 'node_modules/.bin/switchyard'), ['plugins', '-f', 'examples.yaml'], { cwd: app, env: runEnv }), 'plugins');
      assert.match(r.stdout, /^guard\s+denylist\s+switchyard-plugin-denylist@1\.0\.0\s/m);
      assert.match(r.stdout, /\bollama\s+switchyard-plugin-ollama@1\.0\.0\s/);
      assert.match(r.stdout, /^backend\s+staticFiles\s+switchyard-plugin-static@1\.0\.0\s/m);
    });

    describe('switchyard-plugin-denylist (a prompt guard)', () => {
      const chat = (text: string) =>
        request(`http://127.0.0.1:${front}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: text }] }),
        });

      it("rejects a prompt with a listed phrase with the entry's rejection; the provider never sees it", async () => {
        const before = (await mock.journal()).length;
        const denied = await chat('what is the LAUNCH CODE?');
        assert.equal(denied.statusCode, 422);
        assert.equal(await denied.body.text(), 'not here');
        assert.equal((await mock.journal()).length, before);
        const passed = await chat('hello');
        assert.equal(passed.statusCode, 200);
        await passed.body.text();
        assert.equal((await mock.journal()).length, before + 1);
      });

      it('masks a listed whole word in the answer (action: mask)', async () => {
        const res = await chat('swap');
        assert.equal(res.statusCode, 200);
        const body = (await res.body.json()) as { choices: { message: { content: string } }[] };
        assert.equal(body.choices[0]!.message.content, 'answered by [redacted] model');
      });

      it('its schema is enforced: an empty word list, and `replacement` without `mask`, are config errors with their place', async () => {
        const bad = (guard: unknown) => ({
          config: { plugins: ['switchyard-plugin-denylist', 'switchyard-plugin-ollama'] },
          binds: [{ port: 1, listeners: [{ routes: [{ policies: { ai: { promptGuard: { request: [guard] } } }, backends: [{ ai: { name: 'x', provider: { ollama: {} } } }] }] }] }],
        });
        writeFileSync(join(app, 'bad-words.yaml'), stringify(bad({ denylist: { words: [] } })));
        const empty = await validate('bad-words.yaml');
        assert.equal(empty.code, 1, empty.stdout);
        assert.match(empty.stderr, /bad-words\.yaml:\d+:\d+/);
        assert.match(empty.stderr, /denylist\.words/);
        writeFileSync(join(app, 'bad-replacement.yaml'), stringify(bad({ denylist: { words: ['x'], replacement: '-' } })));
        const replacement = await validate('bad-replacement.yaml');
        assert.equal(replacement.code, 1, replacement.stdout);
        assert.match(replacement.stderr, /bad-replacement\.yaml:\d+:\d+/);
        assert.match(replacement.stderr, /`replacement` needs `action: mask`/);
      });
    });

    describe('switchyard-plugin-ollama (an LLM provider for an OpenAI-compatible server)', () => {
      const client = (): OpenAI => new OpenAI({ baseURL: `http://127.0.0.1:${front}/v1`, apiKey: 'sk-for-the-gateway', maxRetries: 0 });

      it('the openai client chats through it: /v1/chat/completions, the configured model, no client key passed on', async () => {
        const answer = await client().chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }] });
        assert.equal(answer.choices[0]!.message.content, 'Hello from the mock!');
        const seen = await mock.last();
        assert.equal(seen.path, '/v1/chat/completions');
        assert.equal(seen.body?.model, 'llama3.2');
        assert.equal(seen.headers.authorization, undefined);
      });

      it('streams', async () => {
        const stream = await client().chat.completions.create({ model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'hello' }] });
        let text = '';
        for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
        assert.equal(text, 'Hello from the mock!');
        assert.equal((await mock.last()).body?.stream, true);
      });

      it('embeds: /v1/embeddings', async () => {
        const res = await client().embeddings.create({ model: 'nomic-embed-text', input: 'hello' });
        assert.deepEqual(res.data[0]!.embedding, [0.25, 0.5, 0.75]);
        assert.equal((await mock.last()).path, '/v1/embeddings');
      });

      it('an Anthropic Messages client is translated to Chat Completions; its key is not passed on either', async () => {
        const anthropic = new Anthropic({ baseURL: `http://127.0.0.1:${front}`, apiKey: 'sk-ant-for-the-gateway', maxRetries: 0 });
        const answer = await anthropic.messages.create({ model: 'claude-x', max_tokens: 64, messages: [{ role: 'user', content: 'hello' }] });
        assert.deepEqual(
          answer.content.map((b) => (b.type === 'text' ? b.text : b.type)),
          ['Hello from the mock!'],
        );
        const seen = await mock.last();
        assert.equal(seen.path, '/v1/chat/completions');
        assert.equal(seen.body?.model, 'llama3.2');
        assert.equal(seen.headers['x-api-key'], undefined);
        assert.equal(seen.headers.authorization, undefined);
      });
    });

    describe('switchyard-plugin-static (a backend kind)', () => {
      const get = (path: string, method = 'GET') => request(`http://127.0.0.1:${front}${path}`, { method });

      it('serves a folder under the route prefix: the index, a nested file, HEAD', async () => {
        const index = await get('/site/');
        assert.equal(index.statusCode, 200);
        assert.equal(index.headers['content-type'], 'text/html; charset=utf-8');
        assert.equal(index.headers['cache-control'], 'max-age=60');
        assert.equal(await index.body.text(), '<p>home</p>\n');
        const notes = await get('/site/docs/notes.txt');
        assert.equal(notes.statusCode, 200);
        assert.equal(notes.headers['content-type'], 'text/plain; charset=utf-8');
        assert.equal(await notes.body.text(), 'notes\n');
        const head = await get('/site/docs/notes.txt', 'HEAD');
        assert.equal(head.statusCode, 200);
        assert.equal(head.headers['content-length'], '6');
        assert.equal(await head.body.text(), '');
      });

      it('answers 404 for a missing file and for a path out of the folder, 405 with Allow for a POST', async () => {
        const missing = await get('/site/nope.html');
        assert.equal(missing.statusCode, 404);
        assert.match(await missing.body.text(), /not_found/);
        for (const path of ['/site/../secret.txt', '/site/%2e%2e/secret.txt', '/site/..%2fsecret.txt']) {
          const out = await get(path);
          const text = await out.body.text();
          assert.ok(out.statusCode >= 400 && out.statusCode < 500, `${path}: ${out.statusCode}`);
          assert.doesNotMatch(text, /outside the root/);
        }
        const post = await get('/site/', 'POST');
        assert.equal(post.statusCode, 405);
        assert.equal(post.headers.allow, 'GET, HEAD');
        await post.body.text();
      });

      it('a missing root is a config error at `root`', async () => {
        writeFileSync(
          join(app, 'bad-root.yaml'),
          stringify({ config: { plugins: ['switchyard-plugin-static'] }, binds: [{ port: 1, listeners: [{ routes: [{ backends: [{ staticFiles: { root: 'no-such-folder' } }] }] }] }] }),
        );
        const r = await validate('bad-root.yaml');
        assert.equal(r.code, 1, r.stdout);
        assert.match(r.stderr, /bad-root\.yaml:\d+:\d+/);
        assert.match(r.stderr, /no folder .*no-such-folder/);
      });
    });
  });
}
