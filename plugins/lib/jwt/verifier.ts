import { decodeJwt, decodeProtectedHeader, errors, jwtVerify } from 'jose';
import type { JWTPayload, ProtectedHeaderParameters } from 'jose';
import { SUPPORTED_ALGORITHMS } from './keys.ts';
import type { KeySource } from './remote-jwks.ts';

/** Claims a `requiredClaims` list can name (SPEC 5.1); any other name is ignored. */
export const RECOGNIZED_CLAIMS: readonly string[] = ['exp', 'nbf', 'aud', 'iss', 'sub'];

/** Leeway on `exp` and `nbf`, in seconds, for clocks that disagree a little. */
export const CLOCK_SKEW_SECONDS = 30;

/** Why a token was refused. Messages that go with each never contain the token. */
export type JwtFailureReason =
  | 'malformed'
  | 'unsupported_alg'
  | 'missing_kid'
  | 'unknown_issuer'
  | 'unknown_kid'
  | 'bad_signature'
  | 'expired'
  | 'not_yet_valid'
  | 'wrong_issuer'
  | 'wrong_audience'
  | 'missing_claim'
  | 'invalid_claim'
  /** The issuer's keys have not loaded yet (identity provider unreachable): not the token's fault (ADR 0020). */
  | 'keys_unavailable';

/** One provider after compile: an issuer, its accepted audiences, its keys and required claims. */
export interface JwtProvider {
  readonly issuer: string;
  /** Accepted `aud` values; empty means `aud` is not checked. */
  readonly audiences: readonly string[];
  readonly keys: KeySource;
  /** Recognized required claims (`exp` by default). */
  readonly requiredClaims: readonly string[];
}

export interface JwtSuccess {
  readonly ok: true;
  /** The verified claims (frozen; shared between requests carrying the same token). */
  readonly claims: Readonly<Record<string, unknown>>;
  /** The provider that accepted the token. */
  readonly provider: JwtProvider;
}

export interface JwtFailure {
  readonly ok: false;
  readonly reason: JwtFailureReason;
  /** A short sentence safe to send to the client and to log. */
  readonly message: string;
  /** With `keys_unavailable`: seconds until the keys are fetched again (`Retry-After`). */
  readonly retryAfterSeconds?: number;
}

export type JwtResult = JwtSuccess | JwtFailure;

export interface JwtVerifierOptions {
  /** Verified tokens kept, so a token seen again skips the signature check (0 disables). Default 4096. */
  cacheEntries?: number;
  /** Longest time a verification is reused, whatever the token's `exp`. Default 5 minutes. */
  cacheMaxAgeMs?: number;
  /** Clock (ms since epoch); tests move it. */
  now?: () => number;
  clockSkewSeconds?: number;
}

interface CacheEntry {
  /** The whole token: a hit must equal it, not only its key. */
  readonly token: string;
  readonly result: JwtSuccess;
  readonly expiresAt: number;
  readonly keysVersion: number;
}

/** Tokens longer than this are verified but never cached (bounds the cache's memory). */
const MAX_CACHED_TOKEN_LENGTH = 8192;
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;
/** Characters of the token's end (inside its signature) that key the cache. */
const CACHE_KEY_LENGTH = 32;

/**
 * The cache key of a token: its last characters, which lie in the signature. A Map lookup hashes the whole key
 * string, and a token arrives as a new string with every request: hashing 800 characters cost about 1.6 µs, the
 * 32-character tail about 0.1 µs. A hit must also be `===` the whole token (a memcmp), so tokens that share a
 * tail only miss each other; the cache never answers for a token it did not verify (docs/adr/0043).
 */
function cacheKey(token: string): string {
  return token.length > CACHE_KEY_LENGTH ? token.slice(-CACHE_KEY_LENGTH) : token;
}

function fail(reason: JwtFailureReason, message: string): JwtFailure {
  return { ok: false, reason, message };
}

