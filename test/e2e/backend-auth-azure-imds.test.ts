// backendAuth `azure` managed identity from the VM instance metadata service (IMDS), reached through
// AZURE_POD_IDENTITY_AUTHORITY_HOST (the documented override of the IMDS address), with the real @azure/identity.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { assertRefusedTokenFails, startManagedIdentityHarness } from './backend-auth-azure-support.ts';
import type { ManagedIdentityHarness } from './backend-auth-azure-support.ts';

const USER_ASSIGNED = 'c0ffee00-1111-2222-3333-444455556666';

describe('backendAuth: azure managed identity (IMDS)', () => {
  let h: ManagedIdentityHarness;

  before(async () => {
    h = await startManagedIdentityHarness('unused', (miPort) => ({ AZURE_POD_IDENTITY_AUTHORITY_HOST: `http://127.0.0.1:${miPort}` }), [
      { name: 'user-assigned', policies: { backendAuth: { azure: { explicitConfig: { managedIdentity: { userAssignedIdentity: { clientId: USER_ASSIGNED } } } } } } },
      { name: 'refused', policies: { backendAuth: { azure: { explicitConfig: { managedIdentity: {} }, scope: 'https://storage.azure.com/.default' } } } },
    ]);
  });
  after(async () => {
    await h?.stop();
  });

  it('user-assigned by client id: `Metadata: true`, the resource of the default scope, one token for several requests', async () => {
    const auths: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await request(`${h.gw.url(h.port)}/user-assigned`);
      assert.equal(res.statusCode, 200, await res.body.text());
      auths.push(String(h.upstream.received.at(-1)!.headers.authorization));
    }
    assert.equal(new Set(auths).size, 1);
    assert.match(auths[0]!, new RegExp(`^Bearer mi\\.imds\\.${USER_ASSIGNED}\\.\\d+$`));
    assert.equal(h.standIn.requests.length, 1);
    const call = h.standIn.requests[0]!;
    assert.equal(call.headers.metadata, 'true');
    assert.equal(call.url.searchParams.get('resource'), 'https://cognitiveservices.azure.com');
    assert.equal(call.url.searchParams.get('client_id'), USER_ASSIGNED);
  });

  it('a refused token request is a 500 JSON `backend authentication failed`; nothing goes upstream', () => assertRefusedTokenFails(h, 'refused'));
});
