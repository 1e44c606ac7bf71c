// The files of a trimmed distribution besides the bundle (bin/build-dist.ts, docs/adr/0012): what it bundled, the
// assets its modules read, package.json, the schema, README.md and the licence notices.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import type * as esbuild from 'esbuild';
import { VIRTUAL } from './build-dist-esbuild.ts';
import { ROOT, ROOT_PKG } from './build-dist-presets.ts';
import type { PluginSummary } from './build-dist-presets.ts';

/** `node_modules/@scope/pkg/x.js` → `@scope/pkg` (the innermost node_modules). */
function packageOf(input: string): { name: string; dir: string } | undefined {
  const parts = input.split(/[\\/]/);
  const at = parts.lastIndexOf('node_modules');
  if (at < 0 || at + 1 >= parts.length) return undefined;
  const scoped = parts[at + 1]!.startsWith('@');
  const name = parts.slice(at + 1, at + (scoped ? 3 : 2)).join('/');
  return { name, dir: parts.slice(0, at + (scoped ? 3 : 2)).join('/') };
}

interface PackageJson {
  name?: string;
  version?: string;
  license?: string;
  engines?: { node?: string };
}

function packageJson(dir: string): PackageJson {
  try {
    return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as PackageJson;
  } catch {
    return {};
  }
}

/**
 * Files a module reads only when present, outside the folder a bundle copies: the admin UI's per-policy docs links
 * answer "not part of this installation" without them (docs/admin-ui.md), so a trimmed distribution leaves them out.
 */
const OPTIONAL_OUTSIDE = new Set(['kernel/admin/ui/ui-server.ts ../../../docs/']);

/**
 * `new URL('<relative>', import.meta.url)` in a bundled module names a file beside that module; in the bundle,
 * import.meta.url is the output file the module landed in. Copy each such file or folder to the same relative
 * place beside that output file (plugins/lib/envoy-grpc reads the vendored protos this way).
 */
