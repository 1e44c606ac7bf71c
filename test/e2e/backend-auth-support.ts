// Shared by the backend-auth-*.test.ts files (not a test file itself): the preset with the backendAuth plugins,
// a stand-in for the gateway auth policies, and config builders.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { withEnv } from '../helpers/env.ts';
import { request } from 'undici';
import { namedRoutes, oneListenerConfig, startGateway } from '../helpers/gateway.ts';
import type { NamedRoute, RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startUpstream } from '../helpers/upstream.ts';
import type { ReceivedRequest } from '../helpers/upstream.ts';
import { definePolicy } from 'switchyard/sdk';
import backendAuth from '../../plugins/policies/backend-auth/plugin.ts';
import passthrough from '../../plugins/backend-auth/passthrough/plugin.ts';
import key from '../../plugins/backend-auth/key/plugin.ts';
import gcp from '../../plugins/backend-auth/gcp/plugin.ts';
import aws from '../../plugins/backend-auth/aws/plugin.ts';
import azure from '../../plugins/backend-auth/azure/plugin.ts';
import { FIRST_PARTY_KEYS } from '../../plugins/presets/catalog.ts';
import { fullPresetWith } from '../helpers/preset.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

/**
 * Simulates a gateway auth policy (jwtAuth, apiKey, basicAuth) reading the client's credential: it declares
 * `authorization` as a credential header, so the kernel withholds it from the upstream (DECIDED 6, ADR 0015).
 */
export const acceptAndStrip = definePolicy<Record<string, never>>({
  key: 'testAcceptAndStrip',
  description: 'Test stand-in for an auth policy that strips the credential it accepted.',
  schema: { type: 'object', description: 'No settings.', properties: {}, additionalProperties: false },
  attach: ['routePolicies'],
  phase: 'authn',
  order: 10,
  compile() {
    return { credentialHeaders: ['authorization'] };
  },
});

export const backendAuthPlugins = [backendAuth, passthrough, key, gcp, aws, azure] as const;
export const authPreset = fullPresetWith(...backendAuthPlugins, acceptAndStrip);
export const authKnownKeys = [
  ...FIRST_PARTY_KEYS,
  ...backendAuthPlugins.flatMap((p) => [p.key, ...(p.aliases ?? [])]),
];
export const gatewayOptions = { preset: authPreset, knownKeys: authKnownKeys };

export interface RouteSpec extends NamedRoute {
  /** Default: the test upstream. */
  host?: string;
}

/** One bind with one listener; each route matches `/<name>` and forwards to `host`. */
export function config(port: number, upstreamPort: number, routes: RouteSpec[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return oneListenerConfig(port, namedRoutes(routes, (r) => ({ host: r.host ?? `127.0.0.1:${upstreamPort}` })), extra);
}

export { withEnv };

/**
 * Two upstream attempts of one request through a route with `policies` and a retry on 503 (the first answer is a 503):
 * what the upstream received, each attempt.
 */
export async function twoAttempts(policies: Record<string, unknown>, path = '/r'): Promise<ReceivedRequest[]> {
  let n = 0;
  const flaky = await startUpstream((_req, res) => {
    res.writeHead(++n === 1 ? 503 : 200);
    res.end();
  });
  const p = await freePort();
  const g = await startGateway(config(p, flaky.port, [{ name: 'r', policies: { ...policies, retry: { attempts: 1, codes: [503] } } }]), gatewayOptions);
  try {
    const res = await request(`${g.url(p)}${path}`);
    await res.body.text();
    assert.equal(res.statusCode, 200);
    assert.equal(flaky.received.length, 2);
    return flaky.received;
  } finally {
    await g.stop();
    await flaky.close();
  }
}

/** `/config_dump` answers, names `shown`, and neither it nor any log line holds `secret`. */
export async function assertSecretHidden(gw: RunningGateway, secret: string, shown: RegExp): Promise<void> {
  const res = await request(`${gw.adminUrl}/config_dump`);
  const text = await res.body.text();
  assert.equal(res.statusCode, 200);
  assert.doesNotMatch(text, new RegExp(secret));
  assert.match(text, shown);
  assert.ok(!gw.logs.some((l) => l.includes(secret)), 'a log line contains the key');
}

/**
 * Environment for the AWS default credential chain in tests: these keys in the environment, and nothing else of the
 * chain (profiles, SSO, web identity, container and instance metadata) able to find credentials.
 */
export function awsChainEnv(accessKeyId: string, secretAccessKey: string, extra: Record<string, string | undefined> = {}): { restore(): void } {
  const empty = testTempDir('switchyard-aws-');
  return withEnv({
    AWS_ACCESS_KEY_ID: accessKeyId,
    AWS_SECRET_ACCESS_KEY: secretAccessKey,
    AWS_SESSION_TOKEN: undefined,
    AWS_PROFILE: undefined,
    AWS_SHARED_CREDENTIALS_FILE: join(empty, 'credentials'),
    AWS_CONFIG_FILE: join(empty, 'config'),
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_CONTAINER_CREDENTIALS_RELATIVE_URI: undefined,
    AWS_CONTAINER_CREDENTIALS_FULL_URI: undefined,
    AWS_WEB_IDENTITY_TOKEN_FILE: undefined,
    ...extra,
  });
}
