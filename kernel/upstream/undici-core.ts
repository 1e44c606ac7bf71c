import { createRequire } from 'node:module';
import type * as Undici from 'undici';
// undici's own modules for a pool and a connector, not its index: the index loads all of undici (fetch,
// WebSocket, mocks, caches, interceptors) and, through `globalThis.Headers` in its cookies module, Node's bundled
// copy as well; about 14 MiB of idle RSS and 40-90 ms of CPU at start (docs/perf.md "Startup"). undici has no
// `exports` map, so these paths resolve; `undici-core.test.ts` checks they are what the index exports.
// Its utilities (six small modules) are loaded with the kernel: the reply path reads header names with them.
import utilModule from 'undici/lib/core/util.js';

/**
 * undici's client (pool, HTTP/1.1 and h2 clients, connector, and `node:http2`), loaded on first
 * use (ADR 0079): a config whose upstreams are all cleartext and reached by the direct forward (ADR 0073) never
 * loads it. `require` keeps the callers synchronous; a bundle (bin/build-dist.ts) turns these calls into esbuild's
 * lazy require of its copy.
 */
const lazyRequire = createRequire(import.meta.url);

interface UndiciClient {
  readonly Pool: typeof Undici.Pool;
  readonly buildConnector: typeof Undici.buildConnector;
}

let client: UndiciClient | undefined;

/** undici's pool and connector, loaded by the first call. */
export function undiciClient(): UndiciClient {
  return (client ??= {
    Pool: lazyRequire('undici/lib/dispatcher/pool.js') as UndiciClient['Pool'],
    buildConnector: lazyRequire('undici/lib/core/connect.js') as UndiciClient['buildConnector'],
  });
}

/** Whether anything in this process has needed undici's client yet (the admin's diagnostics, the startup test). */
export function undiciClientLoaded(): boolean {
  return client !== undefined;
}

export type Pool = Undici.Pool;

/**
 * undici's pool of an origin, made (and undici loaded) when first asked for (ADR 0079): a cleartext origin that only
 * the direct forward reaches (ADR 0073) never needs it.
 */
export class LazyPool {
  private readonly create: () => Pool;
  /** The pool, once made. */
  created: Pool | undefined = undefined;
  constructor(create: () => Pool) {
    this.create = create;
  }

  get(): Pool {
    return (this.created ??= this.create());
  }
}

/**
 * undici's own `destroy(stream, err)`: on a server's `IncomingMessage` it detaches the socket first, so a request
 * body given up on does not take the client's connection with it (what `request()` does with its body on failure).
 */
export const destroyStream: (stream: NodeJS.ReadableStream, err?: Error) => void = utilModule.destroy;

/** undici's header name as a lower-case string (well-known names without a copy), as its `parseHeaders` reads it. */
export const headerNameToString: (name: Buffer | string) => string = utilModule.headerNameToString;

/** undici's raw `[name, value, ...]` answer headers as the object its controller API and `request()` give. */
export const parseHeaders: (raw: readonly (Buffer | string)[]) => Record<string, string | string[]> = utilModule.parseHeaders;
