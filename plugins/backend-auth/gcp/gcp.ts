import { GoogleAuth } from 'google-auth-library';
import type { AuthClient } from 'google-auth-library';
import type { Logger, PluginSpans, ResourceCache } from 'switchyard/sdk';
import { originHostname } from '../../lib/backend-auth/contract.ts';
import type { BackendAuthInstance } from '../../lib/backend-auth/contract.ts';
import { jwtExpiry, TokenCache, tracedFetch } from '../../lib/backend-auth/token-cache.ts';
import type { ExpiringToken } from '../../lib/backend-auth/token-cache.ts';

/** The `gcp` value after validation. */
export interface GcpConfig {
  type?: 'idToken' | 'identityToken' | 'accessToken';
  audience?: string;
}

const SCOPES = ['https://www.googleapis.com/auth/cloud-platform'];
/** The token endpoint google-auth-library always calls for service-account keys. */
const GOOGLE_TOKEN_URL = 'https://oauth2.googleapis.com/token';
/** Assumed lifetime when a response does not say (Google tokens live an hour). */
const DEFAULT_LIFETIME_MS = 3_600_000;

interface IdTokenSource {
  fetchIdToken(audience: string): Promise<string>;
}

/**
 * google-auth-library posts service-account assertions to Google's token endpoint whatever the key file says.
 * A key whose `token_uri` names another endpoint (a private or sovereign deployment, a test stand-in) gets its
 * token requests sent there, through the client's own transport.
 */
function honourTokenUri(auth: GoogleAuth, client: AuthClient): void {
  const json = auth.jsonContent as { type?: string; token_uri?: string } | null;
  if (json?.type !== 'service_account' || !json.token_uri || json.token_uri === GOOGLE_TOKEN_URL) return;
  const target = new URL(json.token_uri);
  client.transporter.interceptors.request.add({
    resolved: async (options) => {
      if (String(options.url) === GOOGLE_TOKEN_URL) options.url = target;
      return options;
    },
  });
}

/** Application Default Credentials and the tokens minted from them, shared by every `gcp` of the process. */
interface GoogleCredentials {
  client(): Promise<AuthClient>;
  readonly cache: TokenCache;
}

function googleCredentials(log: Logger): GoogleCredentials {
  let clientPromise: Promise<AuthClient> | undefined;
  const discover = (): Promise<AuthClient> => {
    // A fresh GoogleAuth per discovery: it remembers a failed environment check, which must not outlive the failure.
    const auth = new GoogleAuth({ scopes: SCOPES });
    return auth.getClient().then(
      (c) => {
        honourTokenUri(auth, c);
        log.debug('Google credentials found', { credential: c.constructor.name });
        return c;
      },
      (err: unknown) => {
        clientPromise = undefined;
        throw err;
      },
    );
  };
  return { client: () => (clientPromise ??= discover()), cache: new TokenCache() };
}

/**
 * Google credentials from Application Default Credentials: `GOOGLE_APPLICATION_CREDENTIALS` (a service-account
 * key), gcloud's ADC file, or the metadata server (GCE, GKE, Cloud Run; `GCE_METADATA_HOST` overrides its address).
 * ADC is process-wide, so the credentials and their tokens are one shared resource: routes with `gcp` share tokens,
 * and a config reload keeps them. Loaded only when a config uses `gcp`; nothing is fetched until the first request.
 */
export function createGcpAuth(config: GcpConfig, log: Logger, resources: ResourceCache, spans?: PluginSpans): BackendAuthInstance {
  const { client, cache } = resources.get('backendAuth.gcp:adc', () => googleCredentials(log), (g) => g.cache.clear());

  const accessToken = tracedFetch(spans, 'gcp', 'access', async (): Promise<ExpiringToken> => {
    const c = await client();
    const started = Date.now();
    const { token } = await c.getAccessToken();
    if (!token) throw new Error('Google returned no access token');
    const expiry = c.credentials?.expiry_date;
    return { token, expiresAt: typeof expiry === 'number' ? expiry : started + DEFAULT_LIFETIME_MS };
  });

  const idToken = (audience: string): Promise<ExpiringToken> => tracedFetch(spans, 'gcp', 'id', () => fetchIdToken(audience))();
  const fetchIdToken = async (audience: string): Promise<ExpiringToken> => {
    const c = await client();
    const source = c as unknown as Partial<IdTokenSource>;
    if (typeof source.fetchIdToken !== 'function') {
      throw new Error(`the Google credentials found (${c.constructor.name}) cannot mint identity tokens; use the metadata server or a service-account key`);
    }
    const started = Date.now();
    const token = await source.fetchIdToken(audience);
    return { token, expiresAt: jwtExpiry(token) ?? started + DEFAULT_LIFETIME_MS };
  };

  const wantsIdToken = config.type === 'idToken' || config.type === 'identityToken';
  const audiences = new Map<string, string>();
  const audienceFor = (origin: string): string => {
    let audience = audiences.get(origin);
    if (audience === undefined) {
      audience = `https://${originHostname(origin)}`;
      if (audiences.size < 1000) audiences.set(origin, audience);
    }
    return audience;
  };

  return {
    apply(_ex, attempt) {
      let token: string | Promise<string>;
      if (wantsIdToken) {
        const audience = config.audience ?? audienceFor(attempt.origin);
        token = cache.get(`id:${audience}`, () => idToken(audience), 'Google identity token');
      } else {
        token = cache.get('access', accessToken, 'Google access token');
      }
      if (typeof token === 'string') {
        attempt.headers.authorization = `Bearer ${token}`;
        return;
      }
      return token.then((t) => {
        attempt.headers.authorization = `Bearer ${t}`;
      });
    },
  };
}
