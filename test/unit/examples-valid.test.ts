// Every example config under examples/ loads, validates and compiles with the full distribution, so the
// examples never drift from the schema and the plugins. Nothing is started: compile only.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { createGateway, LogSink } from 'switchyard';
import { FIRST_PARTY_KEYS } from '../../plugins/presets/catalog.ts';
import { fullPreset } from '../../plugins/presets/full.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

function yamlFiles(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name === 'node_modules' || e.name.startsWith('.')) continue;
    const full = join(dir, e.name);
    if (e.isDirectory()) yamlFiles(full, out);
    else if (/\.ya?ml$/.test(e.name)) out.push(full);
  }
  return out.sort();
}

/** Why this YAML file cannot be checked here, or undefined when it can. */
function skipReason(file: string, text: string): string | undefined {
  let doc: unknown;
  try {
    doc = parse(text);
  } catch {
    return undefined; // a syntax error is the gateway's to report (and the test's to fail)
  }
  const top = (doc ?? {}) as Record<string, unknown>;
  const isConfig = text.includes('switchyard.schema.json') || 'binds' in top || 'backends' in top || 'config' in top;
  if (!isConfig) return 'not a Switchyard config (no binds, backends or config key): a data file used by an example';
  const plugins = ((top.config as { plugins?: unknown } | undefined)?.plugins ?? []) as unknown[];
  const require = createRequire(join(dirname(file), 'noop.js'));
  for (const spec of plugins) {
    if (typeof spec !== 'string') continue;
    const local = spec.startsWith('.') || spec.startsWith('/');
    try {
      if (local) {
        if (!existsSync(resolve(dirname(file), spec))) throw new Error('missing');
      } else require.resolve(spec);
    } catch {
      return `needs the third-party plugin \`${spec}\`, which is not installed here`;
    }
  }
  return undefined;
}

// The container and compose configs under deploy/ are examples too; the Kubernetes manifests and the Helm chart
// carry their gateway config inside other YAML and are checked by test/deploy/.
const files = [...yamlFiles(join(ROOT, 'examples')), ...yamlFiles(join(ROOT, 'deploy/container')), ...yamlFiles(join(ROOT, 'deploy/compose'))];

describe('examples/**/*.yaml and deploy/{container,compose}', () => {
  it('there are examples to check', () => {
    assert.ok(files.some((f) => f.endsWith('quickstart.yaml')), 'examples/quickstart.yaml exists');
  });

  for (const file of files) {
    const name = relative(ROOT, file);
    const text = readFileSync(file, 'utf8');
    const reason = skipReason(file, text);
    it(`${name} compiles with the full preset`, { skip: reason }, async () => {
      const logs: string[] = [];
      const gateway = createGateway(
        // cwd is the repository root: relative file paths in examples (certificates, JWKS) are written for
        // `node bin/switchyard.js -f examples/...` run from there.
        { preset: fullPreset, knownKeys: FIRST_PARTY_KEYS, config: { file }, watch: false, cwd: ROOT },
        new LogSink((chunk) => logs.push(chunk)),
      );
      try {
        const snapshot = await gateway.compile(text);
        assert.ok(snapshot.binds.size > 0 || Object.keys(snapshot.config).length > 0);
        snapshot.dispose();
      } catch (err) {
        assert.fail(`${name} does not compile:\n${(err as Error).message}`);
      } finally {
        await gateway.stop();
      }
    });
  }
});

/** Every `cors` policy value in a parsed config (routes, backends, anywhere). */
function corsPolicies(node: unknown, out: Record<string, unknown>[] = []): Record<string, unknown>[] {
  if (Array.isArray(node)) for (const n of node) corsPolicies(n, out);
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === 'cors' && v && typeof v === 'object') out.push(v as Record<string, unknown>);
      corsPolicies(v, out);
    }
  }
  return out;
}

