import { resolve } from 'node:path';
import { FILE_SIZE_LIMITS, notChecked, parseJsonFileText, readCappedText, readSharedFile } from 'switchyard/sdk';
import type { CompileContext, ConfigPath } from 'switchyard/sdk';
import { handFetcher } from '../live-fetcher/live-fetcher.ts';
import { parseJwks } from './keys.ts';
import { RemoteJwks, StaticKeySource } from './remote-jwks.ts';
import type { JwksFetcher, KeySource } from './remote-jwks.ts';
import { JwtVerifier, normalizeRequiredClaims } from './verifier.ts';
import type { JwtProvider, JwtVerifierOptions } from './verifier.ts';
import { shownUrl } from '../credentials/shown-url.ts';

/** `jwks` as written in the config: exactly one of `url` and `file`. */
export interface JwksConfig {
  url?: string;
  file?: string;
}

/** One provider as written in the config (`jwtAuth` single form, `jwtAuth.providers[]`, `mcpAuthentication`). */
export interface JwtProviderConfig {
  issuer: string;
  audiences?: string[];
  jwks: JwksConfig;
  jwtValidationOptions?: { requiredClaims?: string[] };
}

/** A provider config and where it sits inside the plugin's value (for error positions). */
export interface PlacedProviderConfig {
  readonly config: JwtProviderConfig;
  /** Path below the plugin's value: `[]` for a single-provider form, `['providers', 2]` for a list entry. */
  readonly at: ConfigPath;
}

/** Largest JWKS document accepted from a URL. */
const MAX_JWKS_BYTES = 1024 * 1024;
const FETCH_TIMEOUT_MS = 5000;

async function loadFileKeys(file: string, ctx: CompileContext, at: ConfigPath): Promise<KeySource> {
  const sub = [...at, 'jwks', 'file'];
  if (ctx.checkOnly) notChecked(ctx, `the JWKS file \`${file}\``, sub);
  const path = resolve(ctx.cwd, file);
  let text: string;
  try {
    text = await readSharedFile(ctx.sharedFetches, path, FILE_SIZE_LIMITS.jwks);
  } catch (err) {
    return ctx.fail(`cannot read the JWKS file \`${file}\` (resolved to ${path}, relative paths start at the gateway's working directory): ${(err as Error).message}`, sub);
  }
  let doc: unknown;
  try {
    doc = parseJsonFileText(text);
  } catch (err) {
    return ctx.fail(`the JWKS file \`${file}\` is not valid JSON: ${(err as Error).message}`, sub);
  }
  const parsed = parseJwks(doc);
  if (parsed.problems.length > 0) return ctx.fail(`the JWKS file \`${file}\` has unusable keys: ${parsed.problems.join('; ')}`, sub);
  if (parsed.keys.size === 0) return ctx.fail(`the JWKS file \`${file}\` holds no signature key`, sub);
  return new StaticKeySource(parsed);
}

/** How old another worker's JWKS answer may be and still be used (the minimum refetch interval). */
const SHARED_JWKS_MAX_AGE_MS = 30_000;

async function loadRemoteKeys(raw: string, ctx: CompileContext, at: ConfigPath): Promise<KeySource> {
  const sub = [...at, 'jwks', 'url'];
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return ctx.fail(`\`${raw}\` is not a URL`, sub);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return ctx.fail('the JWKS URL must use http or https', sub);
  // Through a pooled upstream, so TLS settings and connection reuse match the rest of the gateway.
  const connection = await ctx.connect({ host: raw, paths: 'allow', allow: [], what: 'the JWKS endpoint', at: [...at, 'jwks'], hostField: 'url', authority: 'target' });
  if (ctx.checkOnly) notChecked(ctx, `the JWKS at ${shownUrl(url)}`, sub);
  const path = connection.path;
  const fetcher: JwksFetcher = async () => {
    const res = await connection.request({ method: 'GET', path, headers: { accept: 'application/jwk-set+json, application/json' }, timeoutMs: FETCH_TIMEOUT_MS });
    const body = await readCappedText(res.body, MAX_JWKS_BYTES);
    const cc = res.headers['cache-control'];
    return { status: res.status, body, cacheControl: Array.isArray(cc) ? cc.join(',') : cc };
  };
  // One fetch per change for the whole gateway, however many workers it runs: a worker that needs the set gets
  // another worker's fresh answer, or makes the fetch that everyone asking meanwhile shares.
  const held = ctx.resources.get(`jwt:jwks-held:${url.href}`, () => ({ at: 0 }));
  const shared: JwksFetcher = async () => {
    const got = await ctx.sharedFetches.fetch(`jwt:jwks:${url.href}`, { maxAgeMs: SHARED_JWKS_MAX_AGE_MS, after: held.at }, fetcher);
    held.at = got.at;
    return got.value;
  };
  const shown = shownUrl(url);
  const logger = ctx.logger.child({ jwks: shown });
  // Keyed by URL: every provider and route naming this URL shares one key set, and a reload keeps it.
  const key = `jwt:jwks:${url.href}`;
  const remote = ctx.resources.get(key, () => new RemoteJwks(shown, shared, logger), (r) => r.dispose());
  handFetcher(ctx, key, remote, shared);
  try {
    await remote.load();
  } catch (err) {
    // Fail soft (ADR 0020): an identity provider's outage must not stop the gateway or a reload. Requests whose
    // token needs these keys get 503 until the background fetch (backoff) succeeds.
    ctx.warn(
      `cannot load the JWKS from ${shown}: ${(err as Error).message}; serving anyway: requests with tokens of this issuer get 503 until the keys load (fetching again with backoff)`,
      sub,
    );
  }
  return remote;
}

/** Compile one provider: load its keys (file now, URL fetched now or reused from the resource cache). */
export async function compileJwtProvider(config: JwtProviderConfig, ctx: CompileContext, at: ConfigPath = []): Promise<JwtProvider> {
  const jwks = config.jwks;
  if ((jwks.url === undefined) === (jwks.file === undefined)) return ctx.fail('exactly one of `url` or `file` is required', [...at, 'jwks']);
  const keys = jwks.file !== undefined ? await loadFileKeys(jwks.file, ctx, at) : await loadRemoteKeys(jwks.url!, ctx, at);
  return {
    issuer: config.issuer,
    audiences: [...new Set(config.audiences ?? [])],
    keys,
    requiredClaims: normalizeRequiredClaims(config.jwtValidationOptions?.requiredClaims),
  };
}

/**
 * Compile providers into one verifier. Issuers must be distinct (the token's `iss` picks the provider).
 * Keys of all providers load in parallel.
 */
export async function compileJwtVerifier(
  providers: readonly PlacedProviderConfig[],
  ctx: CompileContext,
  options: JwtVerifierOptions = {},
): Promise<JwtVerifier> {
  const seen = new Map<string, number>();
  providers.forEach(({ config, at }, i) => {
    const first = seen.get(config.issuer);
    if (first !== undefined) ctx.fail(`the issuer \`${config.issuer}\` is already used by \`providers[${first}]\`; each provider needs its own issuer`, [...at, 'issuer']);
    seen.set(config.issuer, i);
  });
  const compiled = await Promise.all(providers.map(({ config, at }) => compileJwtProvider(config, ctx, at)));
  return new JwtVerifier(compiled, options);
}
