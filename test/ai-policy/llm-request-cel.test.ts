// `llmRequest` in `ai.transformations` is the client's body as CEL values (docs/cel.md): a client's deeply nested
// body must not make the conversion throw out of the request (it answered 500 `internal_error` with a stack
// overflow logged); the transformation still runs, on a body the upstream then receives (docs/adr/0145).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { aiConfig, aiGatewayOptions } from './support.ts';

describe('llmRequest in ai transformations', () => {
  let gw: RunningGateway;
  let port: number;

  before(async () => {
    port = await freePort();
    // `x` fails, so it is removed: the echoing test backend writes back what it got.
    const transformations = { max_tokens: 'llmRequest.max_tokens * 2', metadata: 'toJson(llmRequest.x)', x: 'fail("dropped")' };
    gw = await startGateway(aiConfig(port, [{ name: 'r', policies: { ai: { routes: { '*': 'completions' }, transformations } } }]), aiGatewayOptions);
  });

  after(async () => {
    await gw?.stop();
  });

  async function send(extra: string): Promise<{ status: number; body: { request?: Record<string, unknown> } }> {
    const body = `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"x":${extra}}`;
    const res = await request(`${gw.url(port)}/r/v1/chat/completions`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
    return { status: res.statusCode, body: (await res.body.json()) as { request?: Record<string, unknown> } };
  }

  it('whole numbers are int: arithmetic works', async () => {
    const res = await send('[1]');
    assert.equal(res.status, 200);
    assert.equal(res.body.request?.max_tokens, 10);
    assert.equal(res.body.request?.metadata, '[1]');
  });

  it('a body nested 200,000 deep is transformed, not a 500; the too-deep value fails only its own transformation', async () => {
    const depth = 200_000;
    const res = await send(`${'['.repeat(depth)}${']'.repeat(depth)}`);
    assert.equal(res.status, 200, JSON.stringify(res.body).slice(0, 200));
    assert.equal(res.body.request?.max_tokens, 10);
    assert.equal('metadata' in (res.body.request ?? {}), false, 'toJson of a 200,000-deep list fails: the field is removed');
  });
});