/** A JOSE `kid` or `iss` quoted for a message: bounded, since it comes from the client. */
function quote(value: string): string {
  return JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}\u2026` : value);
}

/**
 * Verifies bearer JWTs against one or more providers with jose (signature, `iss`, `aud`, `exp`, `nbf`, required
 * claims). With several providers the token's `iss` chooses one (an unknown issuer is refused). Results are
 * cached per token until it expires (bounded; at most `cacheMaxAgeMs`; dropped when the key set changes).
 * `verify` answers synchronously from the cache, else with a promise.
 */
export class JwtVerifier {
  readonly providers: readonly JwtProvider[];
  private readonly byIssuer: ReadonlyMap<string, JwtProvider>;
  private readonly cache = new Map<string, CacheEntry>();
  private readonly cacheEntries: number;
  private readonly cacheMaxAgeMs: number;
  private readonly now: () => number;
  private readonly skew: number;

  constructor(providers: readonly JwtProvider[], options: JwtVerifierOptions = {}) {
    if (providers.length === 0) throw new Error('at least one JWT provider is needed');
    this.providers = providers;
    this.byIssuer = new Map(providers.map((p) => [p.issuer, p]));
    this.cacheEntries = options.cacheEntries ?? 4096;
    this.cacheMaxAgeMs = options.cacheMaxAgeMs ?? 5 * 60_000;
    this.now = options.now ?? Date.now;
    this.skew = options.clockSkewSeconds ?? CLOCK_SKEW_SECONDS;
  }

  verify(token: string): JwtResult | Promise<JwtResult> {
    const key = cacheKey(token);
    const hit = this.cache.get(key);
    if (hit !== undefined && hit.token === token) {
      // Expiry (`exp`, or the cache's own limit) is checked against the clock on every hit; `nbf` was in the past
      // when the token was verified, so it still is.
      if (hit.expiresAt > this.now() && hit.keysVersion === hit.result.provider.keys.version) return hit.result;
      this.cache.delete(key);
    }
    return this.verifyUncached(token);
  }

  private async verifyUncached(token: string): Promise<JwtResult> {
    if (!COMPACT_JWS.test(token)) return fail('malformed', 'the token is not a compact JWS (header.payload.signature)');
    let header: ProtectedHeaderParameters;
    try {
      header = decodeProtectedHeader(token);
    } catch {
      return fail('malformed', 'the token header is malformed');
    }
    const alg = header.alg;
    if (typeof alg !== 'string' || alg.length === 0) return fail('malformed', 'the token header has no `alg`');
    if (alg.toLowerCase() === 'none') return fail('unsupported_alg', 'unsigned tokens (`alg: none`) are not accepted');
    if (/^HS/i.test(alg)) return fail('unsupported_alg', `HMAC-signed tokens (\`${alg}\`) are not accepted`);
    if (!SUPPORTED_ALGORITHMS.has(alg)) return fail('unsupported_alg', `the algorithm ${quote(alg)} is not supported`);
    const kid = header.kid;
    if (typeof kid !== 'string' || kid.length === 0) return fail('missing_kid', 'the token header does not specify a `kid`');

    let provider: JwtProvider;
    if (this.providers.length === 1) provider = this.providers[0]!;
    else {
      let payload: JWTPayload;
      try {
        payload = decodeJwt(token);
      } catch {
        return fail('malformed', 'the token payload is malformed');
      }
      if (typeof payload.iss !== 'string') return fail('unknown_issuer', 'the token has no `iss`');
      const found = this.byIssuer.get(payload.iss);
      if (!found) return fail('unknown_issuer', `the token issuer ${quote(payload.iss)} is not accepted`);
      provider = found;
    }

    if (!provider.keys.available) {
      return { ok: false, reason: 'keys_unavailable', message: 'the signing keys of the token issuer are not available yet', retryAfterSeconds: provider.keys.retryAfterSeconds() };
    }
    let key = provider.keys.get(kid);
    if (!key) key = await provider.keys.refetchFor(kid);
    if (!key) return fail('unknown_kid', `the token uses the unknown key ${quote(kid)}`);
    // The cached result is tied to the key set it was verified with: a rotation drops it.
    const keysVersion = provider.keys.version;
    if (!key.algorithms.includes(alg)) {
      return fail('unsupported_alg', `the algorithm ${quote(alg)} is not allowed for key ${quote(kid)} (${key.algorithms.join(', ')})`);
    }

    let payload: JWTPayload;
    try {
      const cryptoKey = await key.keyFor(alg);
      ({ payload } = await jwtVerify(token, cryptoKey, {
        algorithms: [alg],
        issuer: provider.issuer,
        audience: provider.audiences.length > 0 ? (provider.audiences as string[]) : undefined,
        clockTolerance: this.skew,
        requiredClaims: provider.requiredClaims as string[],
        currentDate: new Date(this.now()),
      }));
    } catch (err) {
      return mapJoseError(err);
    }

    const claims = Object.freeze(payload) as Readonly<Record<string, unknown>>;
    const result: JwtSuccess = { ok: true, claims, provider };
    this.remember(token, result, payload, keysVersion);
    return result;
  }

  private remember(token: string, result: JwtSuccess, payload: JWTPayload, keysVersion: number): void {
    if (this.cacheEntries <= 0 || token.length > MAX_CACHED_TOKEN_LENGTH) return;
    const now = this.now();
    let expiresAt = now + this.cacheMaxAgeMs;
    if (typeof payload.exp === 'number') expiresAt = Math.min(expiresAt, (payload.exp + this.skew) * 1000);
    if (expiresAt <= now) return;
    const key = cacheKey(token);
    // A token sharing its tail with a cached one takes its place (delete first, so the size check holds).
    this.cache.delete(key);
    if (this.cache.size >= this.cacheEntries) {
      // Oldest insertion first: Map iteration order.
      const oldest = this.cache.keys().next();
      if (!oldest.done) this.cache.delete(oldest.value);
    }
    this.cache.set(key, { token, result, expiresAt, keysVersion });
  }

  /** Number of cached verifications (tests and diagnostics). */
  get cacheSize(): number {
    return this.cache.size;
  }
}

