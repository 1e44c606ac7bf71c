// backendAuth `azure` managed identity from the App Service / Container Apps / Functions endpoint
// (IDENTITY_ENDPOINT + IDENTITY_HEADER), with the real @azure/identity.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { AZURE_ENV_CLEAR, close, startManagedIdentity } from './backend-auth-azure-support.ts';
import type { ManagedIdentityStandIn } from './backend-auth-azure-support.ts';
import { config, gatewayOptions, withEnv } from './backend-auth-support.ts';

const IDENTITY_HEADER = 'app-service-identity-header-value';

describe('backendAuth: azure managed identity (App Service endpoint)', () => {
  let gw: RunningGateway;
  let port: number;
  let upstream: TestUpstream;
  let mi: ManagedIdentityStandIn;
  let env: { restore(): void };

  before(async () => {
    mi = await startManagedIdentity(IDENTITY_HEADER);
    env = withEnv({ ...AZURE_ENV_CLEAR, IDENTITY_ENDPOINT: `http://127.0.0.1:${mi.port}/msi/token`, IDENTITY_HEADER });
    upstream = await startUpstream();
    port = await freePort();
    gw = await startGateway(
      config(port, upstream.port, [
        { name: 'system', policies: { backendAuth: { azure: { explicitConfig: { managedIdentity: {} }, scope: 'https://vault.azure.net/.default' } } } },
        { name: 'refused', policies: { backendAuth: { azure: { explicitConfig: { managedIdentity: {} }, scope: 'https://storage.azure.com/.default' } } } },
      ]),
      gatewayOptions,
    );
  });
  after(async () => {
    await gw?.stop();
    await upstream?.close();
    await close(mi.server);
    env.restore();
  });

  it('system-assigned: `X-IDENTITY-HEADER`, the resource of `scope`, cached', async () => {
    const auths: string[] = [];
    for (let i = 0; i < 2; i++) {
      const res = await request(`${gw.url(port)}/system`);
      assert.equal(res.statusCode, 200, await res.body.text());
      auths.push(String(upstream.received.at(-1)!.headers.authorization));
    }
    assert.equal(new Set(auths).size, 1);
    assert.match(auths[0]!, /^Bearer mi\.appservice\.system\.\d+$/);
    assert.equal(mi.requests.length, 1);
    assert.equal(mi.requests[0]!.headers['x-identity-header'], IDENTITY_HEADER);
    assert.equal(mi.requests[0]!.url.searchParams.get('resource'), 'https://vault.azure.net');
  });

  it('a refused token request is a 500 JSON `backend authentication failed`, within the token timeout', async () => {
    mi.refuse = true;
    try {
      const started = Date.now();
      const res = await request(`${gw.url(port)}/refused`);
      assert.equal(res.statusCode, 500);
      const body = (await res.body.json()) as { error: { message: string } };
      assert.match(body.error.message, /^backend authentication failed: /);
      assert.ok(Date.now() - started < 8000);
    } finally {
      mi.refuse = false;
    }
  });
});
