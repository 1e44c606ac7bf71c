// Issue 12 item 4: the admin UI in a real browser (Debian's chromium driven by playwright-core): each view opens and
// shows the live gateway's data. Screenshots land in test-artifacts/admin-ui/ (git-ignored).
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { chromiumSkip, launchPage } from '../helpers/chromium.ts';
import type { Browser, Page } from '../helpers/chromium.ts';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { mcpPreset, startEverything } from '../mcp/harness.ts';
import type { UpstreamServer } from '../mcp/harness.ts';
import { aiPreset, aiRoute, startMock } from '../ai/harness.ts';
import type { Mock } from '../ai/harness.ts';
import { fullPresetWith } from '../helpers/preset.ts';

const ARTIFACTS = join(import.meta.dirname, '../../test-artifacts/admin-ui');
const skip = chromiumSkip;


describe('admin UI in headless Chromium', { skip }, () => {
  let gw: RunningGateway;
  let port: number;
  let browser: Browser;
  let page: Page;
  let everything: UpstreamServer;
  let mock: Mock;

  before(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    port = await freePort();
    [everything, mock] = await Promise.all([startEverything('streamableHttp'), startMock()]);
    gw = await startGateway({
      binds: [
        {
          port,
          listeners: [
            {
              name: 'front',
              routes: [
                {
                  name: 'hello',
                  matches: [{ path: { exact: '/hello' } }],
                  policies: {
                    directResponse: { status: 200, body: 'hi\n' },
                    apiKey: { keys: [{ key: 'sk-ui-test-secret-value', metadata: { user: 'a' } }], mode: 'optional' },
                  },
                },
                { name: 'tools', matches: [{ path: { pathPrefix: '/mcp' } }], backends: [{ mcp: { targets: [{ name: 'everything', mcp: { host: '127.0.0.1', port: everything.port, path: '/mcp' } }] } }] },
                aiRoute('/llm', { name: 'mock', provider: { openAI: {} }, hostOverride: mock.hostPort }),
              ],
            },
          ],
        },
      ],
    }, { preset: fullPresetWith(...mcpPreset, ...aiPreset) });
    ({ browser, page } = await launchPage());
  });
  after(async () => {
    await browser?.close();
    await gw?.stop();
    await everything?.stop();
    await mock?.stop();
  });

  const open = async (view: string): Promise<void> => {
    await page.goto(`${gw.adminUrl}/ui/#${view}`);
    await page.waitForSelector(`#view[data-ready="${view}"]`, { timeout: 10_000 });
  };

  it('routes view: every route with its policies, each linked to its docs page, secrets redacted', async () => {
    const started = Date.now();
    await open('routes');
    const loadMs = Date.now() - started;
    await page.screenshot({ path: join(ARTIFACTS, 'routes.png'), fullPage: true });
    const row = page.locator('tr[data-route="hello"]');
    assert.match(await row.innerText(), /hello/);
    const links = await row.locator('a.policy').evaluateAll((as) => as.map((a) => [a.textContent, a.getAttribute('href')]));
    assert.deepEqual(new Map(links as [string, string][]), new Map([['directResponse', '/ui/docs/phases.md'], ['apiKey', '/ui/docs/security.md']]));
    const html = await page.content();
    assert.doesNotMatch(html, /sk-ui-test-secret-value/, 'the key is redacted as in /config_dump');
    // The linked docs page is served from the checkout.
    const doc = await page.request.get(`${gw.adminUrl}/ui/docs/phases.md`);
    assert.equal(doc.status(), 200);
    assert.match(await doc.text(), /# Phases/);
    assert.ok(loadMs < 5_000, `page load took ${loadMs} ms`);
  });

  it('validation view: a bad config shows each problem with its line, column and config path', async () => {
    await open('validate');
    await page.fill('#config-text', 'binds:\n- port: 8080\n  listeners:\n  - routes:\n    - policies:\n        directRespons: { status: 200 }\n');
    await page.click('#validate');
    await page.waitForSelector('#validate-result .issue');
    const text = await page.locator('#validate-result').innerText();
    await page.screenshot({ path: join(ARTIFACTS, 'validate-error.png'), fullPage: true });
    assert.match(text, /line 6, column 9/);
    assert.match(text, /directRespons/);
    assert.match(text, /directResponse/, 'did-you-mean');
    await page.fill('#config-text', 'binds:\n- port: 8080\n  listeners:\n  - routes:\n    - policies:\n        directResponse: { status: 204 }\n');
    await page.click('#validate');
    await page.waitForSelector('#validate-result .ok');
    assert.equal(gw.gateway.snapshot!.generation, 1, 'validating applies nothing');
  });

  it('validation view: what the validator left unchecked (a file the config names) shows beside the verdict', async () => {
    await open('validate');
    await page.fill('#config-text', 'binds:\n- port: 8080\n  listeners:\n  - routes:\n    - policies:\n        basicAuth: { htpasswd: { file: /etc/passwd } }\n        directResponse: { status: 204 }\n');
    await page.click('#validate');
    await page.waitForSelector('#validate-result .warning');
    const text = await page.locator('#validate-result').innerText();
    await page.screenshot({ path: join(ARTIFACTS, 'validate-unchecked.png'), fullPage: true });
    assert.match(text, /Valid/);
    assert.match(text, /1 warning \(files, stores and URLs/);
    assert.match(text, /line 6, column 40 at binds\[0\]\.listeners\[0\]\.routes\[0\]\.policies\.basicAuth\.htpasswd\.file/);
    assert.match(text, /the htpasswd file `\/etc\/passwd` is not checked here/);
    assert.doesNotMatch(text, /root:/);
  });

  it('live tail: requests appear as they are served (server-sent events)', async () => {
    await open('tail');
    await page.locator('#tail-status', { hasText: /^Live\.$/ }).waitFor();
    for (let i = 0; i < 3; i++) assert.equal((await fetch(`${gw.url(port)}/hello?i=${i}`)).status, 200);
    await page.locator('#tail-rows tr').nth(2).waitFor({ timeout: 10_000 });
    const text = await page.locator('#tail-rows').innerText();
    assert.match(text, /hello\s+GET\s+\/hello\?i=2\s+200/);
    await page.screenshot({ path: join(ARTIFACTS, 'tail.png'), fullPage: true });
  });

  it('live tail: a fifth browser is told the gateway refused it (4 at most) and connects once a place is free', async () => {
    // Every place taken by tails held open here (the previous test's page leaves its own when it changes view); an
    // EventSource refused with 429 does not retry by itself.
    await open('routes');
    const held: import('node:http').ClientRequest[] = [];
    const tail = (): Promise<number> => new Promise((resolve, reject) => {
      const req = httpRequest(`${gw.adminUrl}/ui/api/tail`, (res) => {
        if (res.statusCode === 200) held.push(req);
        else res.resume();
        resolve(res.statusCode!);
      });
      req.on('error', reject).end();
    });
    for (let i = 0; i < 6 && (await tail()) === 200; i++);
    assert.equal(held.length, 4, 'four places');
    try {
      await open('tail');
      await page.locator('#tail-status', { hasText: /at most 4/ }).waitFor({ timeout: 10_000 });
      assert.doesNotMatch(await page.locator('#tail-status').innerText(), /retrying/);
    } finally {
      for (const req of held) req.destroy();
    }
    await page.locator('#tail-status', { hasText: /^Live\.$/ }).waitFor({ timeout: 15_000 });
  });

  it('charts: request rate from the gateway\'s own metrics', async () => {
    await open('charts');
    const load = setInterval(() => void fetch(`${gw.url(port)}/hello`).then((r) => r.arrayBuffer()), 50);
    try {
      await page.locator('#chart-rate[data-latest]:not([data-latest="0"])').waitFor({ timeout: 15_000 });
    } finally {
      clearInterval(load);
    }
    for (const id of ['chart-rate', 'chart-errors', 'chart-latency', 'chart-tokens']) assert.equal(await page.locator(`#${id} svg`).count(), 1, id);
    await page.screenshot({ path: join(ARTIFACTS, 'charts.png'), fullPage: true });
  });

  it('MCP playground: lists the tools of the mcp route and calls one', async () => {
    await open('mcp');
    await page.click('#mcp-connect');
    await page.waitForSelector('[data-call="echo"]', { timeout: 20_000 });
    await page.fill('textarea[data-tool="echo"]', '{"message": "hi from chromium"}');
    await page.click('[data-call="echo"]');
    await page.locator('#mcp-result', { hasText: 'hi from chromium' }).waitFor({ timeout: 10_000 });
    assert.match(await page.locator('#mcp-result').innerText(), /Echo: hi from chromium/);
    await page.screenshot({ path: join(ARTIFACTS, 'mcp.png'), fullPage: true });
  });

  it('LLM playground: a streamed chat through the ai route', async () => {
    await open('llm');
    await page.fill('#path', '/llm/v1/chat/completions');
    await page.fill('#model', 'gpt-4o');
    await page.fill('#api-key', 'sk-test');
    await page.fill('#prompt', 'hello');
    await page.click('#llm-send');
    await page.waitForSelector('#llm-done', { timeout: 15_000 });
    assert.match(await page.locator('#llm-answer').innerText(), /Hello from the mock!/);
    const last = await mock.last();
    assert.equal((last as unknown as { body: { stream?: boolean } }).body.stream, true);
    await page.screenshot({ path: join(ARTIFACTS, 'llm.png'), fullPage: true });
  });

  it('a link to a view that does not exist (#constructor, #__proto__) shows the routes, not a script error', async () => {
    for (const hash of ['constructor', '__proto__', 'nothing']) {
      await page.goto(`${gw.adminUrl}/ui/#${hash}`);
      await page.waitForSelector('#view[data-ready="routes"]', { timeout: 10_000 });
      assert.equal(await page.locator('#view p.error').count(), 0, hash);
      assert.equal(await page.locator('tr[data-route="hello"]').count(), 1, hash);
    }
  });
});