function copyAssets(metafile: esbuild.Metafile, out: string, log: (line: string) => void): string[] {
  const copied: string[] = [];
  const pattern = /new URL\(\s*(['"])(\.{1,2}\/[^'"]*)\1\s*,\s*import\.meta\.url\s*\)/g;
  for (const [output, meta] of Object.entries(metafile.outputs)) {
    if (!output.endsWith('.mjs')) continue;
    for (const input of Object.keys(meta.inputs)) {
      if (VIRTUAL.test(input) || !/\.[cm]?[jt]s$/.test(input)) continue;
      const source = readFileSync(join(ROOT, input), 'utf8');
      for (const match of source.matchAll(pattern)) {
        const from = resolve(ROOT, dirname(input), match[2]!);
        const to = resolve(ROOT, dirname(output), match[2]!);
        if (!existsSync(from)) {
          log(`  warning: ${input} names ${match[2]} beside itself, which does not exist; nothing copied`);
          continue;
        }
        if (relative(out, to).startsWith('..')) {
          if (OPTIONAL_OUTSIDE.has(`${input} ${match[2]}`)) {
            log(`  note: ${input} reads ${match[2]} when present; a distribution goes without it`);
            continue;
          }
          throw new Error(`${input} reads ${match[2]} beside itself, which would land outside ${out} (its code is in ${relative(out, resolve(ROOT, output))})`);
        }
        if (existsSync(to)) continue;
        cpSync(from, to, { recursive: true, filter: (f) => !f.endsWith('.test.ts') });
        copied.push(relative(out, to));
        log(`  asset ${relative(ROOT, from)} -> ${relative(out, to) || '.'}`);
      }
    }
  }
  return copied;
}

/** The licence texts of the bundled packages, as their licences ask of a redistribution. */
function thirdPartyNotices(packages: Map<string, string>): string {
  const parts: string[] = [
    'Third-party software bundled into this distribution of Switchyard, with the licence texts it ships.\n',
  ];
  for (const [name, dir] of [...packages].sort(([a], [b]) => a.localeCompare(b))) {
    const pkg = packageJson(join(ROOT, dir));
    const license = readdirSync(join(ROOT, dir)).find((f) => /^(?:licen[cs]e|copying|notice)(?:[.-].*)?$/i.test(f));
    parts.push(`${'='.repeat(78)}\n${name}@${pkg.version ?? '?'} (${pkg.license ?? 'see package'})\n${'='.repeat(78)}\n`);
    parts.push(license ? `${readFileSync(join(ROOT, dir, license), 'utf8').trim()}\n` : '(no licence file in the package)\n');
  }
  return parts.join('\n');
}

/**
 * The Node versions the bundle runs on: the highest `>=x.y.z` floor among Switchyard's own `engines.node` and
 * those of the bundled packages (undici 8, for one, would ask for 22.19). Ranges of another form are not combined.
 */
function nodeEngine(packages: Map<string, string>): { range: string; from: string } {
  const floor = (range: string | undefined): number[] | undefined => {
    const m = /^\s*>=\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?\s*$/.exec(range ?? '');
    return m ? [Number(m[1]), Number(m[2] ?? 0), Number(m[3] ?? 0)] : undefined;
  };
  const newer = (a: number[], b: number[]): boolean => a[0]! !== b[0]! ? a[0]! > b[0]! : a[1]! !== b[1]! ? a[1]! > b[1]! : a[2]! > b[2]!;
  const own = ROOT_PKG.engines?.node ?? '>=22.12';
  let best = { range: own, from: 'switchyard', v: floor(own) ?? [0, 0, 0] };
  for (const [name, dir] of packages) {
    const range = packageJson(join(ROOT, dir)).engines?.node;
    const v = floor(range);
    if (v && newer(v, best.v)) best = { range: `>=${v.join('.')}`, from: name, v };
  }
  return { range: best.range, from: best.from };
}

/** What a build writes at the top of its folder, for one made before package.json named them (`files`). */
const BUILD_ENTRIES = ['README.md', 'THIRD-PARTY-NOTICES.txt', 'chunks', 'package.json', 'sdk.mjs', 'sdk.mjs.map', 'slots', 'switchyard.mjs', 'switchyard.mjs.map', 'switchyard.schema.json'];

/**
 * Empty `out` for a build: refused unless it holds an earlier build and nothing else (package.json `files` says what
 * that build wrote), so a config or key the user keeps beside the bundle is never deleted.
 */
export function prepareOut(out: string): void {
  if (existsSync(out)) {
    if (!statSync(out).isDirectory()) throw new Error(`${out} exists and is not a folder`);
    const entries = readdirSync(out);
    if (entries.length > 0 && !entries.includes('switchyard.mjs')) throw new Error(`${out} is not empty and holds no earlier build; choose another --out`);
    const written = new Set((packageJson(out) as { files?: string[] }).files ?? BUILD_ENTRIES);
    const others = entries.filter((e) => !written.has(e));
    if (others.length > 0) throw new Error(`${out} holds files the build did not write (${others.join(', ')}); move them, or choose another --out`);
    rmSync(out, { recursive: true, force: true });
  }
  mkdirSync(out, { recursive: true });
}

/** The npm packages of a build: those bundled (name -> folder, name -> version) and the external ones it reaches. */
export interface BuiltPackages {
  readonly dirs: Map<string, string>;
  readonly bundled: Record<string, string>;
  /** npm packages left external, for the generated package.json's dependencies (name -> range). */
  readonly dependencies: Record<string, string>;
}

export function packagesOf(metafile: esbuild.Metafile, external: readonly string[]): BuiltPackages {
  const dirs = new Map<string, string>();
  for (const input of Object.keys(metafile.inputs)) {
    const pkg = VIRTUAL.test(input) ? undefined : packageOf(input);
    if (pkg && !dirs.has(pkg.name)) dirs.set(pkg.name, pkg.dir);
  }
  const bundled: Record<string, string> = {};
  for (const [pkgName, dir] of [...dirs].sort(([a], [b]) => a.localeCompare(b))) bundled[pkgName] = packageJson(join(ROOT, dir)).version ?? '?';
  const dependencies: Record<string, string> = {};
  for (const meta of Object.values(metafile.outputs)) {
    for (const imp of meta.imports) {
      if (!imp.external || imp.path.startsWith('node:')) continue;
      const pkgName = imp.path.startsWith('@') ? imp.path.split('/').slice(0, 2).join('/') : imp.path.split('/')[0]!;
      if (!external.includes(pkgName)) continue;
      dependencies[pkgName] = ROOT_PKG.dependencies?.[pkgName] ?? packageJson(join(ROOT, 'node_modules', pkgName)).version ?? '*';
    }
  }
  return { dirs, bundled, dependencies };
}

export interface PackageFiles {
  readonly out: string;
  /** The preset's name. */
  readonly name: string;
  readonly plugins: readonly PluginSummary[];
  readonly slotModules: readonly { name: string }[];
  readonly packages: BuiltPackages;
  readonly metafile: esbuild.Metafile;
  readonly log: (line: string) => void;
}

/** Beside the bundle: assets, THIRD-PARTY-NOTICES.txt, package.json, switchyard.schema.json and README.md. */
export function writePackageFiles(files: PackageFiles): void {
  const { out, name, plugins, slotModules, log } = files;
  const { dirs, dependencies } = files.packages;
  copyAssets(files.metafile, out, log);
  writeFileSync(join(out, 'THIRD-PARTY-NOTICES.txt'), thirdPartyNotices(dirs));

  const engine = nodeEngine(dirs);
  if (engine.from !== 'switchyard') log(`  engines.node ${engine.range} (asked by ${engine.from})`);
  const pkgJson = {
    name: 'switchyard',
    version: ROOT_PKG.version,
    description: `Switchyard, trimmed distribution \`${name}\`: ${plugins.map((p) => p.key).join(', ')}.`,
    license: ROOT_PKG.license,
    type: 'module',
    bin: { switchyard: './switchyard.mjs' },
    exports: { './sdk': './sdk.mjs', ...Object.fromEntries(slotModules.map((m) => [`./${m.name}`, `./${m.name}.mjs`])), './package.json': './package.json' },
    engines: { ...ROOT_PKG.engines, node: engine.range },
    dependencies,
    // What this build wrote (and all `npm pack` ships): a file the user adds beside it is neither packed nor wiped.
    files: [...new Set([...readdirSync(out), 'package.json', 'switchyard.schema.json', 'README.md'])].sort(),
    switchyard: { preset: name, plugins: plugins.map((p) => p.key) },
  };
  writeFileSync(join(out, 'package.json'), `${JSON.stringify(pkgJson, null, 2)}\n`);

  // The schema, from the bundle itself: also proves that it starts, as plain JavaScript.
  const schema = spawnSync(process.execPath, ['--no-experimental-strip-types', join(out, 'switchyard.mjs'), 'schema'], {
    encoding: 'utf8',
    env: { ...process.env, NODE_DISABLE_COMPILE_CACHE: '1' },
    maxBuffer: 64 * 1024 * 1024,
  });
  if (schema.status !== 0) throw new Error(`the bundle failed to print its schema (exit ${schema.status}):\n${schema.stderr}`);
  writeFileSync(join(out, 'switchyard.schema.json'), schema.stdout);

  writeFileSync(join(out, 'README.md'), readme(name, plugins, Object.keys(dependencies), engine.range));
}

/** The output JavaScript files (relative to `out`) with their sizes in bytes, and the total. */
export function outputSizes(metafile: esbuild.Metafile, out: string): { files: Record<string, number>; totalBytes: number } {
  const files: Record<string, number> = {};
  let totalBytes = 0;
  for (const output of Object.keys(metafile.outputs)) {
    if (!output.endsWith('.mjs')) continue;
    const size = metafile.outputs[output]!.bytes;
    files[relative(out, resolve(ROOT, output)).split(sep).join('/')] = size;
    totalBytes += size;
  }
  return { files, totalBytes };
}

function readme(name: string, plugins: readonly PluginSummary[], dependencies: readonly string[], node: string): string {
  return `# Switchyard — trimmed distribution \`${name}\`

Built by \`npm run build:dist -- --preset ${name}\` (docs/adr/0012-trimmed-distributions.md). Plain JavaScript for
Node ${node}; no type stripping, no build tools.

    node switchyard.mjs -f config.yaml      # run a gateway
    node switchyard.mjs schema              # the JSON Schema of this distribution (also in switchyard.schema.json)
    node switchyard.mjs plugins             # the plugins installed
    node switchyard.mjs --version

${dependencies.length ? `Install the dependencies left outside the bundle first: \`npm install --omit=dev\` (${dependencies.join(', ')}).\n\n` : 'Every dependency is bundled: copy the folder and run it.\n\n'}A config that uses a first-party plugin left out of this distribution fails with "\`x\` is not installed in this
distribution". Stack traces point at the bundle; \`node --enable-source-maps switchyard.mjs ...\` maps them to the
sources. Third-party plugins (\`config.plugins\`) import \`switchyard/sdk\`, which this package exports (sdk.mjs), and
\`switchyard/slots/*\` for the slots its plugins declare (slots/); there are no \`.d.ts\` here: type-check a plugin against
the published \`switchyard\` package of the same version.
Licences of the bundled packages: THIRD-PARTY-NOTICES.txt.

## Plugins

| kind | key | description |
| --- | --- | --- |
${plugins.map((p) => `| ${p.kind} | \`${p.key}\` | ${p.description.replace(/\|/g, '\\|')} |`).join('\n')}
`;
}
