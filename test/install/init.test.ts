// Issue 9: `switchyard init` writes a starter config with the yaml-language-server schema header, refuses to
// overwrite an existing file without --force, and the starter validates and proxies. SIGHUP (the systemd unit's
// ExecReload) re-reads the config instead of ending the process (Node's default for SIGHUP).
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { parse } from 'yaml';
import { childEnv, startCli, runCommand } from '../helpers/cli-process.ts';
import { assertStarterAnswers, starterOnFreePorts } from '../helpers/starter.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BIN = join(ROOT, 'bin/switchyard.js');
const SCHEMA = join(ROOT, 'schemas/switchyard.schema.json');

const dirs: string[] = [];
function tempDir(): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'switchyard-init-')));
  dirs.push(dir);
  return dir;
}
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

// Not through npx, whatever launched this test (`npx node --test` sets npm_command=exec for its children).
const cli = (cwd: string, ...args: string[]) => runCommand(process.execPath, [BIN, ...args], { cwd, env: childEnv({ npm_command: undefined }) });

describe('switchyard init', () => {
  it('writes switchyard.yaml with a schema header naming the shipped schema, and the starter validates', async () => {
    const dir = tempDir();
    const r = await cli(dir, 'init');
    assert.equal(r.code, 0, r.stderr);
    const file = join(dir, 'switchyard.yaml');
    assert.match(r.stdout, /^wrote .*switchyard\.yaml\nrun it: switchyard -f switchyard\.yaml\n$/);
    const text = readFileSync(file, 'utf8');
    const header = /^# yaml-language-server: \$schema=(\S+)\n/.exec(text);
    assert.ok(header, `first line is the schema header:\n${text.slice(0, 200)}`);
    // Editors resolve the reference from the config's folder.
    assert.equal(resolve(dir, header[1]!), SCHEMA);
    const valid = await cli(dir, '--validate-only', '-f', 'switchyard.yaml');
    assert.equal(valid.code, 0, valid.stderr);
    assert.equal(valid.stdout, 'Configuration is valid!\n');
  });

  // The README's first hour runs `npx switchyard init` in an app with a local install, where a bare `switchyard` is
  // not on PATH: the hint (and the starter's comment) give the command that was used, `npx switchyard`.
  it('run through npx, the hint and the starter name `npx switchyard`; otherwise `switchyard`', async () => {
    const dir = tempDir();
    const npx = childEnv({ npm_command: 'exec', npm_lifecycle_event: 'npx', npm_lifecycle_script: 'switchyard' });
    const r = await runCommand(process.execPath, [BIN, 'init', '-f', 'app.yaml'], { cwd: dir, env: npx });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /\nrun it: npx switchyard -f app\.yaml\n$/);
    assert.match(readFileSync(join(dir, 'app.yaml'), 'utf8'), /^#   npx switchyard -f app\.yaml$/m);
    // Another command run through npx (a test runner: `npx node --test`) is not switchyard's own launch.
    const other = await runCommand(process.execPath, [BIN, 'init', '-f', 'other.yaml'], { cwd: dir, env: { ...npx, npm_lifecycle_script: 'node' } });
    assert.match(other.stdout, /\nrun it: switchyard -f other\.yaml\n$/);
    assert.match(readFileSync(join(dir, 'other.yaml'), 'utf8'), /^#   switchyard -f other\.yaml$/m);
  });

  it('the stand-in upstream listens on loopback only; the front door on every interface', async () => {
    const dir = tempDir();
    assert.equal((await cli(dir, 'init')).code, 0);
    const config = parse(readFileSync(join(dir, 'switchyard.yaml'), 'utf8')) as { binds: { port: number; address?: string }[] };
    assert.deepEqual(config.binds.map((b) => [b.port, b.address]), [[3000, undefined], [3001, '127.0.0.1']]);
  });

  it('refuses to overwrite an existing file (exit 1, file unchanged) unless --force', async () => {
    const dir = tempDir();
    const file = join(dir, 'gateway.yaml');
    writeFileSync(file, 'binds: []\n# mine\n');
    const refused = await cli(dir, 'init', '-f', 'gateway.yaml');
    assert.equal(refused.code, 1);
    assert.equal(refused.stderr, `switchyard: ${file} exists; not overwritten (--force to replace it)\n`);
    assert.equal(readFileSync(file, 'utf8'), 'binds: []\n# mine\n');
    const forced = await cli(dir, 'init', '-f', 'gateway.yaml', '--force');
    assert.equal(forced.code, 0, forced.stderr);
    assert.match(readFileSync(file, 'utf8'), /^# yaml-language-server: \$schema=/);
  });

  it('names the schema relative to a config written in another folder', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'etc/switchyard'), { recursive: true });
    const r = await cli(dir, 'init', '-f', 'etc/switchyard/config.yaml');
    assert.equal(r.code, 0, r.stderr);
    const text = readFileSync(join(dir, 'etc/switchyard/config.yaml'), 'utf8');
    const ref = /^# yaml-language-server: \$schema=(\S+)/.exec(text)![1]!;
    assert.ok(existsSync(resolve(dir, 'etc/switchyard', ref)), ref);
    assert.equal(resolve(dir, 'etc/switchyard', ref), SCHEMA);
  });

  it('a missing folder, or a folder in place of the file, is one line saying so (exit 1), not a bare errno', async () => {
    const dir = tempDir();
    const r = await cli(dir, 'init', '-f', 'no/such/dir/x.yaml');
    assert.equal(r.code, 1);
    assert.equal(r.stderr, `switchyard: cannot write ${join(dir, 'no/such/dir/x.yaml')}: the folder ${join(dir, 'no/such/dir')} does not exist\n`);
    mkdirSync(join(dir, 'conf'));
    const folder = await cli(dir, 'init', '-f', 'conf', '--force');
    assert.equal(folder.code, 1);
    assert.equal(folder.stderr, `switchyard: cannot write ${join(dir, 'conf')}: it is a folder (give a file name: -f conf/config.yaml)\n`);
  });

  it('the starter answers /hello itself and proxies /api to its upstream', async () => {
    const dir = tempDir();
    assert.equal((await cli(dir, 'init')).code, 0);
    const file = join(dir, 'switchyard.yaml');
    const { text, front } = await starterOnFreePorts(readFileSync(file, 'utf8'));
    writeFileSync(file, text);
    const gw = await startCli(process.execPath, [BIN, '-f', file], { cwd: dir });
    try {
      await assertStarterAnswers(front);
    } finally {
      assert.equal(await gw.stop(), 0);
    }
  });
});

