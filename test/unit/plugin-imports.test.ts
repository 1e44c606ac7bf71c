// A plugin's plugin.ts is its manifest (ARCHITECTURE.md §2): importing a preset must not load the libraries the
// plugins use at run time (jose, gRPC, bcrypt, cloud SDKs, ...). Those load inside `compile()`, when a config uses
// the plugin, so a gateway that does not pays neither their import time nor their memory (docs/perf.md, Startup).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { registerHooks } from 'node:module';
import { dirname, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** Folders whose plugins may still import an npm package when the preset loads (none today). */
const STILL_EAGER: string[] = [];

/**
 * In a fresh process: import what bin/switchyard.js imports first (the kernel), then the full preset, and list
 * every plugin file loaded by the preset that imports an npm package, with the package.
 */
function presetImports(): { file: string; pkg: string }[] {
  const child = `
    import { registerHooks } from 'node:module';
    const root = ${JSON.stringify(pathToFileURL(`${ROOT}/`).href)};
    const found = [];
    let recording = false;
    registerHooks({
      resolve(specifier, context, next) {
        const parent = context.parentURL ?? '';
        const bare = !/^(node:|\\.|\\/|file:|switchyard)/.test(specifier);
        if (recording && bare && parent.startsWith(root) && !parent.includes('/node_modules/')) {
          found.push({ file: parent.slice(root.length), pkg: specifier });
        }
        return next(specifier, context);
      },
    });
    await import(root + 'kernel/boot/cli.ts');
    recording = true;
    await import(root + 'plugins/presets/full.ts');
    process.stdout.write(JSON.stringify(found));
  `;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', child], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, NODE_DISABLE_COMPILE_CACHE: '1' } });
  return JSON.parse(out) as { file: string; pkg: string }[];
}

describe('plugin manifests load no run-time libraries', { skip: typeof registerHooks !== 'function' && 'module.registerHooks needs Node 22.15+' }, () => {
  it('importing the full preset loads no npm package from a plugin folder (MCP backend and transport aside)', () => {
    const eager = presetImports().filter(({ file }) => !STILL_EAGER.some((folder) => file.startsWith(folder)));
    assert.deepEqual(eager, [], `plugin files that import npm packages at preset load:\n${eager.map((e) => `  ${e.file} -> ${e.pkg}`).join('\n')}`);
  });
});
