// backendAuth `azure` managed identity from the VM instance metadata service (IMDS), reached through
// AZURE_POD_IDENTITY_AUTHORITY_HOST (the documented override of the IMDS address), with the real @azure/identity.
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

const USER_ASSIGNED = 'c0ffee00-1111-2222-3333-444455556666';

describe('backendAuth: azure managed identity (IMDS)', () => {
  let gw: RunningGateway;
  let port: number;
  let upstream: TestUpstream;
  let mi: ManagedIdentityStandIn;
  let env: { restore(): void };

  before(async () => {
    mi = await startManagedIdentity('unused');
    env = withEnv({ ...AZURE_ENV_CLEAR, AZURE_POD_IDENTITY_AUTHORITY_HOST: `http://127.0.0.1:${mi.port}` });
    upstream = await startUpstream();
    port = await freePort();
    gw = await startGateway(
      config(port, upstream.port, [
        { name: 'user-assigned', policies: { backendAuth: { azure: { explicitConfig: { managedIdentity: { userAssignedIdentity: { clientId: USER_ASSIGNED } } } } } } },
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

  it('user-assigned by client id: `Metadata: true`, the resource of the default scope, one token for several requests', async () => {
    const auths: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await request(`${gw.url(port)}/user-assigned`);
      assert.equal(res.statusCode, 200, await res.body.text());
      auths.push(String(upstream.received.at(-1)!.headers.authorization));
    }
    assert.equal(new Set(auths).size, 1);
    assert.match(auths[0]!, new RegExp(`^Bearer mi\\.imds\\.${USER_ASSIGNED}\\.\\d+$`));
    assert.equal(mi.requests.length, 1);
    const call = mi.requests[0]!;
    assert.equal(call.headers.metadata, 'true');
    assert.equal(call.url.searchParams.get('resource'), 'https://cognitiveservices.azure.com');
    assert.equal(call.url.searchParams.get('client_id'), USER_ASSIGNED);
  });

  it('a refused token request is a 500 JSON `backend authentication failed`; nothing goes upstream', async () => {
    mi.refuse = true;
    try {
      const before = upstream.received.length;
      const res = await request(`${gw.url(port)}/refused`);
      assert.equal(res.statusCode, 500);
      const body = (await res.body.json()) as { error: { type: string; message: string } };
      assert.equal(body.error.type, 'backend_auth_failed');
      assert.match(body.error.message, /^backend authentication failed: /);
      assert.equal(upstream.received.length, before);
    } finally {
      mi.refuse = false;
    }
  });
});
