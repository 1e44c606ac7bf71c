// A direct forward whose answer headers policies edited (response hooks, queued headers) is written as a checked head
// (ADR 0082; by the lean answer, ADR 0093, when the lean side read the request) when every edited entry passes
// node:http's checks, and through writeHead otherwise: a name a hook added in
// upper case keeps its case, a value node:http refuses still answers 500 (docs/perf.md "Session 12, polcost").
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { definePolicy } from 'switchyard/sdk';
import { startRoutesGateway } from '../helpers/gateway.ts';
import type { RoutesGateway } from '../helpers/gateway.ts';
import { fullPreset } from '../../plugins/presets/full.ts';
import { ProxyResponse } from '../../kernel/runtime/proxy-response.ts';
import { LeanAnswer } from '../../kernel/runtime/lean-answer.ts';
import { startHttpUpstream } from './proxy-support.ts';
import type { HttpUpstream } from './proxy-support.ts';

/** Adds one answer header as given (`name`, `value`), on the raw list of a direct forward. */
const addHeader = definePolicy<{ name: string; value: string }>({
  key: 'testAddAnswerHeader',
  description: 'Test: adds an answer header as given.',
  schema: { type: 'object', description: 'The header.', properties: { name: { type: 'string', description: 'Name.' }, value: { type: 'string', description: 'Value.' } }, required: ['name', 'value'], additionalProperties: false },
  attach: ['routePolicies'],
  phase: 'mutate',
  requestStream: false,
  compile: (config) => ({
    onResponse(_ex, reply) {
      reply.headers[config.name] = config.value;
    },
    onResponseHeaders(_ex, _status, list) {
      list.push(config.name, config.value);
    },
  }),
});

/** Checked heads written by the gateway (it runs in this process): by node:http's response or the lean answer. */
let checked = 0;
for (const proto of [ProxyResponse.prototype, LeanAnswer.prototype]) {
  const writeCheckedHead = proto.writeCheckedHead;
  proto.writeCheckedHead = function (this: typeof proto, ...args: Parameters<typeof writeCheckedHead>) {
    const written = writeCheckedHead.apply(this, args);
    if (written) checked++;
    return written;
  };
}

function get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; raw: string[] }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode!, raw: res.rawHeaders }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('answer headers edited by policies on the direct forward', () => {
  let upstream: HttpUpstream;
  let gw: RoutesGateway;

  before(async () => {
    upstream = await startHttpUpstream((_req, res) => {
      res.setHeader('x-powered-by', 'upstream');
      res.setHeader('content-type', 'text/plain');
      res.end('ok');
    });
    const backends = [{ host: upstream.host }];
    gw = await startRoutesGateway(
      [
        {
          name: 'pol',
          matches: [{ path: { pathPrefix: '/pol' } }],
          policies: {
            responseHeaderModifier: { set: { 'x-served-by': 'switchyard' }, remove: ['x-powered-by'] },
            cors: { allowOrigins: ['https://app.example'], exposeHeaders: ['x-served-by'] },
          },
          backends,
        },
        { name: 'upper', matches: [{ path: { pathPrefix: '/upper' } }], policies: { testAddAnswerHeader: { name: 'X-Upper-Case', value: 'v' } }, backends },
        { name: 'bad', matches: [{ path: { pathPrefix: '/bad' } }], policies: { testAddAnswerHeader: { name: 'x-bad', value: 'a\u0001b' } }, backends },
      ],
      { preset: [...fullPreset, addHeader] },
    );
  });
  after(async () => {
    await gw?.stop();
    await upstream?.close();
  });

  it('header modifiers and cors: written as a checked head, every edit applied', async () => {
    const before = checked;
    const { status, raw } = await get(`${gw.base}/pol/a`, { origin: 'https://app.example' });
    assert.equal(status, 200);
    assert.equal(checked - before, 1);
    const names = raw.filter((_, i) => i % 2 === 0);
    assert.ok(names.includes('x-served-by') && names.includes('access-control-allow-origin') && names.includes('vary') && names.includes('access-control-expose-headers'), names.join(','));
    assert.ok(!names.includes('x-powered-by'));
  });

  it('a name added in upper case: writeHead writes it as given', async () => {
    const before = checked;
    const { status, raw } = await get(`${gw.base}/upper/a`);
    assert.equal(status, 200);
    assert.equal(checked, before);
    assert.ok(raw.includes('X-Upper-Case'), raw.join(','));
  });

  it('a value node:http refuses: 500, as before', async () => {
    const before = checked;
    const { status } = await get(`${gw.base}/bad/a`);
    assert.equal(status, 500);
    assert.equal(checked, before);
    assert.ok(gw.logs.some((l) => /invalid response header/.test(l)), 'the access log says why');
  });
});
