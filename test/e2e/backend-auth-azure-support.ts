// Stand-ins shared by the backend-auth-azure*.test.ts files (not a test file itself). MSAL keeps the managed-identity
// source it detects in a static field for the life of the process, so each managed-identity source is tested in its
// own file (node --test runs each file in its own process).
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { TestUpstream } from '../helpers/upstream.ts';
import { config, gatewayOptions, withEnv } from './backend-auth-support.ts';
import type { RouteSpec } from './backend-auth-support.ts';

/** Env vars of every Azure credential source, cleared so the machine's own settings cannot leak in. */
export const AZURE_ENV_CLEAR = Object.fromEntries(
  [
    'AZURE_AUTHORITY_HOST',
    'AZURE_TENANT_ID',
    'AZURE_CLIENT_ID',
    'AZURE_CLIENT_SECRET',
    'AZURE_FEDERATED_TOKEN_FILE',
    'AZURE_POD_IDENTITY_AUTHORITY_HOST',
    'IDENTITY_ENDPOINT',
    'IDENTITY_HEADER',
    'IDENTITY_SERVER_THUMBPRINT',
    'IMDS_ENDPOINT',
    'MSI_ENDPOINT',
    'MSI_SECRET',
    'AZURE_REGIONAL_AUTHORITY_NAME',
  ].map((k) => [k, undefined]),
) as Record<string, string | undefined>;

export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let s = '';
    req.on('data', (c: Buffer) => (s += c));
    req.on('end', () => resolve(s));
  });
}

export async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

export async function close(server: Server): Promise<void> {
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

export function json(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
}

export interface ManagedIdentityStandIn {
  port: number;
  requests: { url: URL; headers: IncomingMessage['headers'] }[];
  /** Answer token requests with 400 (an identity not assigned to the resource). */
  refuse: boolean;
  server: Server;
}

/**
 * Azure's managed-identity token endpoints as documented: IMDS (`GET /metadata/identity/oauth2/token`,
 * `api-version=2018-02-01`, header `Metadata: true`) and App Service / Container Apps (`IDENTITY_ENDPOINT`,
 * `api-version=2019-08-01`, header `X-IDENTITY-HEADER: $IDENTITY_HEADER`).
 */
export async function startManagedIdentity(identityHeader: string): Promise<ManagedIdentityStandIn> {
  const state: ManagedIdentityStandIn = { port: 0, requests: [], refuse: false, server: undefined as never };
  let n = 0;
  state.server = createServer((req, res) => {
    const url = new URL(req.url!, 'http://169.254.169.254');
    state.requests.push({ url, headers: req.headers });
    const now = Math.floor(Date.now() / 1000);
    const resource = url.searchParams.get('resource') ?? '';
    const token = (kind: string): unknown => ({
      access_token: `mi.${kind}.${url.searchParams.get('client_id') ?? 'system'}.${++n}`,
      expires_in: '3599',
      expires_on: String(now + 3599),
      ext_expires_in: '3599',
      not_before: String(now),
      resource,
      token_type: 'Bearer',
    });
    const refused = { error: 'invalid_request', error_description: 'Identity not found' };
    if (url.pathname.replace(/\/$/, '') === '/metadata/identity/oauth2/token') {
      if (req.headers.metadata !== 'true') return json(res, 400, { error: 'invalid_request', error_description: 'Required metadata header not specified' });
      if (url.searchParams.get('api-version') !== '2018-02-01' || !resource) return json(res, 400, { error: 'invalid_request' });
      return state.refuse ? json(res, 400, refused) : json(res, 200, token('imds'));
    }
    if (url.pathname === '/msi/token') {
      if (req.headers['x-identity-header'] !== identityHeader) return json(res, 401, { statusCode: 401, message: 'Unauthorized request' });
      if (url.searchParams.get('api-version') !== '2019-08-01' || !resource) return json(res, 400, { error: 'invalid_request' });
      return state.refuse ? json(res, 400, refused) : json(res, 200, token('appservice'));
    }
    json(res, 404, { error: 'not_found' });
  });
  state.port = await listen(state.server);
  return state;
}

/** A token service stand-in, the environment that points @azure/identity at it, an upstream and a gateway. */
export interface AzureHarness<S> {
  readonly standIn: S;
  readonly upstream: TestUpstream;
  readonly gw: RunningGateway;
  readonly port: number;
  stop(): Promise<void>;
}

/**
 * With `standIn` listening: set `env` (over {@link AZURE_ENV_CLEAR}), start an upstream and a gateway with `routes`.
 * `stop` stops them, closes the stand-in, restores the environment, then runs `restore` (the CA trust, say).
 */
export async function startAzureHarness<S extends { server: Server }>(standIn: S, env: Record<string, string>, routes: RouteSpec[], restore?: () => void): Promise<AzureHarness<S>> {
  const saved = withEnv({ ...AZURE_ENV_CLEAR, ...env });
  const upstream = await startUpstream();
  const port = await freePort();
  const gw = await startGateway(config(port, upstream.port, routes), gatewayOptions);
  return {
    standIn,
    upstream,
    gw,
    port,
    async stop() {
      await gw.stop();
      await upstream.close();
      await close(standIn.server);
      saved.restore();
      restore?.();
    },
  };
}

export type ManagedIdentityHarness = AzureHarness<ManagedIdentityStandIn>;

/** The managed-identity stand-in and a harness around it, `env(standInPort)` pointing @azure/identity at it. */
export async function startManagedIdentityHarness(identityHeader: string, env: (miPort: number) => Record<string, string>, routes: RouteSpec[]): Promise<ManagedIdentityHarness> {
  const mi = await startManagedIdentity(identityHeader);
  return startAzureHarness(mi, env(mi.port), routes);
}

/**
 * With the stand-in refusing, `/<route>` is a 500 JSON `backend authentication failed` within the token timeout,
 * and nothing goes upstream.
 */
export async function assertRefusedTokenFails(h: ManagedIdentityHarness, route: string): Promise<void> {
  h.standIn.refuse = true;
  try {
    const started = Date.now();
    const sent = h.upstream.received.length;
    const res = await request(`${h.gw.url(h.port)}/${route}`);
    assert.equal(res.statusCode, 500);
    const body = (await res.body.json()) as { error: { type: string; message: string } };
    assert.equal(body.error.type, 'backend_auth_failed');
    assert.match(body.error.message, /^backend authentication failed: /);
    assert.ok(Date.now() - started < 8000);
    assert.equal(h.upstream.received.length, sent);
  } finally {
    h.standIn.refuse = false;
  }
}
