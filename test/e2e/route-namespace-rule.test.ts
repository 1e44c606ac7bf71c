// Route `namespace` and `ruleName` (a control plane's identifiers, SPEC route fields): a config with both loads, the
// route serves, /config_dump shows them, and `ruleName` is on the access log and the request span as `route_rule`
// (the reference's field name, BEHAVIOUR.md §6.1 and §6.3). Spans are read back from a real Jaeger.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { locateJaeger, startJaeger, tag } from '../helpers/jaeger.ts';
import type { RunningJaeger } from '../helpers/jaeger.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';

const found = locateJaeger();

describe('route namespace and ruleName', () => {
  let upstream: TestUpstream;
  const running: RunningGateway[] = [];

  before(async () => {
    upstream = await startUpstream((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok'));
  });
  after(async () => {
    for (const g of running) await g.stop();
    await upstream?.close();
  });

  const start = async (config: Record<string, unknown>): Promise<{ base: string; gw: RunningGateway }> => {
    const port = await freePort();
    const gw = await startGateway({
      config,
      binds: [
        {
          port,
          listeners: [
            {
              routes: [
                { name: 'orders', namespace: 'shop', ruleName: 'rule-orders', matches: [{ path: { pathPrefix: '/orders' } }], backends: [{ host: `127.0.0.1:${upstream.port}` }] },
                { name: 'plain', matches: [{ path: { pathPrefix: '/' } }], backends: [{ host: `127.0.0.1:${upstream.port}` }] },
              ],
            },
          ],
        },
      ],
    });
    running.push(gw);
    return { base: `http://127.0.0.1:${port}`, gw };
  };

  const accessLine = async (gw: RunningGateway, needle: string): Promise<string> => {
    const until = Date.now() + 5000;
    for (;;) {
      const line = gw.logs.find((l) => l.includes(needle) && l.includes('request'));
      if (line) return line;
      if (Date.now() > until) throw new Error(`no access-log line with ${needle}:\n${gw.logs.slice(-5).join('\n')}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };

  it('loads, serves, shows both in /config_dump and route_rule on the text access log', async () => {
    const { base, gw } = await start({});
    const res = await fetch(`${base}/orders/1`);
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'ok');
    assert.equal((await fetch(`${base}/other`)).status, 200);

    const dump = (await (await fetch(`${gw.adminUrl}/config_dump`)).json()) as { binds?: { listeners: { routes: Record<string, unknown>[] }[] }[]; config?: unknown };
    const text = JSON.stringify(dump);
    assert.match(text, /"namespace":"shop"/);
    assert.match(text, /"ruleName":"rule-orders"/);

    const line = await accessLine(gw, 'http.path=/orders/1');
    assert.match(line, / route_rule=rule-orders route=orders /);
    const plain = await accessLine(gw, 'http.path=/other');
    assert.doesNotMatch(plain, /route_rule/, 'a route without ruleName logs none');
  });

  it('route_rule on the JSON access log', async () => {
    const { base, gw } = await start({ logging: { format: 'json' } });
    assert.equal((await fetch(`${base}/orders/2`)).status, 200);
    const line = await accessLine(gw, '"/orders/2"');
    const record = JSON.parse(line) as Record<string, unknown>;
    assert.equal(record.route_rule, 'rule-orders');
    assert.equal(record.route, 'orders');
  });

  describe('on spans', { skip: 'skip' in found ? found.skip : false }, () => {
    let jaeger: RunningJaeger;
    before(async () => {
      jaeger = await startJaeger(found as { bin: string });
    });
    after(async () => {
      await jaeger?.stop();
    });

    it('the request span carries route_rule', async () => {
      const { base } = await start({ tracing: { otlpEndpoint: jaeger.otlpHttp, otlpProtocol: 'http' } });
      const trace = 'a1f92f3577b34da6a3ce929d0e0e4711';
      const res = await fetch(`${base}/orders/3`, { headers: { traceparent: `00-${trace}-00f067aa0ba902b7-01` } });
      assert.equal(res.status, 200);
      await res.text();
      const stored = await jaeger.waitForTrace(trace, (t) => t.spans.some((s) => tag(s, 'route') === 'orders'));
      const span = stored.spans.find((s) => tag(s, 'route') === 'orders')!;
      assert.equal(tag(span, 'route_rule'), 'rule-orders');
    });
  });
});
