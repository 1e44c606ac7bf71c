// Issue 14 item 6: a user's regular expression cannot stall the gateway. Patterns with catastrophic backtracking
// (`(a+)+`) against adversarial input answer promptly in route matches, CEL `matches()` and guard `regex` rules,
// and constructs the linear-time engine cannot run are config errors that name the construct (docs/adr/0021).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { startGateway, startRoutesGateway } from '../helpers/gateway.ts';
import type { RoutesGateway, RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { namedRoute as named } from '../helpers/routes.ts';
import { compileError, summarize, yaml } from '../config/helpers.ts';
import { fullPreset } from '../../plugins/presets/full.ts';
import { FIRST_PARTY_KEYS } from '../../plugins/presets/catalog.ts';
import { aiConfig, aiGatewayOptions, aiKnownKeys, aiPreset } from '../ai-policy/support.ts';

// A backtracking engine needs about 2^n steps for these inputs: about 3 s at n = 26 and 12 s at n = 28 here, minutes at n = 30.
const EVIL = 'a'.repeat(28);

/** The gateway runs in this process, so a stalled regex shows as the longest gap between 5 ms timer ticks. */
async function blockage<T>(work: () => Promise<T>): Promise<{ value: T; maxGapMs: number }> {
  let last = performance.now();
  let maxGapMs = 0;
  const ticker = setInterval(() => {
    const now = performance.now();
    maxGapMs = Math.max(maxGapMs, now - last);
    last = now;
  }, 5);
  try {
    const value = await work();
    maxGapMs = Math.max(maxGapMs, performance.now() - last);
    return { value, maxGapMs };
  } finally {
    clearInterval(ticker);
  }
}

// Generous for a loaded 2-core machine (the fixed code blocks for a few ms); the blow-up it guards against takes seconds.
const MAX_GAP_MS = 1000;

describe('regex safety: route matches and CEL matches()', () => {
  let gw: RoutesGateway;

  before(async () => {
    gw = await startRoutesGateway([
      named('path', { matches: [{ path: { regex: '/p/(a+)+' } }] }),
      named('header', { matches: [{ path: { pathPrefix: '/h' }, headers: [{ name: 'x-v', value: { regex: '(a+)+' } }] }] }),
      named('query', { matches: [{ path: { pathPrefix: '/q' }, query: [{ name: 'v', value: { regex: '(a|aa)+' } }] }] }),
      named('cel', { matches: [{ path: { pathPrefix: '/cel' } }], policies: { authorization: { rules: ['request.path.matches("^/cel/(a+)+$")'] } } }),
      named('cel-dynamic', { matches: [{ path: { pathPrefix: '/dyn' } }], policies: { authorization: { rules: ['request.path.matches(request.headers["x-pattern"])'] } } }),
      named('replace', {
        matches: [{ path: { pathPrefix: '/re' } }],
        policies: { directResponse: { status: 200, body: 'replace' }, authorization: { rules: ['request.path.regexReplace("(a+)+$", "X") == "/re/X"'] } },
      }),
      named('catch-all'),
    ]);
  });

  after(async () => {
    await gw?.stop();
  });

  async function get(path: string, headers: Record<string, string> = {}) {
    const res = await request(`${gw.base}${path}`, { headers });
    return { status: res.statusCode, text: await res.body.text() };
  }

  it('a path regex still matches the whole path', async () => {
    assert.deepEqual(await get('/p/aaa'), { status: 200, text: 'path' });
    assert.deepEqual(await get('/p/aaa/x'), { status: 200, text: 'catch-all' });
  });

  it('an adversarial path against `(a+)+` answers promptly and does not hold up a concurrent request', async () => {
    const { value, maxGapMs } = await blockage(() => Promise.all([get(`/p/${EVIL}!`), get('/p/a')]));
    assert.deepEqual(value, [
      { status: 200, text: 'catch-all' },
      { status: 200, text: 'path' },
    ]);
    assert.ok(maxGapMs < MAX_GAP_MS, `event loop blocked ${maxGapMs.toFixed(0)} ms`);
  });

  it('header and query regexes: adversarial values answer promptly', async () => {
    const { value, maxGapMs } = await blockage(() => Promise.all([get('/h', { 'x-v': `${EVIL}!` }), get(`/q?v=${"a".repeat(40)}!`), get('/h', { 'x-v': 'aaa' })]));
    assert.deepEqual(value.map((r) => r.text), ['catch-all', 'catch-all', 'header']);
    assert.ok(maxGapMs < MAX_GAP_MS, `event loop blocked ${maxGapMs.toFixed(0)} ms`);
  });

  it('CEL matches() in an authorization rule: allowed, denied, and an adversarial path denied promptly', async () => {
    assert.equal((await get('/cel/aaa')).status, 200);
    assert.equal((await get('/cel/b')).status, 403);
    const { value, maxGapMs } = await blockage(() => get(`/cel/${EVIL}!`));
    assert.equal(value.status, 403);
    assert.ok(maxGapMs < MAX_GAP_MS, `event loop blocked ${maxGapMs.toFixed(0)} ms`);
  });

  it('CEL matches() with a pattern from the request: a catastrophic one is harmless, an unsupported one fails the rule', async () => {
    assert.equal((await get('/dyn/x', { 'x-pattern': '^/dyn/.$' })).status, 200);
    const { value, maxGapMs } = await blockage(() => get(`/dyn/${EVIL}!`, { 'x-pattern': '^/dyn/(a+)+$' }));
    assert.equal(value.status, 403);
    assert.ok(maxGapMs < MAX_GAP_MS, `event loop blocked ${maxGapMs.toFixed(0)} ms`);
    // A backreference is exponential even for a linear engine's caller: refused, so the rule is false.
    const ref = await blockage(() => get(`/dyn/${EVIL}!`, { 'x-pattern': '^/dyn/(a+)+\\1$' }));
    assert.equal(ref.value.status, 403);
    assert.ok(ref.maxGapMs < MAX_GAP_MS, `event loop blocked ${ref.maxGapMs.toFixed(0)} ms`);
  });

  it('CEL regexReplace() with a catastrophic pattern answers promptly', async () => {
    assert.equal((await get('/re/aaa')).status, 200);
    const { value, maxGapMs } = await blockage(() => get(`/re/${EVIL}!`));
    assert.equal(value.status, 403);
    assert.ok(maxGapMs < MAX_GAP_MS, `event loop blocked ${maxGapMs.toFixed(0)} ms`);
  });
});

describe('regex safety: guard regex rules', () => {
  let gw: RunningGateway;
  let port: number;

  before(async () => {
    port = await freePort();
    gw = await startGateway(
      aiConfig(port, [{ name: 'guarded', policies: { ai: { promptGuard: { request: [{ regex: { action: 'reject', rules: [{ pattern: '(a+)+b' }, { pattern: '(?i)SECRET' }] } }] } } } }]),
      aiGatewayOptions,
    );
  });

  after(async () => {
    await gw?.stop();
  });

  async function chat(content: string) {
    const res = await request(`${gw.url(port)}/guarded/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content }] }),
    });
    await res.body.text();
    return res.statusCode;
  }

  it('matching prompts are rejected, case-insensitive rules included', async () => {
    assert.notEqual(await chat('xaab'), 200);
    assert.notEqual(await chat('a Secret'), 200);
    assert.equal(await chat('hello'), 200);
  });

  it('an adversarial prompt against `(a+)+b` passes promptly', async () => {
    const { value, maxGapMs } = await blockage(() => chat(EVIL));
    assert.equal(value, 200);
    assert.ok(maxGapMs < MAX_GAP_MS, `event loop blocked ${maxGapMs.toFixed(0)} ms`);
  });
});

describe('regex safety: constructs the linear-time engine cannot run are config errors', () => {
  const full = { preset: fullPreset, knownKeys: FIRST_PARTY_KEYS };
  const route = (...lines: string[]) =>
    yaml('binds:', '  - port: 8080', '    listeners:', '      - routes:', ...lines.map((l) => `          ${l}`), '            policies: { directResponse: { status: 200 } }');

  it('a lookahead in a path regex points at the value and names the construct', async () => {
    const err = await compileError(route('- matches:', '    - path: { regex: "/(?=a)a" }'), full);
    const [issue] = summarize(err.issues);
    assert.equal(issue!.at, 'test.yaml:6:32');
    assert.equal(issue!.path, 'binds[0].listeners[0].routes[0].matches[0].path.regex');
    assert.match(issue!.message, /lookahead `\(\?=` at offset 1/);
  });

  it('a backreference in a header regex and a Unicode property escape in a query regex', async () => {
    const err = await compileError(
      route('- matches:', '    - headers: [{ name: x, value: { regex: "(a)\\\\1" } }]', '      query: [{ name: q, value: { regex: "\\\\p{L}+" } }]'),
      full,
    );
    const messages = summarize(err.issues).map((i) => `${i.path}: ${i.message}`);
    assert.equal(messages.length, 2, messages.join('\n'));
    assert.match(messages.join('\n'), /headers\[0\]\.value\.regex: .*backreference `\\1` at offset 3/);
    assert.match(messages.join('\n'), /query\[0\]\.value\.regex: .*Unicode property escape `\\p` at offset 0/);
  });

  it('a literal pattern of CEL matches() is checked at load', async () => {
    const text = yaml('binds:', '  - port: 8080', '    listeners:', '      - routes:', '          - policies:', '              authorization: { rules: [\'request.path.matches("(?!x)y")\'] }');
    const err = await compileError(text, full);
    assert.match(err.message, /negative lookahead `\(\?!` at offset 0/);
  });

  it('a guard pattern with a backreference points at the pattern', async () => {
    const withAi = (...ai: string[]) =>
      yaml('binds:', '  - port: 8080', '    listeners:', '      - routes:', '          - policies:', '              ai:', ...ai.map((l) => `                ${l}`), '            backends: [{ testLlm: {} }]');
    const err = await compileError(withAi('promptGuard:', '  request:', '    - regex:', '        rules:', '          - pattern: "(x+)\\\\1"'), { preset: aiPreset, knownKeys: aiKnownKeys });
    const [issue] = summarize(err.issues);
    assert.equal(issue!.at, 'test.yaml:11:38');
    assert.match(issue!.message, /backreference `\\1` at offset 4/);
  });
});
