import { createRequire } from 'node:module';
import type * as JsYaml from 'js-yaml';
import { LoadScopedPackage } from './load-scoped-package.ts';

/**
 * js-yaml's `load` for one parse (fast-parse.ts: a config, an OpenAPI document), then let go (ADR 0099). A config
 * is parsed at start and on a reload only, and js-yaml kept loaded is ~560 KiB of old space for the process's life (its 130 KB source is held
 * two bytes a character: one `->` arrow beyond U+00FF in it). Required with a `require` of its own and taken out of
 * Node's module cache after the parse, nothing of it stays reachable; a reload requires it again (a few ms, its
 * bytecode from Node's compile cache).
 *
 * A trimmed distribution (bin/build-dist.ts) has no node_modules to resolve it from: there the bundled copy, which
 * this file's `lazyRequire` becomes, parses, and stays loaded as any bundled module does.
 */
const lazyRequire = createRequire(import.meta.url);

/** js-yaml, required for each parse and released after it (load-scoped-package.ts). */
const jsYamlPackage = new LoadScopedPackage(import.meta.url, 'js-yaml', /[\\/]node_modules[\\/]js-yaml[\\/]/);

export function loadYaml(text: string, options?: JsYaml.LoadOptions): unknown {
  try {
    return (jsYamlPackage.require('js-yaml', () => lazyRequire('js-yaml')) as typeof JsYaml).load(text, options);
  } finally {
    jsYamlPackage.release();
  }
}
