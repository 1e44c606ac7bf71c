import { createRequire } from 'node:module';
import type * as Yaml from 'yaml';
import { LoadScopedPackage } from './load-scoped-package.ts';

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

/** `yaml`, loaded for a config load and released after it (load-scoped-package.ts). */
const yamlPackage = new LoadScopedPackage(import.meta.url, 'yaml', /[\\/]node_modules[\\/]yaml[\\/]/);

export function yamlLib(): typeof Yaml {
  return yamlPackage.require('yaml', () => lazyRequire('yaml')) as typeof Yaml;
}

/** Take the `yaml` modules of this load out of Node's module cache (the comment above). */
export function releaseYaml(): void {
  yamlPackage.release();
}
