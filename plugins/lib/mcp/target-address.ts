import { parseUpstreamAddress } from 'switchyard/sdk';

/** The connection fields shared by the HTTP-based MCP transports (`sse`, `mcp`, `openapi`). */
export interface TargetAddressConfig {
  host: string;
  port?: number;
  path?: string;
}

/** Where an HTTP-based MCP target lives. */
export interface TargetAddress {
  /** `http(s)://host:port`, the pool key. */
  readonly origin: string;
  readonly secure: boolean;
  /** Path (and query) of the MCP endpoint. */
  readonly path: string;
  /** The full endpoint URL. */
  readonly url: URL;
}

/**
 * Resolve a target's connection form (BEHAVIOUR.md §2.5.1) with the SDK's one address parser: either
 * `host: "http(s)://name[:port]/path"` (the scheme decides TLS, the URL's path is the endpoint), or `host` (`name`
 * or `name:port`) with optional `port` and `path`. Without a scheme the connection uses TLS only when `backendTLS`
 * applies; without a port it is 80 or 443; without a path it is `defaultPath`. An error sentence, with the
 * offending field, when the form is invalid.
 */
export function parseTargetAddress(
  config: TargetAddressConfig,
  tlsConfigured: boolean,
  defaultPath: string,
): TargetAddress | { error: string; field: 'host' | 'port' | 'path' } {
  const parsed = parseUpstreamAddress(config.host, { tls: tlsConfigured, port: config.port, path: config.path, paths: 'allow', defaultPath });
  if ('message' in parsed) return { error: parsed.message, field: parsed.field };
  return { origin: parsed.origin, secure: parsed.secure, path: parsed.path, url: new URL(parsed.path, parsed.origin) };
}
