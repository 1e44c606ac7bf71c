import { parseUpstreamAddress } from 'switchyard/sdk';

/** An `ai.hostOverride` resolved to an origin. */
export interface HostOverride {
  readonly secure: boolean;
  readonly origin: string;
}

/**
 * `host:port`, `[v6]:port`, `host` or `http(s)://host[:port]`, read by the SDK's one address parser: without a
 * scheme the connection is TLS only when `backendTLS` applies (BEHAVIOUR.md DECIDED 12). An error message otherwise.
 */
export function parseHostOverride(value: string, tlsConfigured: boolean): HostOverride | string {
  const parsed = parseUpstreamAddress(value, { tls: tlsConfigured });
  return 'message' in parsed ? parsed.message : { secure: parsed.secure, origin: parsed.origin };
}
