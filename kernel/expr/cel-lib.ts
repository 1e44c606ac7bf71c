import { createRequire } from 'node:module';
import type * as Cel from '@marcbachmann/cel-js';

/**
 * The CEL engine, loaded when the first expression is compiled: a config without expressions never loads it, which
 * saves about 6 MiB and 30 ms at start (docs/adr/0034). `require` keeps compiling synchronous; a bundle
 * (bin/build-dist.ts) turns this call into esbuild's own lazy require of the bundled copy.
 */
const lazyRequire = createRequire(import.meta.url);

let lib: typeof Cel | undefined;

export function celLib(): typeof Cel {
  return (lib ??= lazyRequire('@marcbachmann/cel-js') as typeof Cel);
}
