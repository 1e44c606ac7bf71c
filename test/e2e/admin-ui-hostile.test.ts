// The admin UI shows names it does not control (routes, listeners, matches, MCP tools, request paths, config
// values): in a real browser (Debian's chromium driven by playwright-core) none of them runs as script, bends the
// page's layout or disguises itself, and a broken upstream cannot break a view; a large config stays usable (ADR 0162).
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { parse, stringify } from 'yaml';
import { chromiumSkip, launchPage } from '../helpers/chromium.ts';
import type { Browser, Page } from '../helpers/chromium.ts';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { mcpPreset } from '../mcp/harness.ts';
import { aiPreset, aiRoute } from '../ai/harness.ts';
import { fullPresetWith } from '../helpers/preset.ts';

const skip = chromiumSkip;


/** Markup that sets `window.__pwned` if it is ever parsed as HTML or run as script. */
const XSS = (n: number): string => `<img src=x onerror="window.__pwned=${n}"></script><script>window.__pwned=${n + 1}</script>`;
const RTL_NAME = 'admin\u202Egnp.exe\u200B';
const HUGE_NAME = 'h'.repeat(20_000);

/**
 * An MCP server (JSON answers over Streamable HTTP) whose server info, tools and results carry markup, and whose
 * second tool's input schema has a property that is not a schema (`null`).
 */
function hostileMcp(): Promise<TestUpstream> {
  const tools = [
    { name: 'markup', description: XSS(30), inputSchema: { type: 'object', properties: { q: { type: 'string' } } } },
    { name: 'broken', description: 'javascript:window.__pwned=40', inputSchema: { type: 'object', properties: { a: null, b: 'text', c: { type: 'integer' } } } },
    { name: 'plain', description: 'a plain tool', inputSchema: { type: 'object', properties: { n: { type: 'number' } } } },
  ];
  return startUpstream((req, res, body) => {
    if (req.method !== 'POST') return void res.writeHead(405).end();
    const message = JSON.parse(body.toString()) as { id?: number; method: string; params?: { name?: string } };
    if (message.id === undefined) return void res.writeHead(202).end();
    if (message.method === 'tools/call' && message.params?.name === 'plain') {
      // A log notification first, as servers send while they work, then the answer.
      const note = { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'working on it' } };
      const answer = { jsonrpc: '2.0', id: message.id, result: { content: [{ type: 'text', text: 'the plain answer' }] } };
      res.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': 'hostile-1' });
      return void res.end(`event: message\ndata: ${JSON.stringify(note)}\n\nevent: message\ndata: ${JSON.stringify(answer)}\n\n`);
    }
    const result =
      message.method === 'initialize'
        ? { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: XSS(50), version: '1' } }
        : message.method === 'tools/list'
          ? { tools }
          : { content: [{ type: 'text', text: XSS(60) }] };
    res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'hostile-1' }).end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
  });
}

/** An OpenAI-style upstream whose streamed chat completion separates its events with CRLF (as SSE allows). */
function crlfUpstream(): Promise<TestUpstream> {
  const chunk = (content: string): string =>
    `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o', choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\r\n\r\n`;
  return startUpstream((_req, res) => res.writeHead(200, { 'content-type': 'text/event-stream' }).end(`${chunk('Hello ')}${chunk('over CRLF')}data: [DONE]\r\n\r\n`));
}

/** An OpenAI-style upstream that streams a chunk every 100 ms for a minute; `closed` says when its client left. */
async function slowUpstream(): Promise<TestUpstream & { closed: () => boolean }> {
  let closed = false;
  const upstream = await startUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const chunk = { id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o', choices: [{ index: 0, delta: { content: 'tick ' }, finish_reason: null }] };
    const timer = setInterval(() => res.write(`data: ${JSON.stringify(chunk)}\n\n`), 100);
    const stop = setTimeout(() => res.end('data: [DONE]\n\n'), 60_000);
    res.on('close', () => {
      closed = true;
      clearInterval(timer);
      clearTimeout(stop);
    });
  });
  return { ...upstream, closed: () => closed };
}

