import { resolve } from 'node:path';
import { notChecked, readSharedFile } from 'switchyard/sdk';
import type { BackendCompileContext, Logger, SharedFetches } from 'switchyard/sdk';
import { WatchedFile } from '../../lib/watched-file/watched-file.ts';
import { lookupPrice, parsePriceCatalog, priceCatalog, PriceCatalogError, priceTable } from '../../lib/llm/prices.ts';
import type { ModelPrice, PriceCatalog, PriceTable } from '../../lib/llm/prices.ts';
import builtin from './default-prices.json' with { type: 'json' };

/** `ai.costs` (docs/llm.md "Costs", ADR 0027). */
export interface AiCostsConfig {
  /** A catalog file replacing the built-in one; re-read when it changes. */
  catalog?: string;
  /** Model -> price for this backend's provider, over the catalog. */
  prices?: Record<string, ModelPrice>;
}

/** Largest catalog file read (a catalog of every model of every provider is well under 1 MiB). */
const CATALOG_LIMIT = 4 * 1024 * 1024;

/**
 * The built-in catalog, made once from the JSON module without the positioned parser (costs.test.ts parses the file
 * with it and checks it gives this catalog): an `ai` route with the built-in prices loads no YAML parser at all.
 */
let builtinCatalog: PriceCatalog | undefined;
export function builtinPrices(): PriceCatalog {
  return (builtinCatalog ??= priceCatalog(builtin.providers));
}

/**
 * A catalog file, shared by every backend naming it and kept across reloads. Read at each config load (a bad file is
 * a config error then); a watcher re-reads it when it changes, and a change that does not parse is logged and
 * ignored: the last good prices stay.
 */
class CatalogFile {
  catalog: PriceCatalog | undefined;
  private readonly file: WatchedFile;

  private readonly fetches: SharedFetches;

  constructor(path: string, logger: Logger, fetches: SharedFetches) {
    this.fetches = fetches;
    this.file = new WatchedFile(path, {
      removed: () => logger.warn('price catalog removed; keeping the prices already loaded', { file: path }),
      changed: () =>
        this.load().then(
          () => logger.info('price catalog reloaded', { file: path }),
          (err: unknown) => logger.error('price catalog change ignored; keeping the previous prices', { file: path, error: (err as Error).message }),
        ),
    });
  }

  /** Read and parse now; rejects with a message (positioned in the file) and keeps the old prices. */
  load(): Promise<void> {
    return this.file.serialize(async () => {
      // Once per version for the gateway's workers (plugins/lib/watched-file/shared-read.ts).
      const text = await readSharedFile(this.fetches, this.file.path, CATALOG_LIMIT, { watched: true });
      this.catalog = parsePriceCatalog(text, this.file.path);
    });
  }

  watch(): void {
    this.file.watch();
  }

  close(): void {
    this.file.close();
  }
}

/** The price of a model on one backend: its inline `prices`, then the catalog's table for its provider. */
export type PriceLookup = (model: string) => ModelPrice | undefined;

export async function compileCosts(config: AiCostsConfig | undefined, provider: string, ctx: BackendCompileContext): Promise<PriceLookup> {
  const inline: PriceTable | undefined = config?.prices && Object.keys(config.prices).length ? priceTable(Object.entries(config.prices)) : undefined;
  let table: () => PriceTable | undefined;
  if (config?.catalog !== undefined) {
    if (ctx.checkOnly) notChecked(ctx, `the price catalog \`${config.catalog}\``, ['costs', 'catalog']);
    const path = resolve(ctx.cwd, config.catalog);
    const file = ctx.resources.get(`ai:priceCatalog:${path}`, () => new CatalogFile(path, ctx.logger.child({ file: path }), ctx.sharedFetches), (f) => f.close());
    try {
      await file.load();
    } catch (err) {
      const why = err instanceof PriceCatalogError ? err.message : `${path}: ${(err as Error).message}`;
      ctx.fail(`cannot use the price catalog \`${config.catalog}\`: ${why}`, ['costs', 'catalog']);
    }
    file.watch();
    table = () => file.catalog?.get(provider);
  } else {
    const fixed = builtinPrices().get(provider);
    table = () => fixed;
  }
  // Looked up once per model (a pattern match per call otherwise), until the catalog file changes; a bounded number
  // of models, since clients choose them.
  let cachedFor: PriceTable | undefined;
  const cache = new Map<string, ModelPrice | undefined>();
  return (model) => {
    const current = table();
    if (current !== cachedFor) {
      cache.clear();
      cachedFor = current;
    }
    if (cache.has(model)) return cache.get(model);
    const price = lookupPrice(inline, model) ?? lookupPrice(current, model);
    if (cache.size < MAX_CACHED_PRICES) cache.set(model, price);
    return price;
  };
}

/** Models whose price lookups a backend keeps. */
const MAX_CACHED_PRICES = 1000;
