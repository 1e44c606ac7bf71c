import type { CompileContext } from 'switchyard/sdk';

/** An object kept across reloads in the resource cache that fetches on its own (a remote JWKS, an OpenAPI document). */
export interface FetchingResource<F> {
  setFetcher(fetcher: F): void;
}

/** Fetchers handed to each kept object, oldest first, by the number of the compile that built them. */
const offered = new WeakMap<object, { readonly id: number; readonly fetcher: unknown }[]>();
let handed = 0;

/**
 * Give `kept` the fetcher this compile built (over this compile's connection pools) for as long as this compile's
 * config is in use, and when it goes, the fetcher of the newest config still in use (ADR 0139). A compile that
 * fails, or a staged one that is dropped, is released at once: `kept` goes back to the live config's fetcher, so its
 * background fetches never run on pools a config that was never served took (nothing would release them). `key`
 * is the kept object's resource key.
 */
export function handFetcher<F>(ctx: CompileContext, key: string, kept: FetchingResource<F>, fetcher: F): void {
  const id = ++handed;
  let list = offered.get(kept);
  if (!list) offered.set(kept, (list = []));
  list.push({ id, fetcher });
  kept.setFetcher(fetcher);
  // Used by this compile only: disposed when its config is released.
  ctx.resources.get(
    `${key}#fetcher:${id}`,
    () => id,
    () => {
      const at = list.findIndex((o) => o.id === id);
      if (at < 0) return;
      list.splice(at, 1);
      // It was the one in use: the newest still offered takes over.
      if (at === list.length && list.length > 0) kept.setFetcher(list.at(-1)!.fetcher as F);
    },
  );
}
