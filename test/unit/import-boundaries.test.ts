// The import boundaries of ARCHITECTURE.md §2, checked on every source file of kernel/, plugins/, bin/ and the
// example plugin packages. A violation is reported as `file:line: what is wrong`.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { scanImports } from '../helpers/scan-imports.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const PKG = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  name: string;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
};
const DEPS = new Set(Object.keys(PKG.dependencies ?? {}));
const DEV_DEPS = new Set(Object.keys(PKG.devDependencies ?? {}));
const BUILTINS = new Set(builtinModules);

/** Only the composition root may use the container (ARCHITECTURE.md §1.6, §8). */
const CONTAINER_PACKAGES = new Set(['tsyringe', 'reflect-metadata']);
/** Heavy protocol libraries live in plugins, so a trimmed distribution can leave them out (§2). */
const KERNEL_FORBIDDEN = [/^@modelcontextprotocol\//, /^@grpc\//, /^jose$/];
/** A build script (bin/build-dist.ts and its parts): run in a checkout with the devDependencies, never shipped. */
const BUILD_TOOL = /^bin\/build-[\w-]+\.ts$/;

const SOURCE = /\.(?:ts|mts|cts|js|mjs|cjs)$/;

function packageName(spec: string): string {
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

function isBuiltin(spec: string): boolean {
  return spec.startsWith('node:') || BUILTINS.has(spec) || BUILTINS.has(spec.split('/')[0]!);
}

const posix = (p: string): string => p.split(sep).join('/');
const under = (file: string, folder: string): boolean => file === folder || file.startsWith(`${folder}/`);

/**
 * The folder a plugin file belongs to: `plugins/<category>/<name>` (a plugin, or a library under plugins/lib),
 * or `plugins/presets`.
 */
function pluginFolder(file: string): string {
  const parts = file.split('/');
  if (parts[1] === 'presets') return 'plugins/presets';
  return parts.slice(0, Math.min(3, parts.length - 1)).join('/');
}

/**
 * Check one import. `file` and the result are repo-relative POSIX paths. Returns the reason it is not allowed,
 * or undefined when it is.
 */
export function checkImport(file: string, spec: string): string | undefined {
  const isTest = /\.test\.[cm]?[jt]s$/.test(file);
  const relativeSpec = spec.startsWith('./') || spec.startsWith('../') || spec === '.' || spec === '..';
  const target = relativeSpec ? posix(relative(ROOT, resolve(ROOT, dirname(file), spec))) : undefined;
  const isSelf = !relativeSpec && (spec === PKG.name || spec.startsWith(`${PKG.name}/`));
  const bare = !relativeSpec && !isSelf && !isBuiltin(spec) && !spec.startsWith('/') && !spec.startsWith('file:');

  if (spec.startsWith('/') || spec.startsWith('file:')) return `absolute module path '${spec}'; use a relative path or a package name`;

  if (bare) {
    const name = packageName(spec);
    if (CONTAINER_PACKAGES.has(name) && !under(file, 'kernel/boot')) {
      return `imports '${spec}'; only kernel/boot/ (the composition root) may use tsyringe/reflect-metadata`;
    }
    if (under(file, 'kernel') && KERNEL_FORBIDDEN.some((re) => re.test(spec))) {
      return `imports '${spec}'; the kernel never imports MCP, gRPC or JOSE libraries (they belong to plugins)`;
    }
    // A package's `internal` entry is not its public API (it may change in any release): issue 10 item 7.
    if (spec.split('/').includes('internal')) return `imports '${spec}', a package's internal entry; use its public entry points`;
    // A build script (bin/build-dist.ts) runs in a checkout with the devDependencies, never in a distribution.
    const isBuildTool = BUILD_TOOL.test(file);
    if (!DEPS.has(name) && !((isTest || isBuildTool) && DEV_DEPS.has(name))) {
      return `imports '${spec}', which is not a declared dependency in package.json${DEV_DEPS.has(name) ? ' (only a devDependency)' : ''}`;
    }
    return undefined;
  }

  if (under(file, 'examples')) {
    // An example plugin package is a separate package: the SDK through its public name, its own files, node:.
    if (isSelf && spec !== `${PKG.name}/sdk` && !spec.startsWith(`${PKG.name}/slots/`)) {
      return `imports '${spec}'; a plugin package uses only '${PKG.name}/sdk' and '${PKG.name}/slots/*'`;
    }
    const pkgRoot = file.split('/').slice(0, 3).join('/');
    if (target !== undefined && !under(target, pkgRoot)) return `imports '${spec}' outside its own package (${pkgRoot})`;
    return undefined;
  }

  if (under(file, 'kernel')) {
    if (target !== undefined && under(target, 'plugins')) return `imports '${spec}' (${target}); the kernel never imports plugins`;
    if (isSelf && spec !== `${PKG.name}/sdk` && spec !== PKG.name) return `imports '${spec}'; the kernel never imports plugins or presets`;
    if (isSelf && spec === PKG.name && !isTest) return `imports its own package entry '${spec}'; use a relative path`;
    // The SDK is the public API: it must not drag kernel internals into third-party type checks.
    if (under(file, 'kernel/sdk') && target !== undefined && !under(target, 'kernel/sdk')) {
      return `imports '${spec}' (${target}); kernel/sdk/ is public and imports only its own files and node: builtins`;
    }
    if (target !== undefined && !under(target, 'kernel') && !(isTest && under(target, 'test'))) {
      return `imports '${spec}' (${target}) from outside kernel/`;
    }
    return undefined;
  }

  if (under(file, 'plugins')) {
    const own = pluginFolder(file);
    if (isSelf) {
      if (spec === `${PKG.name}/sdk`) return undefined;
      if (isTest) return undefined; // a plugin's own tests may start a gateway through the package entry
      return `imports '${spec}'; plugins reach the kernel only through '${PKG.name}/sdk'`;
    }
    if (target === undefined) return undefined; // builtin
    if (under(target, 'kernel')) return `imports '${spec}' (${target}), a kernel internal; plugins use '${PKG.name}/sdk'`;
    if (under(target, own)) return undefined;
    if (under(target, 'plugins/lib')) return undefined;
    if (own === 'plugins/presets' && under(target, 'plugins')) return undefined;
    if (isTest && (under(target, 'test/helpers') || under(target, 'plugins/presets'))) return undefined;
    if (under(target, 'plugins')) return `imports '${spec}' (${target}), another plugin's folder; share code through plugins/lib/`;
    return `imports '${spec}' (${target}) from outside plugins/`;
  }

  if (under(file, 'bin')) {
    // build/bundle/kernel.boot.dist-entry.js: the entry of kernel/boot/dist-entry.ts in the npm package's bundle
    // (docs/adr/0022, 0057).
    const started = target?.startsWith('build/bundle/') ? target.slice('build/bundle/'.length).replace(/\.js$/, '').replaceAll('.', '/') : target;
    const allowed = started !== undefined && (under(started, 'kernel') || under(started, 'plugins'));
    // A build script split by responsibility (bin/build-dist*.ts) imports its own parts.
    const buildPart = BUILD_TOOL.test(file) && target !== undefined && BUILD_TOOL.test(target);
    if (target !== undefined && !(allowed || buildPart || target === 'package.json' || target === 'bin/check-node.js' || target === 'bin/node-flags.js')) {
      return `imports '${spec}' (${target}); bin/ only starts the kernel with a preset`;
    }
    return undefined;
  }
  return undefined;
}

function walk(dir: string, out: string[] = []): string[] {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    if (e.name === 'node_modules' || e.name.startsWith('.')) continue;
    const full = join(dir, e.name);
    if (e.isDirectory()) walk(full, out);
    else if (e.isFile() && SOURCE.test(e.name) && !e.name.endsWith('.d.ts')) out.push(full);
  }
  return out;
}

function violations(): string[] {
  const files = ['kernel', 'plugins', 'bin', 'examples/plugins'].flatMap((d) => walk(join(ROOT, d)));
  assert.ok(files.length > 20, `expected to find the sources (found ${files.length})`);
  const problems: string[] = [];
  for (const full of files) {
    const file = posix(relative(ROOT, full));
    for (const imp of scanImports(readFileSync(full, 'utf8'))) {
      const reason = checkImport(file, imp.specifier);
      if (reason) problems.push(`${file}:${imp.line}: ${reason}`);
    }
  }
  return problems;
}

describe('import boundaries (ARCHITECTURE.md §2)', () => {
  it('every file of kernel/, plugins/, bin/ and examples/plugins/ respects them', () => {
    const problems = violations();
    assert.equal(problems.length, 0, `import boundary violations:\n  ${problems.join('\n  ')}`);
  });

  // A package only tests, fixtures or benches use is a devDependency, so an install of the gateway does not fetch it
  // (issue 10 item 7: `zod`, which only the MCP test fixtures import; the MCP SDK packages declare their own).
  it('every runtime dependency is imported by kernel/, plugins/ or bin/ outside tests', () => {
    const used = new Set<string>();
    for (const full of ['kernel', 'plugins', 'bin'].flatMap((d) => walk(join(ROOT, d)))) {
      if (/\.test\.[cm]?[jt]s$/.test(full)) continue;
      for (const imp of scanImports(readFileSync(full, 'utf8'))) {
        const spec = imp.specifier;
        if (spec.startsWith('.') || spec.startsWith('/') || isBuiltin(spec)) continue;
        used.add(packageName(spec));
      }
    }
    const testOnly = [...DEPS].filter((d) => !used.has(d));
    assert.deepEqual(testOnly, [], `dependencies no runtime code imports (move them to devDependencies): ${testOnly.join(', ')}`);
  });

  it('finds the imports of real files (the scanner is not silently blind)', () => {
    const imports = scanImports(readFileSync(join(ROOT, 'kernel/boot/cli.ts'), 'utf8')).map((i) => i.specifier);
    assert.ok(imports.includes('node:path'));
    assert.ok(imports.includes('./container.ts'));
    assert.ok(imports.includes('./supervisor.ts'), 'dynamic imports inside functions are found');
    const bin = scanImports(readFileSync(join(ROOT, 'bin/switchyard.js'), 'utf8')).map((i) => i.specifier);
    assert.ok(bin.includes('../kernel/boot/dist-entry.ts'), 'dynamic imports with literal specifiers are found');
  });

  describe('the scanner', () => {
    it('reads every import form with its line', () => {
      const src = [
        "import a from 'a';",
        "import type { B } from 'b';",
        "import 'c';",
        "export * from 'd';",
        "export type { E } from 'e';",
        'import {',
        '  f,',
        "} from 'f';",
        "const g = await import('g');",
        "const h = require('h');",
        "import * as i from 'i' with { type: 'json' };",
      ].join('\n');
      assert.deepEqual(
        scanImports(src).map((i) => `${i.line}:${i.specifier}`),
        ['1:a', '2:b', '3:c', '4:d', '5:e', '8:f', '9:g', '10:h', '11:i'],
      );
    });

    it('ignores comments, strings, templates, regular expressions and import.meta', () => {
      const src = [
        "// import x from 'comment';",
        "/* import y from 'block'; */",
        "const s = \"import z from 'string'\";",
        "const t = `import w from 'template' ${ \"}\" }`;",
        "const re = /^([a-z]+):\\/\\//i; import real from 'real';",
        'const u = new URL(".", import.meta.url);',
        "export const v = 1; export default { from: 'nope' };",
        "const ratio = a / b; import last from 'last'; // a / b / c",
      ].join('\n');
      assert.deepEqual(
        scanImports(src).map((i) => `${i.line}:${i.specifier}`),
        ['5:real', '8:last'],
      );
    });
  });

  describe('the rules', () => {
    const cases: [file: string, spec: string, allowed: boolean][] = [
      ['plugins/policies/cors/plugin.ts', 'switchyard/sdk', true],
      ['plugins/policies/cors/plugin.ts', './schema.json', true],
      ['plugins/policies/cors/plugin.ts', '../../lib/header-modifier/header-modifier.ts', true],
      ['plugins/policies/cors/plugin.ts', 'node:crypto', true],
      ['plugins/policies/cors/plugin.ts', 'undici', true],
      ['plugins/policies/cors/plugin.ts', '../../../kernel/sdk/index.ts', false],
      ['plugins/policies/cors/plugin.ts', '../../../kernel/runtime/reply-writer.ts', false],
      ['plugins/policies/cors/plugin.ts', '../direct-response/plugin.ts', false],
      ['plugins/policies/cors/plugin.ts', '../../backends/host/parse-host.ts', false],
      ['plugins/policies/cors/plugin.ts', 'switchyard', false],
      ['plugins/policies/cors/plugin.ts', 'tsyringe', false],
      ['plugins/policies/cors/plugin.ts', 'left-pad', false],
      ['plugins/policies/cors/plugin.ts', 'ws', false],
      ['plugins/policies/cors/cors.test.ts', 'ws', true],
      ['plugins/policies/cors/cors.test.ts', '../../../test/helpers/gateway.ts', true],
      ['plugins/backends/mcp/revisions/2026-07-28/protocol.ts', '@modelcontextprotocol/core/internal', false],
      ['plugins/backends/mcp/revisions/2026-07-28/protocol.ts', '@modelcontextprotocol/client', true],
      ['plugins/lib/jwt/jwt.ts', '../sse/parse.ts', true],
      ['plugins/lib/jwt/jwt.ts', '../../policies/cors/plugin.ts', false],
      ['plugins/presets/full.ts', '../policies/cors/plugin.ts', true],
      ['kernel/compile/run-hooks.ts', '../sdk/index.ts', true],
      ['kernel/compile/run-hooks.ts', '../../plugins/policies/cors/plugin.ts', false],
      ['kernel/compile/run-hooks.ts', 'switchyard/presets/full', false],
      ['kernel/compile/run-hooks.ts', 'tsyringe', false],
      // No DI container is a dependency any more (ADR 0042): not even the composition root may import one.
      ['kernel/boot/container.ts', 'tsyringe', false],
      ['kernel/boot/container.ts', 'reflect-metadata', false],
      ['kernel/expr/cel.ts', '@marcbachmann/cel-js', true],
      ['kernel/resources/jwks.ts', 'jose', false],
      ['kernel/upstream/grpc.ts', '@grpc/grpc-js', false],
      ['kernel/admin/mcp.ts', '@modelcontextprotocol/sdk/client/index.js', false],
      ['kernel/sdk/plugin.ts', '../runtime/exchange-impl.ts', false],
      ['kernel/sdk/plugin.ts', './phases.ts', true],
      ['bin/switchyard.js', '../kernel/boot/cli.ts', true],
      ['bin/switchyard.js', '../plugins/presets/full.ts', true],
      ['bin/switchyard.js', 'tsyringe', false],
      ['examples/plugins/switchyard-plugin-example/index.js', 'switchyard/sdk', true],
      ['examples/plugins/switchyard-plugin-example/index.js', 'switchyard/slots/ai', true],
      ['examples/plugins/switchyard-plugin-example/index.js', 'switchyard', false],
      ['examples/plugins/switchyard-plugin-example/index.js', '../../../kernel/sdk/index.ts', false],
    ];
    for (const [file, spec, allowed] of cases) {
      it(`${allowed ? 'allows' : 'refuses'} ${file} → ${spec}`, () => {
        const reason = checkImport(file, spec);
        if (allowed) assert.equal(reason, undefined, reason);
        else assert.ok(reason, `expected '${spec}' to be refused in ${file}`);
      });
    }
  });
});
