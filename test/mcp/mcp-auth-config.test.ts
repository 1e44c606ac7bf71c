// Config errors of mcpAuthentication and mcpAuthorization point at the user's file and name the problem.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import * as jose from 'jose';
import { fullPreset } from '../../plugins/presets/full.ts';
import { compileError, compileValue } from '../config/helpers.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

const opts = { preset: fullPreset };
// An `mcp` backend: mcpAuthorization in front of any other is refused (ADR 0176).
const route = (policies: string): string =>
  `binds:\n- port: 3000\n  listeners:\n  - routes:\n    - policies:\n${policies}      backends: [{ mcp: { targets: [{ name: t, mcp: { host: "127.0.0.1:9" } }] } }]\n`;

describe('mcpAuthentication / mcpAuthorization config', () => {
  let jwks: string;
  const auth = (extra: string) =>
    `        mcpAuthentication:\n          issuer: https://as.test\n          audiences: [https://gw.test/mcp]\n          jwks: { file: ${jwks} }\n${extra}`;

  before(async () => {
    const { publicKey } = await jose.generateKeyPair('RS256');
    const dir = testTempDir('switchyard-mcp-auth-config-');
    jwks = join(dir, 'jwks.json');
    writeFileSync(jwks, JSON.stringify({ keys: [{ ...(await jose.exportJWK(publicKey)), kid: 'k1', alg: 'RS256' }] }));
  });

  it('accepts the full form, with either spelling of the adapters', async () => {
    for (const provider of ['auth0', 'identityProviderA', 'keycloak', 'identityProviderB']) {
      await compileValue(
        route(
          auth(
            `          mode: strict\n          provider: { ${provider}: {} }\n          resourceMetadata:\n            resource: https://gw.test/mcp\n            scopesSupported: [mcp:tools]\n            bearerMethodsSupported: [header, body, query]\n            resourceDocumentation: https://docs.test\n            resourcePolicyUri: https://docs.test/p\n          jwtValidationOptions: { requiredClaims: [exp, sub] }\n`,
          ) + `        mcpAuthorization:\n          rules:\n          - mcp.tool.name == "echo"\n          - deny: 'jwt.sub == "mallory"'\n          - require: has(jwt.scope)\n`,
        ),
        opts,
      );
    }
  });

  it('refuses two adapters at once', async () => {
    const err = await compileError(route(auth('          provider: { auth0: {}, keycloak: {} }\n')), opts);
    assert.match(err.message, /test\.yaml:\d+:\d+: .*only one of/);
  });

  it('refuses an unknown mode, naming the accepted ones', async () => {
    const err = await compileError(route(auth('          mode: strcit\n')), opts);
    assert.match(err.message, /strict/);
    assert.match(err.message, /mcpAuthentication\.mode/);
  });

  it('requires resourceMetadata.resource as an absolute URL and valid bearer methods', async () => {
    assert.match((await compileError(route(auth('          resourceMetadata: { scopesSupported: [a] }\n')), opts)).message, /resource/);
    assert.match((await compileError(route(auth('          resourceMetadata: { resource: gw.test/mcp }\n')), opts)).message, /resource/);
    assert.match((await compileError(route(auth('          resourceMetadata: { resource: https://gw.test/mcp#x }\n')), opts)).message, /fragment/);
    assert.match((await compileError(route(auth('          resourceMetadata: { resource: https://gw.test, bearerMethodsSupported: [cookie] }\n')), opts)).message, /bearerMethodsSupported/);
  });

  it('requires at least one audience', async () => {
    const err = await compileError(route(`        mcpAuthentication:\n          issuer: https://as.test\n          audiences: []\n          jwks: { file: ${jwks} }\n`), opts);
    assert.match(err.message, /audiences/);
  });

  it('reports a bad CEL rule of mcpAuthorization at the rule', async () => {
    const err = await compileError(route('        mcpAuthorization:\n          rules:\n          - mcp.tool.name ==\n'), opts);
    assert.match(err.message, /invalid CEL expression/);
    assert.match(err.message, /mcpAuthorization\.rules\[0\]/);
    const typed = await compileError(route('        mcpAuthorization:\n          rules:\n          - deny: \'"x" + "y"\'\n'), opts);
    assert.match(typed.message, /must be a boolean expression/);
  });
});
