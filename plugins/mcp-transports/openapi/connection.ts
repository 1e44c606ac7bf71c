import { parseTargetAddress } from '../../lib/mcp/target-address.ts';
import type { TargetAddressConfig } from '../../lib/mcp/target-address.ts';

/** Where the API of an `openapi` target is served. */
export interface ApiConnection {
  readonly secure: boolean;
  /** `http(s)://host:port`, the key of the upstream pool. */
  readonly origin: string;
  /**
   * The base path given in the config (`path`, or the path of a `host` URL), normalised to `/x/y`, or `''` for
   * `/`; undefined when the config gives none (the document's `servers` then decide).
   */
  readonly basePath: string | undefined;
}

/** A problem with one field, for `ctx.fail(message, [field])`. */
export interface ConnectionProblem {
  readonly field: 'host' | 'port' | 'path';
  readonly message: string;
}

/** `/v2/` -> `/v2`, `v2` -> `/v2`, `/` and `` -> `''`. */
export function normaliseBasePath(path: string): string {
  const trimmed = path.trim().replace(/\/+$/, '');
  if (trimmed === '') return '';
  return trimmed.startsWith('/') ? trimmed : `/${trimmed}`;
}

/**
 * Resolve the connection form shared with the `sse` and `mcp` transports (`plugins/lib/mcp/target-address.ts`):
 * `host` as `name`, `name:port` or `http(s)://name[:port][/path]` (then without `port` and `path`), plus
 * `port` and `path`. Without a scheme the API is reached over TLS only when `tlsConfigured`. The base path is
 * the `path` field or a URL's non-root path; without either it is left to the document.
 */
export function parseConnection(config: TargetAddressConfig, tlsConfigured: boolean): ApiConnection | ConnectionProblem {
  const parsed = parseTargetAddress(config, tlsConfigured, '/');
  if ('error' in parsed) return { field: parsed.field, message: parsed.error };
  if (parsed.url.search || parsed.url.hash) {
    return { field: config.path !== undefined ? 'path' : 'host', message: 'the base path takes no query or fragment' };
  }
  const urlForm = /^[a-z][a-z0-9+.-]*:\/\//i.test(config.host.trim());
  const given = config.path !== undefined || (urlForm && normaliseBasePath(parsed.url.pathname) !== '');
  return {
    secure: parsed.secure,
    origin: parsed.origin,
    basePath: given ? normaliseBasePath(parsed.url.pathname) : undefined,
  };
}
