// The name `switchyard` on the public npm registry belongs to an unrelated Express routing library whose 0.1.0
// satisfies a plugin's `"switchyard": ">=0.1.0 <1"` peer range. npm 7 and later install a required peer: an author
// who runs `npm install` in a plugin package's folder (its README says to) got that library, and its lodash 3,
// instead of the gateway. The example packages mark the peer optional, so npm never fetches it by name; the author
// installs the gateway to build against from its tarball (docs/plugin-authoring.md §10).
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

interface Manifest {
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

function pluginPackages(): string[] {
  const out: string[] = [];
  for (const parent of ['examples/plugins', 'test/install/fixtures']) {
    for (const e of readdirSync(join(ROOT, parent), { withFileTypes: true })) {
      const file = join(ROOT, parent, e.name, 'package.json');
      if (e.isDirectory() && existsSync(file)) out.push(file);
    }
  }
  return out;
}

describe('plugin packages: the switchyard peer is never fetched from the public registry', () => {
  const files = pluginPackages();

  it('there are plugin packages', () => {
    assert.ok(files.length >= 5, files.join(' '));
  });

  for (const file of files) {
    const name = relative(ROOT, file);
    it(`${name}: a peer on switchyard is optional`, () => {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as Manifest;
      if (!pkg.peerDependencies?.switchyard) return;
      assert.equal(pkg.peerDependenciesMeta?.switchyard?.optional, true, `${name}: npm install in its folder would fetch the public, unrelated \`switchyard\``);
    });
  }
});
