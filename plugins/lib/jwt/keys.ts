import { importJWK } from 'jose';
import type { JWK } from 'jose';

/** A key as jose verifies with it. */
export type ImportedKey = Awaited<ReturnType<typeof importJWK>>;

/** Signature algorithms accepted at all. `none` and every HMAC algorithm are refused before any key lookup. */
export const RSA_ALGORITHMS: readonly string[] = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'];
const EC_ALGORITHMS: Readonly<Record<string, readonly string[]>> = { 'P-256': ['ES256'], 'P-384': ['ES384'] };
const OKP_ALGORITHMS: Readonly<Record<string, readonly string[]>> = { Ed25519: ['EdDSA', 'Ed25519'] };

/** Every algorithm some supported key type allows. */
export const SUPPORTED_ALGORITHMS: ReadonlySet<string> = new Set([...RSA_ALGORITHMS, 'ES256', 'ES384', 'EdDSA', 'Ed25519']);

/** One public verification key of a JWKS, with the algorithms it may verify. */
export interface VerificationKey {
  readonly kid: string;
  readonly kty: string;
  /** The JWK's `alg` when it names one, else every algorithm of its key type (RSxxx and PSxxx, ES256 or ES384, EdDSA). */
  readonly algorithms: readonly string[];
  /** The imported key for `alg` (imported once per algorithm, then reused). */
  keyFor(alg: string): Promise<ImportedKey>;
}

/** The keys of a JWKS by `kid`, plus what was wrong with the entries that were left out. */
export interface ParsedJwks {
  readonly keys: ReadonlyMap<string, VerificationKey>;
  /** One sentence per refused entry (`key #2 has no \`kid\``); empty when every key was usable. */
  readonly problems: readonly string[];
  /** A stable fingerprint of the usable keys: equal fingerprints mean the same key set. */
  readonly fingerprint: string;
}

function makeKey(kid: string, jwk: JWK, algorithms: readonly string[]): VerificationKey {
  const imported = new Map<string, Promise<ImportedKey>>();
  return {
    kid,
    kty: jwk.kty!,
    algorithms,
    keyFor(alg) {
      let p = imported.get(alg);
      if (!p) {
        p = importJWK(jwk, alg);
        // A key that fails to import stays failed for this algorithm; the verifier reports it as a bad key.
        imported.set(alg, p);
      }
      return p;
    },
  };
}

const str = (v: unknown): v is string => typeof v === 'string' && v.length > 0;

/**
 * Parse a JWKS document. Only public signature keys are kept: RSA, EC P-256/P-384 and OKP Ed25519. Private
 * members are dropped; `use: enc` keys are skipped silently; symmetric (`oct`) keys, keys without a `kid`, keys of
 * other types and duplicate `kid`s are refused and reported in `problems`.
 */
export function parseJwks(document: unknown): ParsedJwks {
  const problems: string[] = [];
  const keys = new Map<string, VerificationKey>();
  const publicJwks: JWK[] = [];
  const list = (document as { keys?: unknown } | null)?.keys;
  if (typeof document !== 'object' || document === null || !Array.isArray(list)) {
    return { keys, problems: ['not a JWKS: expected a JSON object with a `keys` array'], fingerprint: '' };
  }
  list.forEach((raw: unknown, i) => {
    if (typeof raw !== 'object' || raw === null) {
      problems.push(`key #${i} is not an object`);
      return;
    }
    const k = raw as Record<string, unknown>;
    if (k.use === 'enc') return;
    const label = str(k.kid) ? `key \`${k.kid}\`` : `key #${i}`;
    if (!str(k.kid)) {
      problems.push(`key #${i} has no \`kid\` (every key must have one)`);
      return;
    }
    const kid = k.kid;
    if (keys.has(kid)) {
      problems.push(`${label} appears twice`);
      return;
    }
    let allowed: readonly string[] | undefined;
    let jwk: JWK;
    switch (k.kty) {
      case 'RSA':
        if (!str(k.n) || !str(k.e)) {
          problems.push(`${label}: an RSA key needs \`n\` and \`e\``);
          return;
        }
        allowed = RSA_ALGORITHMS;
        jwk = { kty: 'RSA', n: k.n, e: k.e };
        break;
      case 'EC':
        allowed = str(k.crv) ? EC_ALGORITHMS[k.crv] : undefined;
        if (!allowed || !str(k.x) || !str(k.y)) {
          problems.push(`${label}: only EC keys on P-256 or P-384 with \`x\` and \`y\` are supported`);
          return;
        }
        jwk = { kty: 'EC', crv: k.crv as string, x: k.x, y: k.y };
        break;
      case 'OKP':
        allowed = str(k.crv) ? OKP_ALGORITHMS[k.crv] : undefined;
        if (!allowed || !str(k.x)) {
          problems.push(`${label}: only OKP Ed25519 keys with \`x\` are supported`);
          return;
        }
        jwk = { kty: 'OKP', crv: k.crv as string, x: k.x };
        break;
      case 'oct':
        problems.push(`${label}: symmetric (\`oct\`) keys are refused; HMAC-signed tokens are never accepted`);
        return;
      default:
        problems.push(`${label}: unsupported key type \`${String(k.kty)}\` (RSA, EC or OKP)`);
        return;
    }
    let algorithms = allowed;
    if (k.alg !== undefined) {
      if (typeof k.alg !== 'string' || !allowed.includes(k.alg)) {
        problems.push(`${label}: \`alg\` ${JSON.stringify(k.alg)} does not fit a ${String(k.kty)} key (allowed: ${allowed.join(', ')})`);
        return;
      }
      algorithms = [k.alg];
    }
    keys.set(kid, makeKey(kid, jwk, algorithms));
    publicJwks.push({ ...jwk, kid, alg: k.alg as string | undefined });
  });
  return { keys, problems, fingerprint: JSON.stringify(publicJwks) };
}
