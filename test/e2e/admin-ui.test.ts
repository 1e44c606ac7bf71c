// Issue 12 item 4: the admin UI in a real browser (Debian's chromium driven by playwright-core): each view opens and
// shows the live gateway's data. Screenshots land in test-artifacts/admin-ui/ (git-ignored).
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = join(import.meta.dirname, '../../test-artifacts/admin-ui');
const skip = existsSync(CHROMIUM) ? false : `no ${CHROMIUM} (apt-get install chromium; .ci/run installs it)`;

type Browser = import('playwright-core').Browser;
type Page = import('playwright-core').Page;

describe('admin UI in headless Chromium', { skip }, () => {
  let gw: RunningGateway;
  let port: number;
  let browser: Browser;
  let page: Page;

  before(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    port = await freePort();
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
              ],
            },
          ],
        },
      ],
    });
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  });
  after(async () => {
    await browser?.close();
    await gw?.stop();
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
});
