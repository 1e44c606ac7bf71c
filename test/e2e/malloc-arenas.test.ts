// Issue 15 item 3 (memory under load, ADR 0041, 0052, 0063, 0085): the CLI runs with glibc's malloc capped at one arena
// (MALLOC_ARENA_MAX=1) and large blocks always mapped apart (MALLOC_MMAP_THRESHOLD_=131072), both set on its in-place
// re-execution, unless the environment sets another value. Linux only: the
// process's environment is read from /proc/<pid>/environ, which shows what the re-executed process started with.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { stringify } from 'yaml';
import { NODE_ENV_DEFAULTS, NODE_FLAGS } from '../../bin/node-flags.js';
import { childEnv, startCli } from '../helpers/cli-process.ts';
import { BIN, ROOT } from '../helpers/cli.ts';
import { freePort } from '../helpers/ports.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

const linux = existsSync('/proc/self/environ');

async function environOfCli(extraEnv: NodeJS.ProcessEnv, nodeArgs: string[] = []): Promise<{ env: Map<string, string>; argv: string[] }> {
  const dir = testTempDir('switchyard-arenas-');
  const file = join(dir, 'config.yaml');
  const port = await freePort();
  writeFileSync(
    file,
    stringify({
      config: { adminAddr: '127.0.0.1:0', statsAddr: '127.0.0.1:0', readinessAddr: '127.0.0.1:0' },
      binds: [{ port, listeners: [{ routes: [{ name: 'ok', policies: { directResponse: { status: 200, body: 'ok' } } }] }] }],
    }),
  );
  const env = childEnv(extraEnv);
  for (const name of Object.keys(NODE_ENV_DEFAULTS)) if (extraEnv[name] === undefined) delete env[name];
  const cli = await startCli(process.execPath, [...nodeArgs, BIN, '-f', file], { cwd: ROOT, env });
  try {
    const res = await fetch(`http://127.0.0.1:${port}/`);
    assert.equal(res.status, 200);
    const environ = readFileSync(`/proc/${cli.child.pid}/environ`, 'utf8');
    const argv = readFileSync(`/proc/${cli.child.pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    const env = new Map(
      environ
        .split('\0')
        .filter(Boolean)
        .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)] as [string, string]),
    );
    return { env, argv };
  } finally {
    await cli.stop();
  }
}

describe('malloc settings of the CLI (ADR 0041, 0052, 0063)', { skip: linux ? false : 'needs /proc' }, () => {
  it('serves with MALLOC_ARENA_MAX=1, MALLOC_MMAP_THRESHOLD_=131072 and the flags of bin/node-flags.js when none is given', async () => {
    const { env, argv } = await environOfCli({});
    assert.equal(env.get('MALLOC_ARENA_MAX'), '1');
    assert.equal(env.get('MALLOC_MMAP_THRESHOLD_'), '131072');
    for (const flag of NODE_FLAGS) assert.equal(argv.filter((a) => a === flag).length, 1, `${flag} once in ${argv.join(' ')}`);
    // ADR 0085: Maglev's finished jobs freed where their code is installed (their compiler zones no longer pile up).
    assert.ok(argv.includes('--no-maglev-destroy-on-background'), argv.join(' '));
  });

  it('keeps a Maglev setting the user gives either way (ADR 0085)', async () => {
    const { argv } = await environOfCli({}, ['--maglev-destroy-on-background']);
    assert.ok(argv.includes('--maglev-destroy-on-background'), argv.join(' '));
    assert.ok(!argv.includes('--no-maglev-destroy-on-background'), argv.join(' '));
    assert.ok(argv.includes('--max-semi-space-size=2'), 'the other flag is still added');
  });

  it('keeps a MALLOC_ARENA_MAX the environment sets', async () => {
    const { env } = await environOfCli({ MALLOC_ARENA_MAX: '4' });
    assert.equal(env.get('MALLOC_ARENA_MAX'), '4');
    assert.equal(env.get('MALLOC_MMAP_THRESHOLD_'), '131072', 'the other default is still set');
  });

  it('does not re-execute when node is given the flags (the environment is then the launch line\'s, as in the image)', async () => {
    const { env, argv } = await environOfCli({}, [...NODE_FLAGS]);
    for (const flag of NODE_FLAGS) assert.equal(argv.filter((a) => a === flag).length, 1, `${flag} once in ${argv.join(' ')}`);
    assert.equal(env.get('MALLOC_ARENA_MAX'), undefined);
    assert.equal(env.get('MALLOC_MMAP_THRESHOLD_'), undefined);
  });
});
