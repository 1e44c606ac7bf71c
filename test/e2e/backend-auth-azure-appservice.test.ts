// backendAuth `azure` managed identity from the App Service / Container Apps / Functions endpoint
// (IDENTITY_ENDPOINT + IDENTITY_HEADER), with the real @azure/identity.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { assertRefusedTokenFails, startManagedIdentityHarness } from './backend-auth-azure-support.ts';
import type { ManagedIdentityHarness } from './backend-auth-azure-support.ts';

const IDENTITY_HEADER = 'app-service-identity-header-value';

describe('backendAuth: azure managed identity (App Service endpoint)', () => {
  let h: ManagedIdentityHarness;

  before(async () => {
    h = await startManagedIdentityHarness(IDENTITY_HEADER, (miPort) => ({ IDENTITY_ENDPOINT: `http://127.0.0.1:${miPort}/msi/token`, IDENTITY_HEADER }), [
      { name: 'system', policies: { backendAuth: { azure: { explicitConfig: { managedIdentity: {} }, scope: 'https://vault.azure.net/.default' } } } },
      { name: 'refused', policies: { backendAuth: { azure: { explicitConfig: { managedIdentity: {} }, scope: 'https://storage.azure.com/.default' } } } },
    ]);
  });
  after(async () => {
    await h?.stop();
  });

  it('system-assigned: `X-IDENTITY-HEADER`, the resource of `scope`, cached', async () => {
    const auths: string[] = [];
    for (let i = 0; i < 2; i++) {
      const res = await request(`${h.gw.url(h.port)}/system`);
      assert.equal(res.statusCode, 200, await res.body.text());
      auths.push(String(h.upstream.received.at(-1)!.headers.authorization));
    }
    assert.equal(new Set(auths).size, 1);
    assert.match(auths[0]!, /^Bearer mi\.appservice\.system\.\d+$/);
    assert.equal(h.standIn.requests.length, 1);
    assert.equal(h.standIn.requests[0]!.headers['x-identity-header'], IDENTITY_HEADER);
    assert.equal(h.standIn.requests[0]!.url.searchParams.get('resource'), 'https://vault.azure.net');
  });

  it('a refused token request is a 500 JSON `backend authentication failed`, within the token timeout', () => assertRefusedTokenFails(h, 'refused'));
});
