/**
 * Stack traces of the installed package name the TypeScript sources (ADR 0065). The package's code is an esbuild
 * bundle (ADR 0057) shipped with external source maps (`build/bundle/*.js.map`, no source text in them). Node's own
 * source-map support is off by default: turned on, it decodes the map of every bundle file as it loads (+8 MiB of
 * heap and tens of ms at start, docs/perf.md). Instead, a stack the gateway prints (a logged `stack` field, a span's
 * `exception.stacktrace`, the fatal uncaught exception) is rewritten here when printed: only the maps of the files in
 * that stack are read. `NODE_OPTIONS=--enable-source-maps` gives Node's mapping of every stack instead.
 */
import { readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The folder of the bundle this module was bundled into; null when it runs from its TypeScript source (a clone). */
const BUNDLE_DIR = import.meta.url.endsWith('.js') ? dirname(fileURLToPath(import.meta.url)) : null;

/** Decoded maps kept for the next stack (a map of a large chunk decodes to a few MiB): the last few only. */
const CACHE_SIZE = 8;
const cache = new Map<string, SourceMap | null>();

/** A frame's location: `    at fn (file:///.../x.js:1:2)` or `    at file:///.../x.js:1:2`. */
const FRAME = /^(\s+at (?:.*? \()?)((?:file:\/\/)?\/[^():]*\.js):(\d+):(\d+)(\)?)$/gm;

function mapOf(file: string): SourceMap | null {
  let map = cache.get(file);
  if (map !== undefined) return map;
  try {
    map = new SourceMap(JSON.parse(readFileSync(`${file}.map`, 'utf8')) as ConstructorParameters<typeof SourceMap>[0]);
  } catch {
    map = null; // no map beside it: the frame stays as it is
  }
  if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value!);
  cache.set(file, map);
  return map;
}

/** `stack` with each frame in the bundle given as its source file, line and column; other frames unchanged. */
export function readableStack(stack: string, bundleDir: string | null = BUNDLE_DIR): string {
  // Frames Node mapped already (`--enable-source-maps`) name no bundle file and are left alone below.
  if (bundleDir === null) return stack;
  return stack.replace(FRAME, (frame, before: string, location: string, line: string, column: string, after: string) => {
    const file = location.startsWith('file://') ? fileURLToPath(location) : location;
    if (dirname(file) !== bundleDir) return frame;
    const entry = mapOf(file)?.findEntry(Number(line) - 1, Number(column) - 1) as { originalSource?: string; originalLine?: number; originalColumn?: number } | undefined;
    if (entry?.originalSource === undefined) return frame;
    return `${before}${resolve(bundleDir, entry.originalSource)}:${entry.originalLine! + 1}:${entry.originalColumn! + 1}${after}`;
  });
}

/** A fatal uncaught exception (or unhandled rejection) is printed by Node from `err.stack`: rewrite it first. */
export function readableFatalStacks(): void {
  if (BUNDLE_DIR === null) return;
  process.on('uncaughtExceptionMonitor', (err) => {
    try {
      if (err instanceof Error && typeof err.stack === 'string') err.stack = readableStack(err.stack);
    } catch {
      // A frozen error keeps its stack: Node prints it as it is.
    }
  });
}