// Examples get copied as they are (issue 14 item 10): those under examples/ listen on loopback only (the deploy/
// configs run in containers, where loopback is unreachable), and none allows every browser origin (a `cors` `*` lets
// any web page read the answers; with MCP, a page could read `everything_get-env`).
describe('examples are safe to copy', () => {
  for (const file of files) {
    const name = relative(ROOT, file);
    const text = readFileSync(file, 'utf8');
    if (skipReason(file, text)?.startsWith('not a Switchyard config')) continue;
    const local = name.startsWith('examples/');
    it(`${name}: ${local ? 'binds listen on loopback, ' : ''}no wildcard CORS origin`, () => {
      const doc = (parse(text) ?? {}) as { binds?: { port: number; address?: string }[] };
      for (const bind of local ? (doc.binds ?? []) : []) {
        assert.ok(bind.address !== undefined && /^(127\.\d+\.\d+\.\d+|::1|localhost)$/.test(bind.address), `${name}: bind ${bind.port} listens on ${bind.address ?? 'every interface'}`);
      }
      for (const cors of corsPolicies(doc)) {
        assert.ok(!((cors.allowOrigins as unknown[] | undefined) ?? []).includes('*'), `${name}: a cors policy allows every origin`);
      }
    });
  }
});

// The package ships examples/ (README: node_modules/switchyard/examples/), without the clone's dev dependencies: an
// example whose stdio MCP target runs a file under node_modules/ (examples/mcp.yaml's two servers did) fails every
// session there. A target names its server by package (`npx -y <package>`), found in a clone, fetched elsewhere.
describe('examples run from the installed package', () => {
  for (const file of files.filter((f) => relative(ROOT, f).startsWith('examples/'))) {
    const name = relative(ROOT, file);
    const text = readFileSync(file, 'utf8');
    if (skipReason(file, text)?.startsWith('not a Switchyard config')) continue;
    it(`${name}: no stdio target runs a file under node_modules/`, () => {
      for (const stdio of stdioTargets(parse(text))) {
        const words = [stdio.cmd, ...((stdio.args as unknown[] | undefined) ?? [])].map(String);
        assert.ok(!words.some((w) => /(^|\/)node_modules\//.test(w)), `${name}: \`${words.join(' ')}\` needs a clone's node_modules`);
      }
    });
  }
});

/** Every `stdio` object of an MCP target in a parsed config. */
function stdioTargets(node: unknown, out: Record<string, unknown>[] = []): Record<string, unknown>[] {
  if (Array.isArray(node)) for (const n of node) stdioTargets(n, out);
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === 'stdio' && v && typeof v === 'object' && !Array.isArray(v)) out.push(v as Record<string, unknown>);
      stdioTargets(v, out);
    }
  }
  return out;
}

/** The ports a config listens on: its binds' and its admin, stats and readiness addresses'. */
function listenPorts(doc: { binds?: { port?: number }[]; config?: Record<string, unknown> }): Set<number> {
  const ports = new Set<number>();
  for (const bind of doc.binds ?? []) if (typeof bind.port === 'number') ports.add(bind.port);
  for (const role of ['adminAddr', 'statsAddr', 'readinessAddr']) {
    const port = /:(\d+)$/.exec(String(doc.config?.[role] ?? ''))?.[1];
    if (port !== undefined) ports.add(Number(port));
  }
  return ports;
}

// Someone trying the examples runs two at once (auth.yaml and workers.yaml both took 15200, 15220 and 15221; the
// plugin examples took quickstart.yaml's): each example has ports of its own (README "Examples").
describe('examples can run side by side', () => {
  it('no two examples listen on the same port', () => {
    const owner = new Map<number, string>();
    const clashes: string[] = [];
    for (const file of files.filter((f) => relative(ROOT, f).startsWith('examples/'))) {
      const name = relative(ROOT, file);
      const text = readFileSync(file, 'utf8');
      if (skipReason(file, text)?.startsWith('not a Switchyard config')) continue;
      for (const port of listenPorts((parse(text) ?? {}) as Parameters<typeof listenPorts>[0])) {
        const other = owner.get(port);
        if (other !== undefined) clashes.push(`${port}: ${other} and ${name}`);
        else owner.set(port, name);
      }
    }
    assert.deepEqual(clashes, []);
  });
});