/** Turn a jose error into a typed failure. */
export function mapJoseError(err: unknown): JwtFailure {
  if (err instanceof errors.JWTExpired) return fail('expired', 'the token has expired');
  if (err instanceof errors.JWTClaimValidationFailed) {
    const claim = err.claim;
    if (err.reason === 'missing') return fail('missing_claim', `the token lacks the required \`${claim}\` claim`);
    // A value of the wrong type (`"invalid"`) is an invalid claim, not a time check that failed.
    if (err.reason === 'invalid') return fail('invalid_claim', `the token claim \`${claim}\` is invalid`);
    if (claim === 'nbf') return fail('not_yet_valid', 'the token is not valid yet (`nbf`)');
    if (claim === 'iss') return fail('wrong_issuer', 'the token issuer is not accepted');
    if (claim === 'aud') return fail('wrong_audience', 'the token audience is not accepted');
    return fail('invalid_claim', `the token claim \`${claim}\` is invalid`);
  }
  if (err instanceof errors.JWSSignatureVerificationFailed) return fail('bad_signature', 'the token signature is invalid');
  if (err instanceof errors.JOSEAlgNotAllowed) return fail('unsupported_alg', 'the token algorithm is not allowed');
  if (err instanceof errors.JWTInvalid) return fail('invalid_claim', `the token claims are invalid: ${err.message}`);
  if (err instanceof errors.JWSInvalid) return fail('malformed', `the token is malformed: ${err.message}`);
  if (err instanceof errors.JOSENotSupported) return fail('unsupported_alg', 'the token uses an unsupported feature');
  return fail('malformed', 'the token could not be verified');
}

/** The recognized, de-duplicated `requiredClaims` (SPEC 5.1: default `[exp]`, `[]` requires none, others ignored). */
export function normalizeRequiredClaims(list: readonly string[] | undefined): string[] {
  if (list === undefined) return ['exp'];
  return [...new Set(list.filter((c) => RECOGNIZED_CLAIMS.includes(c)))];
}
