// Shared by the backend-auth-*.test.ts files (not a test file itself): the preset with the backendAuth plugins,
// a stand-in for the gateway auth policies, and config builders.
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { withEnv } from '../helpers/env.ts';
import { namedRoutes, oneListenerConfig } from '../helpers/gateway.ts';
import type { NamedRoute } from '../helpers/gateway.ts';
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
