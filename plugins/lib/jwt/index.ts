/**
 * The one JWT library of Switchyard, shared by `jwtAuth` and `mcpAuthentication`. Signature checks are jose's;
 * this code chooses keys and algorithms, applies the SPEC 5.1 claim rules and caches results.
 */
import { defineAttribute } from 'switchyard/sdk';
import type { AttributeKey } from 'switchyard/sdk';

export { compileJwtProvider, compileJwtVerifier } from './compile.ts';
export type { JwksConfig, JwtProviderConfig, PlacedProviderConfig } from './compile.ts';
export { parseJwks, SUPPORTED_ALGORITHMS } from './keys.ts';
export type { ParsedJwks, VerificationKey } from './keys.ts';
export { DEFAULT_JWKS_TIMING, RemoteJwks, StaticKeySource } from './remote-jwks.ts';
export type { JwksFetcher, JwksFetchResult, KeySource, RemoteJwksTiming } from './remote-jwks.ts';
export { CLOCK_SKEW_SECONDS, JwtVerifier, mapJoseError, normalizeRequiredClaims, RECOGNIZED_CLAIMS } from './verifier.ts';
export type { JwtFailure, JwtFailureReason, JwtProvider, JwtResult, JwtSuccess, JwtVerifierOptions } from './verifier.ts';
export { bearerToken } from '../credentials/credentials.ts';
export { audiencesSchema, issuerSchema, jwksSchema, jwtValidationOptionsSchema, providerProperties, providerSchema } from './schema.ts';

/** Verified JWT claims of a request, as a typed attribute. */
export type JwtClaims = Readonly<Record<string, unknown>>;

/**
 * The `jwt` attribute key. Both `jwtAuth` and `mcpAuthentication` publish the verified claims under it (declare
 * `celVariables: ['jwt']`), so CEL reads `jwt.<claim>` and later policies `ex.get(jwtAttribute)`.
 */
export const jwtAttribute: AttributeKey<JwtClaims> = defineAttribute<JwtClaims>('jwt');

/** The SDK `principal` of verified claims: issuer and subject (undefined without a string `sub`). */
export function jwtPrincipal(claims: JwtClaims): string | undefined {
  const sub = claims.sub;
  return typeof sub === 'string' ? `jwt:${typeof claims.iss === 'string' ? claims.iss : ''}\n${sub}` : undefined;
}

/** The same key, for code that prefers a function. Keys compare by name, so any copy works. */
export function jwtAttributeKey(): AttributeKey<JwtClaims> {
  return jwtAttribute;
}
