import { createRequire } from 'node:module';
import type * as Yaml from 'yaml';

/**
 * The positioned YAML parser (`yaml`), loaded on first use: a valid config without `${VAR}` is parsed by js-yaml
 * (fast-parse.ts), so a gateway needs this one only for such a config or to position an error. Not loading it at
 * start saves about 12 MiB and 40 ms (docs/adr/0034). `require` keeps the callers synchronous; a bundle
 * (bin/build-dist.ts) turns this call into esbuild's own lazy require of the bundled copy.
 *
 * Where it resolves from node_modules (a clone, the npm package), it is loaded through a `require` of its own and
 * `releaseYaml()` takes it out of Node's module cache when a config load is done (ADR 0099): a config with `${VAR}`
 * or a reload with an error no longer keeps it (~1 MiB of heap) for the process's life; the next load loads it again.
 */
const lazyRequire = createRequire(import.meta.url);

const YAML_PACKAGE = /[\\/]node_modules[\\/]yaml[\\/]/;

/** The module of this load, and the module cache's keys before it was loaded (not released). */
let session: { readonly lib: typeof Yaml; readonly before: ReadonlySet<string>; readonly cache: NodeJS.Dict<unknown> } | undefined;
/** No node_modules to resolve it from (a trimmed distribution): the bundled copy, kept. */
let bundledOnly = false;

export function yamlLib(): typeof Yaml {
  if (session) return session.lib;
  if (bundledOnly) return lazyRequire('yaml') as typeof Yaml;
  const fresh = createRequire(import.meta.url);
  try {
    fresh.resolve('yaml');
  } catch {
    bundledOnly = true;
    return lazyRequire('yaml') as typeof Yaml;
  }
  const before = new Set(Object.keys(fresh.cache));
  session = { lib: fresh('yaml') as typeof Yaml, before, cache: fresh.cache };
  return session.lib;
}

/** Take the `yaml` modules of this load out of Node's module cache (the comment above). */
export function releaseYaml(): void {
  if (!session) return;
  for (const key of Object.keys(session.cache)) if (YAML_PACKAGE.test(key) && !session.before.has(key)) delete session.cache[key];
  session = undefined;
}
