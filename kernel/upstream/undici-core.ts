import type * as Undici from 'undici';
// undici's own modules for a pool, a connector and `request`, not its index: the index loads all of undici (fetch,
// WebSocket, mocks, caches, interceptors) and, through `globalThis.Headers` in its cookies module, Node's bundled
// copy as well; about 14 MiB of idle RSS and 40-90 ms of CPU at start (docs/perf.md "Startup"). undici has no
// `exports` map, so these paths resolve; `undici-core.test.ts` checks they are what the index exports.
import PoolModule from 'undici/lib/dispatcher/pool.js';
import buildConnectorModule from 'undici/lib/core/connect.js';
import requestModule from 'undici/lib/api/api-request.js';
import utilModule from 'undici/lib/core/util.js';

export const Pool: typeof Undici.Pool = PoolModule;
export type Pool = Undici.Pool;
export const buildConnector: typeof Undici.buildConnector = buildConnectorModule;

/**
 * `pool.request(options)`: undici's index adds `request` to every dispatcher's prototype; without the index it is
 * called on the pool directly.
 */
export function poolRequest(pool: Undici.Dispatcher, options: Undici.Dispatcher.RequestOptions): Promise<Undici.Dispatcher.ResponseData> {
  return requestModule.call(pool, options);
}

/**
 * undici's own `destroy(stream, err)`: on a server's `IncomingMessage` it detaches the socket first, so a request
 * body given up on does not take the client's connection with it (what `request()` does with its body on failure).
 */
export const destroyStream: (stream: NodeJS.ReadableStream, err?: Error) => void = utilModule.destroy;

/** undici's header name as a lower-case string (well-known names without a copy), as its `parseHeaders` reads it. */
export const headerNameToString: (name: Buffer | string) => string = utilModule.headerNameToString;

/** undici's raw `[name, value, …]` answer headers as the object its controller API and `request()` give. */
export const parseHeaders: (raw: readonly (Buffer | string)[]) => Record<string, string | string[]> = utilModule.parseHeaders;
