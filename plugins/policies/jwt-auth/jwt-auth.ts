import { jsonErrorReply, principal } from 'switchyard/sdk';
import type { CompileContext, Exchange, PolicyInstance, Reply } from 'switchyard/sdk';
import { AUTHORIZATION_ONLY } from '../../lib/credentials/credentials.ts';
import { bearerToken, compileJwtVerifier, jwtAttribute, jwtPrincipal } from '../../lib/jwt/index.ts';
import type { JwtProviderConfig, JwtResult, PlacedProviderConfig } from '../../lib/jwt/index.ts';

export type AuthMode = 'strict' | 'optional' | 'permissive';

export interface JwtAuthConfig extends Partial<JwtProviderConfig> {
  providers?: JwtProviderConfig[];
  mode?: AuthMode;
}

const SINGLE_FIELDS = ['audiences', 'jwks', 'jwtValidationOptions'] as const;

/** 401 for a request without a bearer token (strict mode): RFC 6750 says no error code then. */
function missingReply(): Reply {
  return jsonErrorReply(401, 'authentication_failed', 'authentication failure: no bearer token found', { 'www-authenticate': 'Bearer' });
}

/**
 * 503 while the issuer's keys have not loaded (identity provider down, ADR 0020): the token may be fine, so no
 * `invalid_token` challenge that would make a client throw it away.
 */
function keysUnavailableReply(message: string, retryAfterSeconds: number | undefined): Reply {
  return jsonErrorReply(503, 'authentication_unavailable', `authentication unavailable: ${message}`, { 'retry-after': String(retryAfterSeconds ?? 1) });
}

function invalidReply(message: string): Reply {
  return jsonErrorReply(401, 'authentication_failed', `authentication failure: ${message}`, { 'www-authenticate': 'Bearer error="invalid_token"' });
}

export async function compileJwtAuth(config: JwtAuthConfig, ctx: CompileContext): Promise<PolicyInstance> {
  let placed: PlacedProviderConfig[];
  if (config.providers !== undefined) {
    for (const field of SINGLE_FIELDS) {
      if (config[field] !== undefined) ctx.fail(`\`${field}\` belongs inside each \`providers[]\` entry when \`providers\` is used`, [field]);
    }
    placed = config.providers.map((p, i) => ({ config: p, at: ['providers', i] }));
  } else {
    if (config.jwks === undefined) ctx.fail('`jwks` is required with `issuer` (a `url` or a `file`)');
    placed = [{ config: config as JwtProviderConfig, at: [] }];
  }
  const verifier = await compileJwtVerifier(placed, ctx);
  const mode: AuthMode = config.mode ?? 'optional';

  const finish = (ex: Exchange, result: JwtResult): Reply | undefined => {
    if (result.ok) {
      ex.set(jwtAttribute, result.claims);
      const sub = result.claims.sub;
      if (typeof sub === 'string') ex.logField('jwt.sub', sub);
      const who = jwtPrincipal(result.claims);
      if (who !== undefined) ex.set(principal, who);
      return undefined;
    }
    // Permissive: an invalid (or not yet checkable) token is ignored (and still removed before the upstream, like every credential).
    if (mode === 'permissive') return undefined;
    if (result.reason === 'keys_unavailable') return keysUnavailableReply(result.message, result.retryAfterSeconds);
    return invalidReply(result.message);
  };

  return {
    credentialHeaders: AUTHORIZATION_ONLY,
    onRequest(ex) {
      const token = bearerToken(ex.headers.authorization);
      if (token === undefined) return mode === 'strict' ? missingReply() : undefined;
      const result = verifier.verify(token);
      // Cached verifications answer synchronously: no promise on the hot path.
      if (result instanceof Promise) return result.then((r) => finish(ex, r));
      return finish(ex, result);
    },
  };
}
