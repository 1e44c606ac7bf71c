import { createRequire } from 'node:module';
import type * as Ajv2020Module from 'ajv/dist/2020.js';
import type * as CodegenModule from 'ajv/dist/compile/codegen/index.js';
import type { Name } from 'ajv/dist/compile/codegen/index.js';
import type { Ajv2020 as Ajv } from 'ajv/dist/2020.js';
import { LoadScopedPackage } from '../sdk/load-scoped-package.ts';

/**
 * ajv, loaded on first use: a start whose config validator is precompiled (validator-cache.ts) never loads it
 * (83 modules, about 13 MiB and 60 ms, docs/perf.md "Startup and idle memory, session 5"). `require` keeps the
 * callers synchronous; a bundle (bin/build-dist.ts) turns these calls into esbuild's lazy require of its copy.
 *
 * Where ajv resolves from node_modules (a clone, the npm package), it is loaded through a `require` of its own and
 * `releaseAjv()` takes what that loaded out of Node's module cache once a config load (or a validator's code
 * generation) is done: ajv then goes with the last validator that used it, instead of staying ~1.3 MiB of heap for
 * the process's life after a start whose validator was not precompiled yet (every start of a container whose cache
 * directory is not kept; ADR 0099). ajvLib and ajvCodegenLib give modules of one load until then: the code generator
 * needs ajv's codegen classes to be the ones its ajv instance checks against.
 */
const lazyRequire = createRequire(import.meta.url);

/**
 * ajv and its dependencies, loaded for a config load and released after it (load-scoped-package.ts). Each request's
 * `bundled` twin is the same request, literal, so that a bundle carries it.
 */
const ajvPackage = new LoadScopedPackage(import.meta.url, 'ajv/dist/2020.js', /[\\/]node_modules[\\/](?:ajv|fast-deep-equal|fast-uri|json-schema-traverse|require-from-string)[\\/]/);

/** Take the ajv modules loaded since the last release out of Node's module cache (the comment above). */
export function releaseAjv(): void {
  ajvPackage.release();
}

export function ajvLib(): typeof Ajv2020Module {
  return ajvPackage.require('ajv/dist/2020.js', () => lazyRequire('ajv/dist/2020.js')) as typeof Ajv2020Module;
}

/** What generating standalone validation code needs besides ajv itself. */
export function ajvCodegenLib(): {
  standaloneCode: (ajv: Ajv, validate: unknown) => string;
  codegen: typeof CodegenModule;
  names: { readonly instancePath: Name };
} {
  return {
    standaloneCode: (ajvPackage.require('ajv/dist/standalone/index.js', () => lazyRequire('ajv/dist/standalone/index.js')) as { default: (ajv: Ajv, validate: unknown) => string }).default,
    codegen: ajvPackage.require('ajv/dist/compile/codegen/index.js', () => lazyRequire('ajv/dist/compile/codegen/index.js')) as typeof CodegenModule,
    names: (ajvPackage.require('ajv/dist/compile/names.js', () => lazyRequire('ajv/dist/compile/names.js')) as { default: { instancePath: Name } }).default,
  };
}

/** ajv's version, without loading ajv (part of a precompiled validator's name). */
export function ajvVersion(): string {
  return (lazyRequire('ajv/package.json') as { version: string }).version;
}

/**
 * The ajv runtime helpers generated validation code may `require` (standalone code names them by path): literal
 * requests, so that a bundle carries them. Any other request fails the load, and validation falls back to ajv.
 */
export function ajvRuntimeModule(id: string): unknown {
  switch (id) {
    case 'ajv/dist/runtime/ucs2length':
      return lazyRequire('ajv/dist/runtime/ucs2length');
    case 'ajv/dist/runtime/equal':
      return lazyRequire('ajv/dist/runtime/equal');
    case 'ajv/dist/runtime/uri':
      return lazyRequire('ajv/dist/runtime/uri');
    default:
      throw new Error(`generated validator requires ${id}`);
  }
}
