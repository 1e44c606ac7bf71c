import { createRequire } from 'node:module';
import type * as Yaml from 'yaml';
import { parseDataWithoutPositions } from './fast-parse.ts';
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
 * Plugins reach the same copy through the SDK's `withYamlParser` (a price catalog file and its rereads).
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

/**
 * Run `use` with the `yaml` package (https://eemeli.org/yaml/: `parseDocument`, `LineCounter`, `isMap` and the rest)
 * loaded for the call only, for a file a plugin parses with positions (a catalog, a document the config names) at
 * compile time or when the file changes. A static `import 'yaml'` would keep the parser (~1 MiB of heap) loaded for the
 * process's life; here it is released from Node's module cache when `use` returns (or, inside a config load that
 * loaded it too, when that load ends), and the next call loads it again from Node's compile cache (a few ms).
 *
 * Return plain data: a value that holds the parser's nodes or classes keeps the parser's code alive.
 *
 * @example
 * const catalog = withYamlParser(({ parseDocument, LineCounter }) => {
 *   const lines = new LineCounter();
 *   const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false });
 *   // ...check doc.errors and the nodes, positioning messages with lines.linePos(node.range[0])...
 *   return toPlainCatalog(doc.toJS());
 * });
 */
export function withYamlParser<T>(use: (yaml: typeof Yaml) => T): T {
  return yamlPackage.during('yaml', () => lazyRequire('yaml'), (pkg) => use(pkg as typeof Yaml));
}

/**
 * YAML text as plain data, without positions: js-yaml first (fast-parse.ts `parseDataWithoutPositions`: the same
 * YAML 1.2 core schema a config load uses, about 8 times faster), else `yaml`'s `parse` with `options` for what
 * js-yaml would read otherwise or refuses (aliases, unknown tags, directives, a repeated key, syntax errors, which it
 * then reports). For a large document a plugin reads (an OpenAPI document): data, so `${` is not expanded; both
 * parsers are released after the call.
 */
export function parseYamlData(text: string, options?: Yaml.ParseOptions & Yaml.DocumentOptions & Yaml.SchemaOptions & Yaml.ToJSOptions): unknown {
  const fast = parseDataWithoutPositions(text);
  return fast !== undefined ? fast : withYamlParser(({ parse }) => parse(text, options));
}
