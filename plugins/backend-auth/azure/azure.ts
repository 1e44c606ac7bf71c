import { createHash } from 'node:crypto';
import {
  AzureAuthorityHosts,
  AzureCliCredential,
  AzureDeveloperCliCredential,
  ChainedTokenCredential,
  ClientSecretCredential,
  ManagedIdentityCredential,
  WorkloadIdentityCredential,
} from '@azure/identity';
import type { TokenCredential } from '@azure/identity';
import type { PluginSpans, ResourceCache } from 'switchyard/sdk';
import type { BackendAuthInstance } from '../../lib/backend-auth/contract.ts';
import { TokenCache, tracedFetch } from '../../lib/backend-auth/token-cache.ts';
import type { ExpiringToken } from '../../lib/backend-auth/token-cache.ts';

/** The `azure` value after validation. */
export interface AzureConfig {
  explicitConfig?: {
    clientSecret?: { tenant_id: string; client_id: string; client_secret: string };
    managedIdentity?: { userAssignedIdentity?: { clientId?: string; objectId?: string; resourceId?: string } };
    workloadIdentity?: Record<string, never>;
  };
  developerImplicit?: Record<string, never>;
  scope?: string;
}

/** Azure OpenAI / AI Services, the usual upstream of an agent gateway. */
export const DEFAULT_SCOPE = 'https://cognitiveservices.azure.com/.default';

const MICROSOFT_AUTHORITIES = new Set(
  [...Object.values(AzureAuthorityHosts), 'https://login.windows.net', 'https://login.microsoft.com'].map((u) => new URL(u).hostname),
);

/**
 * MSAL checks an authority against Microsoft's instance-discovery service, which knows only Microsoft's clouds.
 * An operator who points `AZURE_AUTHORITY_HOST` elsewhere (Azure Stack Hub, ADFS, a local stand-in) has chosen that
 * authority, so discovery is skipped for it.
 */
function authorityOptions(): { authorityHost?: string; disableInstanceDiscovery?: boolean } {
  const host = process.env.AZURE_AUTHORITY_HOST;
  if (!host) return {};
  let hostname: string;
  try {
    hostname = new URL(host).hostname;
  } catch {
    return {};
  }
  return { authorityHost: host, disableInstanceDiscovery: !MICROSOFT_AUTHORITIES.has(hostname) };
}

function credential(config: AzureConfig): TokenCredential {
  const explicit = config.explicitConfig;
  if (explicit?.clientSecret) {
    const { tenant_id, client_id, client_secret } = explicit.clientSecret;
    return new ClientSecretCredential(tenant_id, client_id, client_secret, authorityOptions());
  }
  if (explicit?.managedIdentity) {
    const id = explicit.managedIdentity.userAssignedIdentity;
    if (id?.clientId) return new ManagedIdentityCredential({ clientId: id.clientId });
    if (id?.objectId) return new ManagedIdentityCredential({ objectId: id.objectId });
    if (id?.resourceId) return new ManagedIdentityCredential({ resourceId: id.resourceId });
    return new ManagedIdentityCredential();
  }
  if (explicit?.workloadIdentity) {
    // AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_FEDERATED_TOKEN_FILE, as the AKS workload identity webhook sets them.
    return new WorkloadIdentityCredential(authorityOptions());
  }
  // developerImplicit: whoever is signed in to the Azure CLI or the Azure Developer CLI on this machine.
  return new ChainedTokenCredential(new AzureCliCredential(), new AzureDeveloperCliCredential());
}

interface SharedCredential {
  readonly credential: TokenCredential;
  readonly cache: TokenCache;
}

/**
 * Microsoft Entra access tokens from @azure/identity (loaded only when a config uses `azure`). The credential and its
 * tokens are a shared resource keyed by the credential settings (hashed: they include the client secret), so routes
 * with the same credential share tokens and a config reload keeps them.
 */
export function createAzureAuth(config: AzureConfig, resources: ResourceCache, spans?: PluginSpans): BackendAuthInstance {
  const id = createHash('sha256')
    .update(JSON.stringify([config.explicitConfig ?? null, config.developerImplicit ? 'developer' : null, process.env.AZURE_AUTHORITY_HOST ?? null]))
    .digest('hex');
  const { credential: cred, cache } = resources.get<SharedCredential>(
    `backendAuth.azure:${id}`,
    () => ({ credential: credential(config), cache: new TokenCache() }),
    (shared) => shared.cache.clear(),
  );
  const scope = config.scope ?? DEFAULT_SCOPE;
  const fetch = tracedFetch(spans, 'azure', 'access', async (): Promise<ExpiringToken> => {
    const token = await cred.getToken(scope);
    if (!token) throw new Error('Microsoft Entra returned no access token');
    return { token: token.token, expiresAt: token.expiresOnTimestamp };
  });
  return {
    apply(_ex, attempt) {
      const token = cache.get(scope, fetch, 'Microsoft Entra access token');
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
