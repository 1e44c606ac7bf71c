// Issue 9 item 2: on a Node older than `engines.node` the CLI exits 1 with one line naming the version it needs
// and the one it found, instead of Node's own `bad option: --experimental-strip-types`.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { nodeVersionProblem } from '../../bin/check-node.js';
import { findOldNode } from '../helpers/old-node.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BIN = join(ROOT, 'bin/switchyard.js');
const ENGINES = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(node: string, args: readonly string[]): Promise<Run> {
  return new Promise((done) => {
    const env = { ...process.env };
    delete env.NODE_OPTIONS;
    delete env.NODE_TEST_CONTEXT;
    execFile(node, args, { cwd: ROOT, env, timeout: 30_000 }, (err, stdout, stderr) => {
      done({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr });
    });
  });
}

/** `--import` of a module that makes `process.version` report `version`, loaded before the launcher. */
const fakeVersion = (version: string): string =>
  `--import=data:text/javascript,Object.defineProperty(process,"version",{value:${encodeURIComponent(JSON.stringify(version))}})`;

describe('Node version check of the launcher (bin/switchyard.js)', () => {
  it('compares `>=X.Y[.Z]` ranges with the running version', () => {
    assert.equal(nodeVersionProblem('>=22.12', 'v22.11.9'), 'needs Node.js >=22.12, found v22.11.9');
    assert.equal(nodeVersionProblem('>=22.12', 'v20.20.2'), 'needs Node.js >=22.12, found v20.20.2');
    assert.equal(nodeVersionProblem('>=22.12', 'v22.12.0'), undefined);
    assert.equal(nodeVersionProblem('>=22.12', 'v23.0.0'), undefined);
    assert.equal(nodeVersionProblem('>=22.12.3', 'v22.12.2'), 'needs Node.js >=22.12.3, found v22.12.2');
    assert.equal(nodeVersionProblem('^22 || >=24', 'v18.0.0'), undefined, 'a range of another form claims nothing');
  });

  it('a Node reporting v22.11.0 gets exit 1 and one line naming both versions', async () => {
    const r = await run(process.execPath, [fakeVersion('v22.11.0'), BIN, '--version']);
    assert.equal(r.code, 1);
    assert.equal(r.stderr, `switchyard: needs Node.js ${ENGINES}, found v22.11.0\n`);
    assert.equal(r.stdout, '');
  });

  it('a Node reporting exactly the floor runs', async () => {
    const floor = `v${ENGINES.replace(/^>=\s*/, '')}${ENGINES.split('.').length === 2 ? '.0' : ''}`;
    const r = await run(process.execPath, [fakeVersion(floor), BIN, '--version']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^switchyard \d+\.\d+\.\d+\n$/);
  });

  // ADR 0146, 0147: the floor a user is told is the one the installed packages hold to; below it npm warns EBADENGINE
  // for each of them (an engine-strict install fails), and the tracing bundle needs what its packages need.
  it('engines.node is no lower than the floor any production dependency declares (package-lock.json)', () => {
    const floor = `v${ENGINES.replace(/^>=\s*/, '')}${'.0'.repeat(3 - ENGINES.split('.').length)}`;
    const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean; engines?: { node?: string } }> };
    const above = Object.entries(lock.packages)
      .filter(([path, p]) => path !== '' && !p.dev && nodeVersionProblem(p.engines?.node, floor) !== undefined)
      .map(([path, p]) => `${path.replace(/^node_modules\//, '')} ${p.engines!.node}`);
    assert.deepEqual(above, [], `engines.node ${ENGINES} is below what these need`);
  });

  const old = findOldNode();
  it(`a real old Node (${old ? `${old.path} ${old.version}` : 'none on this machine'}) gets the same one line`, { skip: old ? false : 'no Node older than 22.12 found on PATH, /usr/bin, /bin or /usr/local/bin' }, async () => {
    for (const args of [['--version'], ['-f', 'examples/quickstart.yaml']]) {
      const r = await run(old!.path, [BIN, ...args]);
      assert.equal(r.code, 1, r.stderr);
      assert.equal(r.stderr, `switchyard: needs Node.js ${ENGINES}, found ${old!.version}\n`);
    }
  });
});
