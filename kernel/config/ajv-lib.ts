import { createRequire } from 'node:module';
import type * as Ajv2020Module from 'ajv/dist/2020.js';
import type * as CodegenModule from 'ajv/dist/compile/codegen/index.js';
import type { Name } from 'ajv/dist/compile/codegen/index.js';
import type { Ajv2020 as Ajv } from 'ajv/dist/2020.js';

/**
 * ajv, loaded on first use: a start whose config validator is precompiled (validator-cache.ts) never loads it
 * (83 modules, about 13 MiB and 60 ms, docs/perf.md "Startup and idle memory, session 5"). `require` keeps the
 * callers synchronous; a bundle (bin/build-dist.ts) turns these calls into esbuild's lazy require of its copy.
 */
const lazyRequire = createRequire(import.meta.url);

let ajv: typeof Ajv2020Module | undefined;

export function ajvLib(): typeof Ajv2020Module {
  return (ajv ??= lazyRequire('ajv/dist/2020.js') as typeof Ajv2020Module);
}

/** What generating standalone validation code needs besides ajv itself. */
export function ajvCodegenLib(): {
  standaloneCode: (ajv: Ajv, validate: unknown) => string;
  codegen: typeof CodegenModule;
  names: { readonly instancePath: Name };
} {
  return {
    standaloneCode: (lazyRequire('ajv/dist/standalone/index.js') as { default: (ajv: Ajv, validate: unknown) => string }).default,
    codegen: lazyRequire('ajv/dist/compile/codegen/index.js') as typeof CodegenModule,
    names: (lazyRequire('ajv/dist/compile/names.js') as { default: { instancePath: Name } }).default,
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
