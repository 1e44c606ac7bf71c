import type { Logger, PluginSpans, ResourceCache } from 'switchyard/sdk';
import { originHostname } from '../../lib/backend-auth/contract.ts';
import type { BackendAuthInstance } from '../../lib/backend-auth/contract.ts';
import { TOKEN_FETCH_TIMEOUT_MS, tracedFetch } from '../../lib/backend-auth/token-cache.ts';
import { scopeFromHost } from './aws-host.ts';
import type { SigningScope } from './aws-host.ts';
import { createSigner, SIGNATURE_HEADERS, signRequest } from './sigv4.ts';
import type { AwsCredentials } from './sigv4.ts';

/** The signing service when neither `serviceName` nor the upstream host names one (the reference's default). */
export const DEFAULT_SERVICE = 'bedrock';

/** The `aws` value after validation. */
export interface AwsConfig {
  accessKeyId?: string;
  secretAccessKey?: string;
  sessionToken?: string;
  region?: string;
  serviceName?: string;
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms}ms ${what}`)), ms);
    timer.unref?.();
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/**
 * The credentials provider: the configured keys, or the AWS SDK's default chain (environment, shared config and
 * SSO profiles, web identity, ECS and EC2 metadata), which caches and refreshes what it finds.
 */
async function credentialsProvider(config: AwsConfig, resources: ResourceCache, spans: PluginSpans | undefined): Promise<() => Promise<AwsCredentials>> {
  if (config.accessKeyId !== undefined && config.secretAccessKey !== undefined) {
    const fixed: AwsCredentials = { accessKeyId: config.accessKeyId, secretAccessKey: config.secretAccessKey, sessionToken: config.sessionToken };
    return () => Promise.resolve(fixed);
  }
  const { defaultProvider } = await import('@aws-sdk/credential-provider-node');
  // One chain per process while in use: what it resolved (and refreshes) survives config reloads.
  const chain = resources.get('backendAuth.aws:default-chain', () => defaultProvider());
  const resolve = (): Promise<AwsCredentials> => withTimeout(chain(), TOKEN_FETCH_TIMEOUT_MS, 'resolving AWS credentials from the default chain');
  const traced = tracedFetch(spans, 'aws', 'credentials', resolve);
  // The chain memoizes, refreshing credentials within 5 minutes of their expiry: only a call that may resolve
  // again is a span, not every signature.
  let last: AwsCredentials | undefined;
  return async () => {
    const cached = last !== undefined && (last.expiration === undefined || last.expiration.getTime() - Date.now() > 300_000);
    last = await (cached ? resolve() : traced());
    return last;
  };
}

/** SigV4 signing of every upstream attempt (loaded only when a config uses `aws`). */
export async function createAwsAuth(config: AwsConfig, log: Logger, resources: ResourceCache, spans?: PluginSpans): Promise<BackendAuthInstance> {
  const credentials = await credentialsProvider(config, resources, spans);
  // S3 signs its path differently from every other service, so the signer depends on the service.
  const signers = new Map<string, ReturnType<typeof createSigner>>();
  const signerFor = (service: string): ReturnType<typeof createSigner> => {
    let signer = signers.get(service);
    if (!signer) signers.set(service, (signer = createSigner(credentials, service)));
    return signer;
  };
  const envRegion = process.env.AWS_REGION || process.env.AWS_DEFAULT_REGION || undefined;
  const fixed: SigningScope | undefined = config.serviceName && config.region ? { service: config.serviceName, region: config.region } : undefined;
  const byOrigin = new Map<string, SigningScope | Error>();

  const scopeFor = (origin: string, host: string | undefined): SigningScope | Error => {
    let scope = byOrigin.get(origin);
    if (scope) return scope;
    const derived = scopeFromHost(originHostname(origin)) ?? (host ? scopeFromHost(host.replace(/:\d+$/, '')) : undefined);
    // A host naming no AWS service (a proxy, a VPC endpoint alias) signs for `bedrock`, as the reference does.
    const service = config.serviceName ?? derived?.service ?? DEFAULT_SERVICE;
    const region = config.region ?? derived?.region ?? envRegion;
    if (!region) scope = new Error(`cannot tell the AWS region from the upstream host \`${originHostname(origin)}\`; set \`region\``);
    else scope = { service, region };
    if (byOrigin.size < 1000) byOrigin.set(origin, scope);
    if (scope instanceof Error) log.warn(scope.message);
    return scope;
  };

  return {
    needsBody: true,
    async apply(_ex, attempt) {
      const h = attempt.headers;
      const scope = fixed ?? scopeFor(attempt.origin, typeof h.host === 'string' ? h.host : undefined);
      if (scope instanceof Error) throw scope;
      // Runs after every other request change of this attempt; a retry signs again with a fresh date.
      const signed = await signRequest(signerFor(scope.service), { method: attempt.method, path: attempt.path, headers: h, body: attempt.body }, scope);
      for (const name of SIGNATURE_HEADERS) delete h[name];
      Object.assign(h, signed);
    },
  };
}
