// Stacks through the package's bundle name the TypeScript sources when printed (ADR 0065): a module bundled here by
// esbuild as bin/build-package.ts bundles the package (linked maps, no source text), then a real throw through it.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import * as esbuild from 'esbuild';
import { readableStack } from './readable-stack.ts';

describe('readableStack', () => {
  let root: string;
  let bundleDir: string;
  let stackOf: () => string;

  before(async () => {
    root = realpathSync(mkdtempSync(join(tmpdir(), 'switchyard-stack-')));
    mkdirSync(join(root, 'kernel/runtime'), { recursive: true });
    writeFileSync(
      join(root, 'kernel/runtime/thrower.ts'),
      ['// line 1', 'export function callThrough(fn: () => void): string {', '  try {', '    fn();', '  } catch (err) {', '    return (err as Error).stack!;', '  }', "  return '';", '}', 'export const fail = (): never => {', "  throw new Error('deep');", '};', ''].join('\n'),
    );
    bundleDir = join(root, 'build/bundle');
    await esbuild.build({
      absWorkingDir: root,
      entryPoints: [{ in: './kernel/runtime/thrower.ts', out: 'kernel.runtime.thrower' }],
      outdir: bundleDir,
      bundle: true,
      format: 'esm',
      platform: 'node',
      sourcemap: 'linked',
      sourcesContent: false,
      logLevel: 'silent',
    });
    const mod = (await import(pathToFileURL(join(bundleDir, 'kernel.runtime.thrower.js')).href)) as { callThrough(fn: () => void): string; fail(): never };
    stackOf = () => mod.callThrough(mod.fail);
  });

  after(() => rmSync(root, { recursive: true, force: true }));

  it('frames in the bundle name the source file, line and column; other frames stay as they are', () => {
    const raw = stackOf();
    assert.match(raw, /build\/bundle\/kernel\.runtime\.thrower\.js:\d+:\d+/, raw);
    const mapped = readableStack(raw, bundleDir);
    const lines = mapped.split('\n');
    assert.equal(lines[0], 'Error: deep');
    assert.equal(lines[1], `    at fail (${join(root, 'kernel/runtime/thrower.ts')}:11:9)`);
    assert.equal(lines[2], `    at Module.callThrough (${join(root, 'kernel/runtime/thrower.ts')}:4:5)`);
    assert.doesNotMatch(mapped, /build\/bundle/);
    // This test's own frame (outside the bundle) is unchanged.
    assert.ok(lines.slice(3).some((l) => l.includes('readable-stack.test.ts:')), mapped);
    assert.equal(lines.length, raw.split('\n').length);
  });

  it('unchanged without a bundle folder (running from the sources) or without a map beside the file', () => {
    const raw = stackOf();
    assert.equal(readableStack(raw, null), raw);
    assert.equal(readableStack(raw, join(root, 'elsewhere')), raw);
    unlinkSync(join(bundleDir, 'kernel.runtime.thrower.js.map'));
    // A fresh name for the same file: the map was read (and kept) by the first test.
    assert.equal(readableStack(raw.replaceAll('thrower.js', 'thrower2.js'), bundleDir), raw.replaceAll('thrower.js', 'thrower2.js'));
  });
});
