import { createRequire } from 'node:module';
import type * as Yaml from 'yaml';

/**
 * The positioned YAML parser (`yaml`), loaded on first use: a valid config without `${VAR}` is parsed by js-yaml
 * (fast-parse.ts), so a gateway needs this one only for such a config or to position an error. Not loading it at
 * start saves about 12 MiB and 40 ms (docs/adr/0034). `require` keeps the callers synchronous; a bundle
 * (bin/build-dist.ts) turns this call into esbuild's own lazy require of the bundled copy.
 */
const lazyRequire = createRequire(import.meta.url);

let lib: typeof Yaml | undefined;

export function yamlLib(): typeof Yaml {
  return (lib ??= lazyRequire('yaml') as typeof Yaml);
}
