// Guard services that misbehave, as a real gateway meets them (ADR 0181 audit): one that never answers, one that
// sends its headers and then trickles its body, one that answers more than the gateway reads, one that answers
// something that is no JSON, one that is slow but answers in time. Each fails closed (503) within the guard's 10 s,
// or passes when it answered; the client is never held longer. The `webhook` guard, whose target is a loopback
// stand-in choosing its behaviour by a forwarded header.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { aiConfig, aiGatewayOptions, GUARD_FAILED, startStandIn } from './support.ts';
import type { StandIn } from './support.ts';

describe('guard services that hang, trickle, flood or babble', () => {
  let gw: RunningGateway;
  let port: number;
  let hook: StandIn;
  const timers = new Set<NodeJS.Timeout>();

  before(async () => {
    hook = await startStandIn((req, res) => {
      const mode = req.headers['x-mode'];
      if (mode === 'hang') return;
      if (mode === 'trickle') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"action":');
        const t = setInterval(() => res.write(' '), 200);
        timers.add(t);
        res.on('close', () => clearInterval(t));
        return;
      }
      if (mode === 'flood') {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(`{"action":{"reason":"${'x'.repeat(5 * 1024 * 1024)}"}}`);
      }
      if (mode === 'babble') {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end('<html>not json</html>');
      }
      if (mode === 'slow') {
        const t = setTimeout(() => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('{"action":{"reason":"fine"}}');
        }, 1500);
        timers.add(t);
        return;
      }
      res.writeHead(404).end();
    });
    port = await freePort();
    const webhook = { webhook: { target: { host: `127.0.0.1:${hook.port}` }, forwardHeaderMatches: [{ name: 'x-mode', value: { regex: '[a-z]+' } }] } };
    gw = await startGateway(aiConfig(port, [{ name: 'g', policies: { ai: { promptGuard: { request: [webhook] } } } }]), aiGatewayOptions);
  });

  after(async () => {
    for (const t of timers) clearTimeout(t);
    await gw?.stop();
    await hook?.close();
  });

  async function post(mode: string): Promise<{ status: number; text: string; ms: number }> {
    const t0 = performance.now();
    const res = await request(`${gw.url(port)}/g/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-mode': mode },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hello' }] }),
    });
    const text = await res.body.text();
    return { status: res.statusCode, text, ms: performance.now() - t0 };
  }

  it('each misbehaving service fails closed within the guard time; a slow one that answers passes', async () => {
    const [hang, trickle, flood, babble, slow] = await Promise.all(['hang', 'trickle', 'flood', 'babble', 'slow'].map(post));
    for (const [name, r] of Object.entries({ hang, trickle, flood, babble })) {
      assert.equal(r!.status, 503, `${name}: ${r!.text}`);
      assert.deepEqual(JSON.parse(r!.text), GUARD_FAILED, name);
      assert.ok(r!.ms < 12_000, `${name} held the client ${r!.ms} ms`);
    }
    assert.ok(hang!.ms >= 9_000, `hang answered after ${hang!.ms} ms`);
    assert.equal(slow!.status, 200, slow!.text);
  });
});