describe('SIGHUP (systemctl reload)', () => {
  it('keeps the gateway running and re-reads a config file the watcher does not see change', async () => {
    const dir = tempDir();
    assert.equal((await cli(dir, 'init')).code, 0);
    // The config's folder is a symlink swapped to another release (`conf -> a`, then `conf -> b`, as deploy tools
    // swap a `current` link): the watched file and its folder never change, so only SIGHUP makes the gateway read
    // what the path names now.
    const { text, front } = await starterOnFreePorts(readFileSync(join(dir, 'switchyard.yaml'), 'utf8'));
    mkdirSync(join(dir, 'a'));
    mkdirSync(join(dir, 'b'));
    writeFileSync(join(dir, 'a/switchyard.yaml'), text);
    writeFileSync(join(dir, 'b/switchyard.yaml'), text.replace('Hello from Switchyard!', 'Hello again!'));
    symlinkSync('a', join(dir, 'conf'));
    const gw = await startCli(process.execPath, [BIN, '-f', 'conf/switchyard.yaml'], { cwd: dir });
    const hello = async (): Promise<string> => (await request(`http://127.0.0.1:${front}/hello`)).body.text();
    try {
      gw.child.kill('SIGHUP');
      // Unchanged file: nothing to apply; the process must still serve (Node's default for SIGHUP is to exit).
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(gw.child.exitCode, null, `the gateway exited on SIGHUP:\n${gw.output()}`);
      assert.equal(await hello(), 'Hello from Switchyard!\n');
      symlinkSync('b', join(dir, 'conf.next'));
      renameSync(join(dir, 'conf.next'), join(dir, 'conf'));
      await new Promise((r) => setTimeout(r, 1000));
      assert.equal(await hello(), 'Hello from Switchyard!\n', 'the watcher saw no change');
      gw.child.kill('SIGHUP');
      await gw.waitFor(/config reloaded/);
      assert.equal(await hello(), 'Hello again!\n');
    } finally {
      assert.equal(await gw.stop(), 0);
    }
  });
});
