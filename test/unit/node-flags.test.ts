// The Node options the CLI runs with are listed once, in bin/node-flags.js (ADR 0057): the launcher and a trimmed
// distribution's entry re-execute with the missing ones, and the launch lines that give them up front (`npm start`;
// the Dockerfile has its own check in test/deploy/container.test.ts) say the same. A value the user gives wins.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { missingNodeFlags, NODE_ENV_DEFAULTS, NODE_FLAGS, withEnvDefaults } from '../../bin/node-flags.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

describe('bin/node-flags.js', () => {
  it('names the flags neither the command line nor NODE_OPTIONS gives, whatever value or spelling the user chose', () => {
    assert.deepEqual(missingNodeFlags([], undefined), [...NODE_FLAGS]);
    assert.deepEqual(missingNodeFlags(['--inspect', '--max-old-space-size=512'], '--enable-source-maps'), [...NODE_FLAGS]);
    for (const flag of NODE_FLAGS) {
      const name = flag.split('=')[0]!;
      // What is still missing once the user gave this flag: the others.
      const others = NODE_FLAGS.filter((f) => f !== flag);
      assert.deepEqual(missingNodeFlags([flag], undefined), others);
      assert.deepEqual(missingNodeFlags([`${name}=16`], undefined), others, 'another value');
      assert.deepEqual(missingNodeFlags([name, '16'], undefined), others, 'the value as the next argument');
      assert.deepEqual(missingNodeFlags([`--${name.slice(2).replaceAll('-', '_')}=16`], undefined), others, "V8's underscore spelling");
      assert.deepEqual(missingNodeFlags([], ` --inspect ${name}=8 `), others, 'in NODE_OPTIONS');
      assert.deepEqual(missingNodeFlags([name.replace(/^--no-/, '--')], undefined), others, 'a boolean turned the other way');
    }
    assert.deepEqual(missingNodeFlags([...NODE_FLAGS], undefined), []);
    // ADR 0085: Maglev's finished compilations are freed where their code is installed.
    assert.ok(NODE_FLAGS.includes('--no-maglev-destroy-on-background'));
  });

  it('caps the young generation at 2 MiB semi-spaces: under a load that keeps objects alive its new space is 4 MiB, not 8 (ADR 0089)', () => {
    const flag = NODE_FLAGS.find((f) => f.startsWith('--max-semi-space-size='));
    const mib = Number(flag?.split('=')[1]);
    // V8 rounds the cap up to a power of two: a 3 would be a 4 (docs/perf.md "Memory, session 11").
    assert.ok(mib > 0 && (mib & (mib - 1)) === 0, `${String(flag)}: a power of two`);
    // Objects that survive a scavenge or two (as requests in flight do) make V8 grow the young generation to its cap.
    // The median size: pages a scavenge pins stay in it for a while, so single samples run above the cap.
    const script = `
      const v8 = require('node:v8');
      const live = [];
      const sizes = [];
      for (let i = 0; i < 2e6; i++) {
        live.push({ i, s: 'x' + i });
        if (live.length > 20000) live.splice(0, 10000);
        if (i % 1000 === 0) sizes.push(v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size);
      }
      console.log(sizes.sort((a, b) => a - b)[sizes.length >> 1]);`;
    const usual = Number(execFileSync(process.execPath, [...NODE_FLAGS, '-e', script], { encoding: 'utf8', timeout: 60_000 })) / 1048576;
    assert.ok(usual <= 4.5, `new space ${usual.toFixed(1)} MiB (two 4 MiB semi-spaces: 8)`);
    assert.ok(usual >= 3, `new space ${usual.toFixed(1)} MiB: the load did not fill it`);
  });

  it('adds its environment defaults only where the environment has no value', () => {
    const env = withEnvDefaults({ PATH: '/bin' });
    for (const [name, value] of Object.entries(NODE_ENV_DEFAULTS)) {
      assert.equal(env[name], value);
      assert.equal(withEnvDefaults({ [name]: 'mine' })[name], 'mine', 'a value set by the user is kept');
    }
    assert.equal(env.PATH, '/bin');
    const all = { ...NODE_ENV_DEFAULTS };
    assert.equal(withEnvDefaults(all), all, 'nothing to add: the same environment');
  });

  it('is what `npm start` gives node, so that start skips the re-execution', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    assert.equal(pkg.scripts.start, `node ${NODE_FLAGS.join(' ')} bin/switchyard.js -f examples/quickstart.yaml`);
  });

  it('is not on the launcher\'s shebang: BusyBox env (Alpine) has no -S, and `npx switchyard` must run there (ADR 0057)', () => {
    const firstLine = readFileSync(join(ROOT, 'bin/switchyard.js'), 'utf8').split('\n')[0];
    assert.equal(firstLine, '#!/usr/bin/env node');
  });
});
