// mcpAuthentication refuses a real access token of oidc-provider once it has expired. The 1 s token lifetime plus
// the verifier's clock skew (30 s) is not slept out: the process's wall clock (Date.now, which the in-process
// gateway's verifier and oidc-provider both read) is stepped forward past it, as an NTP step would.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as jose from 'jose';
import { CLOCK_SKEW_SECONDS } from '../../plugins/lib/jwt/index.ts';
import mcpAuthentication from '../../plugins/policies/mcp-authentication/plugin.ts';
import { fullPresetWith } from '../helpers/preset.ts';
import { steppedClock } from '../helpers/clock.ts';
import type { SteppedClock } from '../helpers/clock.ts';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { startOidcProvider } from '../helpers/oidc-provider.ts';
import type { RunningOidcProvider } from '../helpers/oidc-provider.ts';
import { freePort } from '../helpers/ports.ts';

const PRESET = fullPresetWith(mcpAuthentication);

describe('mcpAuthentication: a real token past its exp', () => {
  let gw: RunningGateway;
  let as: RunningOidcProvider;
  let base: string;
  let resource: string;
  let token: string;

  let clock: SteppedClock;

  before(async () => {
    // Installed before the gateway starts, so the verifier it builds reads this clock.
    clock = steppedClock();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    resource = `${base}/mcp`;
    as = await startOidcProvider({ defaultResource: resource, ttl: 1 });
    token = await as.token({ resource });
    gw = await startGateway(
      {
        binds: [
          {
            port,
            listeners: [
              {
                routes: [
                  {
                    policies: {
                      mcpAuthentication: { issuer: as.issuer, audiences: [resource], jwks: { url: as.jwksUri }, mode: 'strict' },
                      directResponse: { status: 200, body: 'ok' },
                    },
                  },
                ],
              },
            ],
          },
        ],
      },
      { preset: PRESET },
    );
  });

  after(async () => {
    await gw?.stop();
    await as?.close();
    clock?.restore();
  });

  it('is accepted while valid and refused with the 401 challenge once expired', async () => {
    const send = (t: string) => fetch(resource, { headers: { authorization: `Bearer ${t}` } });
    const exp = jose.decodeJwt(token).exp!;
    const fresh = await send(token);
    // The first request may already be late on a slow machine; only then is it refused.
    if (Date.now() < (exp + CLOCK_SKEW_SECONDS - 1) * 1000) assert.equal(await fresh.text(), 'ok');
    const wait = (exp + CLOCK_SKEW_SECONDS + 1) * 1000 - Date.now();
    if (wait > 0) clock.step(wait);
    const res = await send(token);
    assert.equal(res.status, 401);
    assert.equal(res.headers.get('www-authenticate'), `Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp", error="invalid_token"`);
    const body = (await res.json()) as { error: { type: string; message: string } };
    assert.equal(body.error.type, 'unauthorized');
    assert.match(body.error.message, /expired/);
    // A new token from the same server is fine: it was the expiry, not the key or the audience.
    assert.equal(await (await send(await as.token({ resource }))).text(), 'ok');
  });
});