describe('admin UI: hostile names in headless Chromium', { skip }, () => {
  let gw: RunningGateway;
  let port: number;
  let unnamedPort: number;
  let mcp: TestUpstream;
  let crlf: TestUpstream;
  let slow: TestUpstream & { closed: () => boolean };
  let browser: Browser;
  let page: Page;
  const cspViolations: string[] = [];

  before(async () => {
    port = await freePort();
    unnamedPort = await freePort();
    [mcp, crlf, slow] = await Promise.all([hostileMcp(), crlfUpstream(), slowUpstream()]);
    gw = await startGateway(
      {
        binds: [
          {
            port,
            listeners: [
              {
                name: XSS(10),
                routes: [
                  { name: XSS(12), matches: [{ path: { exact: `/x"><img src=x onerror=window.__pwned=14>` } }], policies: { directResponse: { status: 200, body: XSS(16) } } },
                  { name: RTL_NAME, matches: [{ path: { exact: '/rtl' } }], policies: { directResponse: { status: 200 } } },
                  { name: HUGE_NAME, matches: [{ path: { exact: '/huge' } }], policies: { directResponse: { status: 200 } } },
                  { name: 'tools', matches: [{ path: { pathPrefix: '/mcp' } }], backends: [{ mcp: { targets: [{ name: 'hostile', mcp: { host: '127.0.0.1', port: mcp.port, path: '/mcp' } }] } }] },
                  {
                    name: 'tools-keyed',
                    matches: [{ path: { pathPrefix: '/keyed-mcp' } }],
                    policies: { apiKey: { keys: [{ key: 'sk-playground-key-0123456789' }] } },
                    backends: [{ mcp: { targets: [{ name: 'hostile', mcp: { host: '127.0.0.1', port: mcp.port, path: '/mcp' } }] } }],
                  },
                  aiRoute('/llm', { name: 'crlf', provider: { openAI: {} }, hostOverride: `127.0.0.1:${crlf.port}` }),
                  aiRoute('/slow', { name: 'slow', provider: { openAI: {} }, hostOverride: `127.0.0.1:${slow.port}` }),
                ],
              },
            ],
          },
          {
            // Listeners without names, told apart by hostname only.
            port: unnamedPort,
            listeners: ['a.example.com', 'b.example.com'].map((hostname) => ({
              hostname,
              routes: [{ name: `tools-${hostname[0]}`, matches: [{ path: { pathPrefix: '/mcp' } }], backends: [{ mcp: { targets: [{ name: 'hostile', mcp: { host: '127.0.0.1', port: mcp.port, path: '/mcp' } }] } }] }],
            })),
          },
        ],
      },
      { preset: fullPresetWith(...mcpPreset, ...aiPreset) },
    );
    ({ browser, page } = await launchPage());
    page.on('console', (m) => {
      if (/Content Security Policy/.test(m.text())) cspViolations.push(m.text());
    });
  });
  after(async () => {
    await browser?.close();
    await gw?.stop();
    await mcp?.close();
    await crlf?.close();
    await slow?.close();
  });

  const open = async (view: string): Promise<void> => {
    await page.goto(`${gw.adminUrl}/ui/#${view}`);
    await page.waitForSelector(`#view[data-ready="${view}"]`, { timeout: 10_000 });
  };
  const pwned = (): Promise<unknown> => page.evaluate('window.__pwned');
  const images = (): Promise<number> => page.evaluate('document.images.length');

  it('routes view: markup in listener, route and match names stays text', async () => {
    await open('routes');
    const text = await page.locator('#routes').innerText();
    assert.ok(text.includes('<img src=x onerror="window.__pwned=10">'), 'the listener name shown as written');
    assert.ok(text.includes('</script><script>window.__pwned=13</script>'), 'the route name shown as written');
    assert.equal(await pwned(), undefined);
    assert.equal(await images(), 0);
  });

  it('a 20,000-character route name wraps: the page is no wider than the window, on every view that names routes', async () => {
    for (const view of ['routes', 'mcp']) {
      await open(view);
      const { scroll, inner } = await page.evaluate<{ scroll: number; inner: number }>('({ scroll: document.documentElement.scrollWidth, inner: window.innerWidth })');
      assert.ok(scroll <= inner, `${view}: the page is ${scroll} px wide in a ${inner} px window`);
    }
  });

  it('bidi overrides and invisible characters in a name are shown, not obeyed (no name can pass for another)', async () => {
    await open('routes');
    const row = await page.locator('#routes tr', { hasText: 'admin' }).first().innerText();
    assert.doesNotMatch(row, /[\u202E\u200B]/, 'the raw controls are not in the page text');
    assert.match(row, /admin<U\+202E>gnp\.exe<U\+200B>/);
  });

  it('MCP playground: markup in server info, tool descriptions and results stays text; a tool with a broken schema lists with the rest', async () => {
    await open('mcp');
    await page.click('#mcp-connect');
    await page.waitForSelector('[data-call="plain"]', { timeout: 20_000 });
    assert.equal(await page.locator('.tool').count(), 3, 'every tool is listed');
    assert.ok((await page.locator('.tool', { hasText: 'markup' }).innerText()).includes(XSS(30)));
    await page.click('[data-call="markup"]');
    await page.locator('#mcp-result', { hasText: 'window.__pwned=60' }).waitFor({ timeout: 10_000 });
    assert.equal(await pwned(), undefined);
    assert.equal(await images(), 0);
  });

  it('MCP playground: a call answered as a stream shows the answer, not a notification sent before it', async () => {
    await page.fill('textarea[data-tool="plain"]', '{"n": 1}');
    await page.click('[data-call="plain"]');
    await page.locator('#mcp-result', { hasText: /the plain answer|working on it/ }).waitFor({ timeout: 10_000 });
    const shown = await page.locator('#mcp-result').innerText();
    assert.match(shown, /the plain answer/);
    assert.doesNotMatch(shown, /working on it/);
  });

  it('MCP playground: a route under a listener without a name is reached through that listener', async () => {
    await open('mcp');
    const options = await page.locator('#route option').allInnerTexts();
    await page.selectOption('#route', String(options.findIndex((o) => o.startsWith('tools-b '))));
    await page.click('#mcp-connect');
    await page.locator('#mcp-result', { hasText: /pwned=50|HTTP|error/i }).waitFor({ timeout: 10_000 });
    assert.equal(await page.locator('.tool').count(), 3, await page.locator('#mcp-result').innerText());
  });

  it('MCP playground: a session ends when the page connects again or leaves the view (each holds upstream sessions and processes)', async () => {
    const deletes = (): number => mcp.received.filter((r) => r.method === 'DELETE').length;
    // Sessions earlier tests left end as the page leaves their view: wait until no more arrive.
    await open('routes');
    for (let seen = -1; seen !== deletes(); ) {
      seen = deletes();
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    const before = deletes();
    await open('mcp');
    for (let i = 0; i < 2; i++) {
      await page.click('#mcp-connect');
      await page.waitForSelector('[data-call="plain"]', { timeout: 10_000 });
    }
    await page.click('#nav a[href="#routes"]');
    await page.waitForSelector('#view[data-ready="routes"]');
    const deadline = Date.now() + 10_000;
    while (deletes() < before + 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(deletes() - before, 2, 'the upstream saw both sessions end');
  });

  it('MCP playground: a route that asks for a key is reached with the key given (as the LLM playground allows)', async () => {
    await open('mcp');
    const options = await page.locator('#route option').allInnerTexts();
    await page.selectOption('#route', String(options.findIndex((o) => o.startsWith('tools-keyed '))));
    await page.fill('#mcp-key', 'sk-playground-key-0123456789');
    await page.click('#mcp-connect');
    await page.locator('#mcp-result', { hasText: /pwned=50|HTTP|error/i }).waitFor({ timeout: 10_000 });
    assert.equal(await page.locator('.tool').count(), 3, await page.locator('#mcp-result').innerText());
    await page.click('[data-call="plain"]');
    await page.locator('#mcp-result', { hasText: 'the plain answer' }).waitFor({ timeout: 10_000 });
  });

  it('LLM playground: a stream whose events end with CRLF shows its text', async () => {
    await open('llm');
    await page.fill('#path', '/llm/v1/chat/completions');
    await page.click('#llm-send');
    await page.waitForSelector('#llm-done', { timeout: 15_000 });
    assert.match(await page.locator('#llm-answer').innerText(), /Hello over CRLF/);
  });

  it('LLM playground: leaving the view stops a stream (the upstream sees its client go; tokens are paid for)', async () => {
    await open('llm');
    const options = await page.locator('#route option').allInnerTexts();
    await page.selectOption('#route', String(options.findIndex((o) => o.startsWith('slow '))));
    await page.fill('#path', '/slow/v1/chat/completions');
    await page.click('#llm-send');
    await page.locator('#llm-answer', { hasText: 'tick tick' }).waitFor({ timeout: 10_000 });
    await page.click('#nav a[href="#routes"]');
    await page.waitForSelector('#view[data-ready="routes"]');
    const deadline = Date.now() + 5_000;
    while (!slow.closed() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(slow.closed(), true, 'the stream still runs after the view was left');
  });

  it('live tail: markup in a request path stays text', async () => {
    await open('tail');
    await page.locator('#tail-status', { hasText: /^Live\.$/ }).waitFor();
    await new Promise<void>((resolve, reject) => {
      httpRequest({ host: '127.0.0.1', port, path: '/x"><svg/onload=window.__pwned=70>' }, (res) => res.resume().on('end', resolve)).on('error', reject).end();
    });
    await page.locator('#tail-rows tr').first().waitFor({ timeout: 10_000 });
    assert.match(await page.locator('#tail-rows').innerText(), /\/x"><svg\/onload=window\.__pwned=70>/);
    assert.equal(await pwned(), undefined);
    assert.equal(await images(), 0);
  });

  it('validate: a paste with 150 problems shows the first 100 and counts the rest', async () => {
    await open('validate');
    const routes = Array.from({ length: 150 }, () => '{policies: {directRespons: {status: 2}}}').join(',');
    await page.fill('#config-text', `binds: [{port: 8080, listeners: [{routes: [${routes}]}]}]`);
    await page.click('#validate');
    await page.waitForSelector('#validate-result .more');
    assert.equal(await page.locator('#validate-result .issue').count(), 100);
    assert.match(await page.locator('#validate-result p.error').innerText(), /^150 problem/);
    assert.match(await page.locator('#validate-result .more').innerText(), /50 more not shown/);
  });

  it('validate: a paste over 1 MiB is answered with why, not "Checking..." for good', async () => {
    await open('validate');
    await page.fill('#config-text', `# ${'x'.repeat(1_100_000)}\nbinds: []\n`);
    await page.click('#validate');
    await page.locator('#validate-result', { hasText: /413|too large/ }).waitFor({ timeout: 10_000 });
    assert.match(await page.locator('#validate-result').innerText(), /body too large/);
  });

  it('the page needs nothing its CSP refuses (no inline style or script)', async () => {
    for (const view of ['llm', 'validate', 'charts']) await open(view);
    assert.deepEqual(cspViolations, []);
  });

  it('the header\'s config generation follows a reload', async () => {
    await open('routes');
    assert.match(await page.locator('#generation').innerText(), /generation 1$/);
    const config = parse(readFileSync(gw.file, 'utf8')) as { binds: { listeners: { routes: unknown[] }[] }[] };
    config.binds[0]!.listeners[0]!.routes.push({ name: 'added', matches: [{ path: { exact: '/added' } }], policies: { directResponse: { status: 200 } } });
    writeFileSync(gw.file, stringify(config));
    assert.equal(await gw.gateway.reload(), true);
    await page.click('#nav a[href="#tail"]');
    await page.waitForSelector('#view[data-ready="tail"]');
    await page.click('#nav a[href="#routes"]');
    await page.waitForSelector('#view[data-ready="routes"]');
    assert.equal(await page.locator('tr[data-route="added"]').count(), 1);
    assert.match(await page.locator('#generation').innerText(), /generation 2$/);
  });
});

describe('admin UI: a large config (2,000 routes, 10,000 keys) in headless Chromium', { skip }, () => {
  let gw: RunningGateway;
  let browser: Browser;
  let page: Page;
  before(async () => {
    const routes: Record<string, unknown>[] = Array.from({ length: 2000 }, (_, i) => ({ name: `r${i}`, matches: [{ path: { pathPrefix: `/r${i}` } }], policies: { directResponse: { status: 200 } } }));
    const keys = Array.from({ length: 10_000 }, (_, i) => ({ id: `k${i}`, key: `sk-large-config-key-${String(i).padStart(6, '0')}`, owner: `o${i}@example.com` }));
    routes.push({ name: 'keyed', matches: [{ path: { pathPrefix: '/v1' } }], policies: { virtualKeys: { store: { sqlite: { path: ':memory:' } }, keys }, directResponse: { status: 200 } } });
    gw = await startGateway({ binds: [{ port: await freePort(), listeners: [{ routes }] }] });
    ({ browser, page } = await launchPage());
  });
  after(async () => {
    await browser?.close();
    await gw?.stop();
  });

  it('the routes view lists every route; the 3 MB config text is laid out only when asked for', async () => {
    // Shown at once, the config's text (3 million characters here) took most of the view's 2.6 s to lay out.
    await page.goto(`${gw.adminUrl}/ui/#routes`);
    await page.waitForSelector('#view[data-ready="routes"]', { timeout: 30_000 });
    assert.equal(await page.locator('#routes tr[data-route]').count(), 2001);
    assert.equal(await page.locator('#config-dump').getAttribute('open', { timeout: 2_000 }), null, 'the config is folded');
    assert.equal(await page.locator('#config-json').textContent(), '', 'and its text not built');
    await page.click('#config-dump summary');
    const text = (await page.locator('#config-json').textContent()) ?? '';
    assert.match(text, /"id": "k9999"/);
    assert.doesNotMatch(text, /sk-large-config-key/, 'keys redacted as in /config_dump');
  });
});
