import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { stringify } from 'yaml';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';

describe('localRateLimit', () => {
  let gw: RunningGateway;
  let port: number;
  const limitedRoute = (name: string, prefix: string) => ({
    name,
    matches: [{ path: { pathPrefix: prefix } }],
    policies: { localRateLimit: [{ maxTokens: 5, tokensPerFill: 1, fillInterval: '1h' }], directResponse: { status: 200, body: 'ok' } },
  });
  const config = (note: string, inserted: object[] = [], appended: object[] = []) => ({
    binds: [
      {
        port,
        listeners: [
          {
            routes: [
              { name: 'note', matches: [{ path: { exact: '/note' } }], policies: { directResponse: { status: 200, body: note } } },
              ...inserted,
              limitedRoute('limited', '/limited'),
              ...appended,
              {
                name: 'fast-refill',
                matches: [{ path: { pathPrefix: '/fast' } }],
                policies: { localRateLimit: [{ maxTokens: 2, tokensPerFill: 2, fillInterval: '300ms' }], directResponse: { status: 200, body: 'ok' } },
              },
            ],
          },
        ],
      },
    ],
  });
  before(async () => {
    port = await freePort();
    gw = await startGateway(config('v1'));
  });
  after(() => gw.stop());

  it('allows exactly maxTokens concurrent requests, then answers 429 with rate-limit headers', async () => {
    const results = await Promise.all(
      Array.from({ length: 12 }, async () => {
        const res = await request(`${gw.url(port)}/limited`);
        return { status: res.statusCode, headers: res.headers, body: await res.body.text() };
      }),
    );
    assert.equal(results.filter((r) => r.status === 200).length, 5);
    const denied = results.filter((r) => r.status === 429);
    assert.equal(denied.length, 7);
    const d = denied[0]!;
    assert.equal(d.headers['x-ratelimit-limit'], '5');
    assert.equal(d.headers['x-ratelimit-remaining'], '0');
    const reset = Number(d.headers['x-ratelimit-reset']);
    assert.ok(reset > 3000 && reset <= 3600, `reset ${reset}`);
    assert.equal(d.headers['retry-after'], d.headers['x-ratelimit-reset']);
    assert.deepEqual(JSON.parse(d.body), { error: { type: 'rate_limited', message: 'rate limit exceeded' } });
  });

  it('refills after the interval', async () => {
    const status = async () => {
      const res = await request(`${gw.url(port)}/fast`);
      await res.body.text();
      return res.statusCode;
    };
    // Refills land on the bucket's own 300 ms boundaries, which may fall between any two requests (often on a loaded
    // machine): so no assertion here depends on where they fall. The exact arithmetic is token-bucket.test.ts's.
    /** Requests until the first 429 (the bucket is empty); how many were allowed before it. */
    const drain = async (): Promise<number> => {
      for (let allowed = 0; allowed < 50; allowed++) if ((await status()) === 429) return allowed;
      throw new Error('never limited');
    };
    assert.ok((await drain()) >= 2, 'a full bucket allows maxTokens');
    // Empty now; one interval later at least one refill (2 tokens) has happened.
    await new Promise((r) => setTimeout(r, 350));
    assert.deepEqual([await status(), await status()], [200, 200]);
    await drain();
  });

  it('bucket state survives a reload that leaves it unchanged', async () => {
    const text = stringify({ ...config('v2'), config: gw.gateway.snapshot!.config.config });
    assert.equal(await gw.gateway.reload(text), true);
    const note = await request(`${gw.url(port)}/note`);
    assert.equal(await note.body.text(), 'v2');
    const res = await request(`${gw.url(port)}/limited`);
    await res.body.text();
    assert.equal(res.statusCode, 429, 'the drained bucket was kept, not refilled by the reload');
  });

  it('a bucket follows its route by name: a route inserted before it neither takes its drained bucket nor refills it', async () => {
    // Keyed by position, the new route got the drained bucket (429 on its first request) and `limited` a full one.
    const text = stringify({ ...config('v3', [limitedRoute('inserted', '/inserted')]), config: gw.gateway.snapshot!.config.config });
    assert.equal(await gw.gateway.reload(text), true);
    const statusOf = async (path: string) => {
      const res = await request(`${gw.url(port)}${path}`);
      await res.body.text();
      return res.statusCode;
    };
    assert.equal(await statusOf('/limited'), 429, 'the drained bucket stayed with its route');
    assert.equal(await statusOf('/inserted'), 200, 'the new route starts with a full bucket of its own');
  });

  it('two routes of the same name keep a bucket each', async () => {
    const text = stringify({ ...config('v4', [], [limitedRoute('limited', '/twin')]), config: gw.gateway.snapshot!.config.config });
    assert.equal(await gw.gateway.reload(text), true);
    const res = await request(`${gw.url(port)}/twin`);
    await res.body.text();
    assert.equal(res.statusCode, 200, 'the twin does not share the first `limited` route\'s drained bucket');
    const first = await request(`${gw.url(port)}/limited`);
    await first.body.text();
    assert.equal(first.statusCode, 429, 'the first keeps its own');
  });

  it('maxTokens below tokensPerFill is a config error', async () => {
    await assert.rejects(
      gw.gateway.compile(
        `binds:\n- port: ${port}\n  listeners:\n  - routes:\n    - policies:\n        localRateLimit:\n        - maxTokens: 1\n          tokensPerFill: 2\n          fillInterval: 1s\n`,
      ),
      /:7:22: `maxTokens` must be at least `tokensPerFill`/,
    );
  });

  it('a negative or malformed fillInterval is a config error', async () => {
    await assert.rejects(
      gw.gateway.compile(
        `binds:\n- port: ${port}\n  listeners:\n  - routes:\n    - policies:\n        localRateLimit:\n        - maxTokens: 1\n          tokensPerFill: 1\n          fillInterval: -1s\n`,
      ),
      /:9:25: must be a duration such as `500ms`, `60s` or `1m30s`, got the string "-1s"/,
    );
  });
});
