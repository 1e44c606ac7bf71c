// Prompt guard verdicts on /metrics (ADR 0171): `switchyard_guardrail_checks_total` by guard type, phase and action
// (pass, mask, reject, error), as the reference counts its guardrail checks. An operator alerts on rejections and on
// a guard service failing (its 503s) without reading the access log; no label holds anything a client sent.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { accessRecords, aiPreset, aiRoute, startAiGateway, startMock } from './harness.ts';
import { startRoutesGateway } from '../helpers/gateway.ts';
import type { AiGateway, Mock } from './harness.ts';
import { scrape, value } from '../helpers/metrics.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';

describe('guard verdicts are counted', () => {
  let mock: Mock;
  let hook: TestUpstream;
  let gw: AiGateway;

  before(async () => {
    mock = await startMock();
    // A webhook guard that fails on ERR500 and passes everything else.
    hook = await startUpstream((_req, res, raw) => {
      if (raw.toString('utf8').includes('ERR500')) return void res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"boom"}');
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"action":{"reason":"fine"}}');
    });
    const ai = {
      routes: { '*': 'completions' },
      promptGuard: {
        request: [
          { regex: { action: 'reject', rules: [{ pattern: 'SECRET' }] }, rejection: { status: 451, body: 'blocked' } },
          { regex: { rules: [{ builtin: 'ssn' }] } },
          { webhook: { target: { host: `127.0.0.1:${hook.port}` } } },
        ],
      },
    };
    gw = await startAiGateway([aiRoute('/g', { name: 'g', provider: { openAI: {} }, hostOverride: mock.hostPort }, { ai })]);
  });
  after(async () => {
    await gw?.stop();
    await hook?.close();
    await mock?.stop();
  });

  const ask = async (text: string): Promise<number> => {
    const res = await fetch(`${gw.base}/g/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test' },
      body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: text }] }),
    });
    await res.arrayBuffer();
    return res.status;
  };

  it('pass, mask, reject and error by guard type and phase', async () => {
    assert.equal(await ask('hello'), 200);
    assert.equal(await ask('my ssn is 123-45-6789'), 200);
    assert.equal(await ask('the SECRET plan'), 451);
    assert.equal(await ask('ERR500'), 503);
    const m = await scrape(gw);
    const checks = (guard: string, action: string): number | undefined => value(m, 'switchyard_guardrail_checks_total', { guard, phase: 'request', action });
    assert.equal(m.types.get('switchyard_guardrail_checks_total'), 'counter');
    // The reject rule: passed three prompts, rejected one (the later guards did not see it).
    assert.equal(checks('regex', 'reject'), 1);
    // Two regex guards: 3 passes of the first, 2 of the second (one masked).
    assert.equal(checks('regex', 'pass'), 5);
    assert.equal(checks('regex', 'mask'), 1);
    assert.equal(checks('webhook', 'pass'), 2);
    assert.equal(checks('webhook', 'error'), 1);
    // No label value came from the prompt.
    const series = m.samples.filter((s) => s.name === 'switchyard_guardrail_checks_total');
    for (const s of series) assert.deepEqual(Object.keys(s.labels).sort(), ['action', 'guard', 'phase']);
  });
});

describe('every guard verdict in the access log and in CEL (ADR 0181)', () => {
  let mock: Mock;
  let gw: AiGateway;
  before(async () => {
    mock = await startMock();
    const promptGuard = {
      request: [{ regex: { rules: [{ builtin: 'ssn' }] } }, { regex: { action: 'reject', rules: [{ pattern: 'SECRET' }] } }],
      response: [{ regex: { rules: [{ builtin: 'email' }] } }],
    };
    const logging = {
      format: 'json',
      level: 'info',
      fields: {
        add: {
          requestVerdicts: 'llmGuards.request.map(g, g.action + "/" + g.guard)',
          answered: 'has(llmGuards.response) && llmGuards.response.all(g, g.action == "pass")',
          rejected: 'llmGuards.request.exists(g, g.action == "reject")',
        },
      },
    };
    const backend = (name: string) => ({ name, provider: { openAI: {} }, hostOverride: mock.hostPort });
    gw = await startRoutesGateway(
      [
        aiRoute('/route', backend('r'), { ai: { routes: { '*': 'completions' }, promptGuard } }),
        { ...aiRoute('/backend', backend('b')), backends: [{ ai: backend('b'), policies: { ai: { routes: { '*': 'completions' }, promptGuard } } }] },
      ],
      { config: { logging, drainTimeout: '200ms' }, preset: aiPreset },
    );
  });
  after(async () => {
    await gw?.stop();
    await mock?.stop();
  });

  for (const prefix of ['/route', '/backend']) {
    it(`guards on the ${prefix.slice(1)}: a mask then a pass, then the response guard; a rejection`, async () => {
      const path = `${prefix}/v1/chat/completions`;
      const ask = (text: string) =>
        fetch(`${gw.base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test' }, body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: text }] }) }).then(async (r) => (await r.arrayBuffer(), r.status));
      assert.equal(await ask('my ssn is 123-45-6789'), 200);
      assert.equal(await ask('the SECRET plan'), 403);
      const [first, second] = await accessRecords(gw, path, 2);
      assert.equal(first!['llm.guard'], 'request:mask:regex,request:pass:regex,response:pass:regex', JSON.stringify(first));
      assert.deepEqual(first!.requestVerdicts, ['mask/regex', 'pass/regex']);
      assert.equal(first!.answered, true);
      assert.equal(first!.rejected, false);
      assert.equal(second!['llm.guard'], 'request:pass:regex,request:reject:regex');
      assert.deepEqual(second!.requestVerdicts, ['pass/regex', 'reject/regex']);
      assert.equal(second!.answered, false);
      assert.equal(second!.rejected, true);
    });
  }
});
