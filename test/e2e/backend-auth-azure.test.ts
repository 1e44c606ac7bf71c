// backendAuth `azure` with the real @azure/identity (and MSAL) against loopback stand-ins that speak the real
// protocols: a Microsoft Entra authority over HTTPS (OpenID discovery + OAuth client-credentials token endpoint, for
// client secrets and workload-identity assertions) and a stand-in `az` CLI for developer sign-in. Managed identity
// (IMDS, App Service) is in backend-auth-azure-imds.test.ts and backend-auth-azure-appservice.test.ts.
//
// MSAL refuses non-HTTPS authorities, so the Entra stand-in serves TLS with a certificate made here by openssl, and
// this test process trusts its CA through tls.setDefaultCACertificates (the default trust store of node:https, which
// @azure/core-rest-pipeline uses). The gateway sees `AZURE_AUTHORITY_HOST=https://localhost:<port>`; because that is
// not a Microsoft cloud, the plugin turns off MSAL's instance discovery (which would ask login.microsoftonline.com).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { delimiter, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import tls from 'node:tls';
import { request } from 'undici';
import { startGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import { AZURE_ENV_CLEAR, json, listen, readBody, startAzureHarness } from './backend-auth-azure-support.ts';
import type { AzureHarness } from './backend-auth-azure-support.ts';
import { config, gatewayOptions, withEnv } from './backend-auth-support.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

const TENANT = '72f988bf-86f1-41af-91ab-2d7cd011db47';
const BAD_TENANT = '00000000-0000-4000-8000-0000000000ba';
const CLIENT_ID = '5e2b8c3a-0f6d-4a51-9c1e-7d2f3b4a5c6d';
const CLIENT_SECRET = 'Qx8~azure-client-secret-for-tests~000';
const COGNITIVE = 'https://cognitiveservices.azure.com/.default';

/** Trust `ca` in this process (node:https's default store) until the returned function is called. */
function trustCa(ca: string): () => void {
  const saved = tls.getCACertificates('default');
  tls.setDefaultCACertificates([...saved, ca]);
  return () => tls.setDefaultCACertificates(saved);
}

/** A CA and a server certificate for localhost / 127.0.0.1, made with openssl; the CA is trusted by this process. */
function makeTls(): { cert: string; key: string; ca: string } {
  const dir = testTempDir('switchyard-entra-tls-');
  const run = (...args: string[]): void => void execFileSync('/usr/bin/openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  run('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=Switchyard Entra Test CA', '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign');
  writeFileSync(join(dir, 'server.ext'), 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n');
  run('req', '-new', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost');
  run('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-set_serial', '2', '-days', '2', '-extfile', 'server.ext', '-out', 'server.pem');
  const read = (f: string): string => readFileSync(join(dir, f), 'utf8');
  return { cert: read('server.pem'), key: read('server.key'), ca: read('ca.pem') };
}

interface EntraStandIn {
  port: number;
  url: string;
  /** Token requests (form fields) per tenant. */
  grants: Map<string, URLSearchParams[]>;
  discoveries: number;
  server: Server;
}

/**
 * The Entra ID v2.0 endpoints MSAL uses for confidential clients: OpenID provider metadata per tenant and the token
 * endpoint (client_credentials with a client secret or a client assertion). BAD_TENANT refuses every secret.
 */
async function startEntra(pem: { cert: string; key: string }, federatedToken: () => string): Promise<EntraStandIn> {
  const state: EntraStandIn = { port: 0, url: '', grants: new Map(), discoveries: 0, server: undefined as never };
  let n = 0;
  state.server = createHttpsServer(pem, async (req, res) => {
    const body = await readBody(req);
    const url = new URL(req.url!, state.url);
    const discovery = /^\/([^/]+)\/v2\.0\/\.well-known\/openid-configuration$/.exec(url.pathname);
    if (discovery && req.method === 'GET') {
      state.discoveries++;
      const t = `${state.url}/${discovery[1]}`;
      return json(res, 200, {
        issuer: `${t}/v2.0`,
        authorization_endpoint: `${t}/oauth2/v2.0/authorize`,
        token_endpoint: `${t}/oauth2/v2.0/token`,
        jwks_uri: `${t}/discovery/v2.0/keys`,
        end_session_endpoint: `${t}/oauth2/v2.0/logout`,
        response_types_supported: ['code', 'id_token', 'code id_token', 'id_token token'],
        token_endpoint_auth_methods_supported: ['client_secret_post', 'private_key_jwt', 'client_secret_basic'],
      });
    }
    const token = /^\/([^/]+)\/oauth2\/v2\.0\/token$/.exec(url.pathname);
    if (token && req.method === 'POST') {
      const tenant = token[1]!;
      const form = new URLSearchParams(body);
      state.grants.set(tenant, [...(state.grants.get(tenant) ?? []), form]);
      if (form.get('grant_type') !== 'client_credentials') return json(res, 400, { error: 'unsupported_grant_type' });
      const bySecret = form.get('client_secret') === CLIENT_SECRET && tenant !== BAD_TENANT;
      const byAssertion =
        form.get('client_assertion_type') === 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer' && form.get('client_assertion') === federatedToken();
      if (form.get('client_id') !== CLIENT_ID || !(bySecret || byAssertion)) {
        return json(res, 401, {
          error: 'invalid_client',
          error_description: `AADSTS7000215: Invalid client secret provided. Ensure the secret being sent in the request is the client secret value. Trace ID: ${n}`,
          error_codes: [7000215],
        });
      }
      return json(res, 200, { token_type: 'Bearer', expires_in: 3599, ext_expires_in: 3599, access_token: `entra.${byAssertion ? 'federated' : 'secret'}.${form.get('scope')}.${++n}` });
    }
    json(res, 404, { error: 'not_found' });
  });
  state.port = await listen(state.server);
  state.url = `https://localhost:${state.port}`;
  return state;
}

describe('backendAuth: azure with a client secret', () => {
  let h: AzureHarness<EntraStandIn>;

  before(async () => {
    const pem = makeTls();
    const untrust = trustCa(pem.ca);
    const secret = { clientSecret: { tenant_id: TENANT, client_id: CLIENT_ID, client_secret: CLIENT_SECRET } };
    const entra = await startEntra(pem, () => 'unused');
    h = await startAzureHarness(entra, { AZURE_AUTHORITY_HOST: entra.url }, [
      { name: 'default-scope', policies: { backendAuth: { azure: { explicitConfig: secret } } } },
      { name: 'arm', policies: { backendAuth: { cloudAuthC: { explicitConfig: secret, scope: 'https://management.azure.com/.default' } } } },
      { name: 'refused', policies: { backendAuth: { azure: { explicitConfig: { clientSecret: { ...secret.clientSecret, tenant_id: BAD_TENANT } } } } } },
    ], untrust);
  });
  after(() => h?.stop());

  const auth = async (path: string): Promise<string> => {
    const res = await request(`${h.gw.url(h.port)}${path}`, { headers: { authorization: 'Bearer client' } });
    assert.equal(res.statusCode, 200, await res.body.text());
    return String(h.upstream.received.at(-1)!.headers.authorization);
  };

  it('gets a token for the Cognitive Services scope by default; several requests, one token request', async () => {
    const got = await Promise.all([auth('/default-scope'), auth('/default-scope'), auth('/default-scope')]);
    assert.equal(new Set(got).size, 1);
    assert.match(got[0]!, /^Bearer entra\.secret\.https:\/\/cognitiveservices\.azure\.com\/\.default\.\d+$/);
    const grants = h.standIn.grants.get(TENANT)!;
    assert.equal(grants.length, 1);
    assert.equal(grants[0]!.get('client_id'), CLIENT_ID);
    assert.equal(grants[0]!.get('scope'), COGNITIVE);
  });

  it('`scope` picks another resource; `cloudAuthC` is an alias', async () => {
    assert.match(await auth('/arm'), /^Bearer entra\.secret\.https:\/\/management\.azure\.com\/\.default\.\d+$/);
  });

  it('a refused secret is a 500 JSON `backend authentication failed` and nothing goes upstream', async () => {
    const before = h.upstream.received.length;
    const res = await request(`${h.gw.url(h.port)}/refused`);
    assert.equal(res.statusCode, 500);
    const body = (await res.body.json()) as { error: { type: string; message: string } };
    assert.equal(body.error.type, 'backend_auth_failed');
    assert.match(body.error.message, /^backend authentication failed: .*AADSTS7000215/);
    assert.doesNotMatch(body.error.message, new RegExp(CLIENT_SECRET));
    assert.equal(h.upstream.received.length, before);
  });

  it('the client secret is never in /config_dump or the logs', async () => {
    const text = await (await request(`${h.gw.adminUrl}/config_dump`)).body.text();
    assert.doesNotMatch(text, new RegExp(CLIENT_SECRET));
    assert.doesNotMatch(text, /cloudAuthC/);
    assert.ok(!h.gw.logs.some((l) => l.includes(CLIENT_SECRET)));
  });
});

describe('backendAuth: azure workload identity', () => {
  let h: AzureHarness<EntraStandIn>;
  const federated = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6ZGVmYXVsdDpnYXRld2F5In0.sig';

  before(async () => {
    const pem = makeTls();
    const untrust = trustCa(pem.ca);
    const entra = await startEntra(pem, () => federated);
    const tokenFile = join(testTempDir('switchyard-wi-'), 'azure-identity-token');
    writeFileSync(tokenFile, federated);
    // What the AKS workload identity webhook injects into the pod.
    const env = { AZURE_AUTHORITY_HOST: entra.url, AZURE_TENANT_ID: TENANT, AZURE_CLIENT_ID: CLIENT_ID, AZURE_FEDERATED_TOKEN_FILE: tokenFile };
    h = await startAzureHarness(entra, env, [{ name: 'wi', policies: { backendAuth: { azure: { explicitConfig: { workloadIdentity: {} } } } } }], untrust);
  });
  after(() => h?.stop());

  it('exchanges the projected service-account token (client assertion) for an access token', async () => {
    const res = await request(`${h.gw.url(h.port)}/wi`);
    assert.equal(res.statusCode, 200, await res.body.text());
    assert.match(String(h.upstream.received.at(-1)!.headers.authorization), /^Bearer entra\.federated\./);
    const grant = h.standIn.grants.get(TENANT)![0]!;
    assert.equal(grant.get('client_assertion'), federated);
    assert.equal(grant.get('client_secret'), null);
  });
});

describe('backendAuth: azure developer sign-in', () => {
  it('uses the account signed in to the Azure CLI (`az account get-access-token`)', async () => {
    const bin = testTempDir('switchyard-az-');
    const argsFile = join(bin, 'args');
    const expires = Math.floor(Date.now() / 1000) + 3600;
    // A stand-in `az` printing what `az account get-access-token --output json` prints.
    writeFileSync(
      join(bin, 'az'),
      `#!/bin/sh\necho "$@" >> '${argsFile}'\ncat <<'JSON'\n${JSON.stringify({ accessToken: 'az-cli-token', expiresOn: new Date(expires * 1000).toISOString().replace('T', ' ').slice(0, 19), expires_on: expires, subscription: 'sub', tenant: TENANT, tokenType: 'Bearer' })}\nJSON\n`,
    );
    chmodSync(join(bin, 'az'), 0o755);
    const env = withEnv({ ...AZURE_ENV_CLEAR, PATH: `${bin}${delimiter}${process.env.PATH}` });
    const upstream = await startUpstream();
    const port = await freePort();
    const gw = await startGateway(config(port, upstream.port, [{ name: 'dev', policies: { backendAuth: { azure: { developerImplicit: {} } } } }]), gatewayOptions);
    try {
      for (let i = 0; i < 2; i++) {
        const res = await request(`${gw.url(port)}/dev`);
        assert.equal(res.statusCode, 200, await res.body.text());
      }
      assert.equal(upstream.received.at(-1)!.headers.authorization, 'Bearer az-cli-token');
      const calls = readFileSync(argsFile, 'utf8').trim().split('\n');
      assert.equal(calls.length, 1, 'cached: the CLI ran once');
      assert.match(calls[0]!, /^account get-access-token --output json --resource https:\/\/cognitiveservices\.azure\.com/);
    } finally {
      await gw.stop();
      await upstream.close();
      env.restore();
    }
  });
});

describe('backendAuth: azure configuration errors', () => {
  const loadError = async (value: Record<string, unknown>): Promise<string> => {
    const port = await freePort();
    try {
      const g = await startGateway(config(port, 9, [{ name: 'r', policies: { backendAuth: { azure: value } } }]), gatewayOptions);
      await g.stop();
    } catch (err) {
      return (err as Error).message;
    }
    return assert.fail('the config loaded');
  };

  it('exactly one of explicitConfig and developerImplicit, and exactly one explicit credential', async () => {
    assert.match(await loadError({ explicitConfig: { workloadIdentity: {} }, developerImplicit: {} }), /only one of `explicitConfig`, `developerImplicit`/);
    assert.match(await loadError({}), /exactly one of `explicitConfig`, `developerImplicit`/);
    assert.match(await loadError({ explicitConfig: { workloadIdentity: {}, managedIdentity: {} } }), /only one of `clientSecret`, `managedIdentity`, `workloadIdentity`/);
    assert.match(await loadError({ explicitConfig: { clientSecret: { tenant_id: TENANT, client_id: CLIENT_ID } } }), /missing required key `client_secret`/);
  });
});
