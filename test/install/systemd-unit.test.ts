// Issue 9: deploy/systemd/switchyard.service is hardened, runs the installed CLI on /etc/switchyard/config.yaml and
// reloads with the signal the gateway handles (SIGHUP, test/install/init.test.ts). systemd-analyze, where present,
// checks the file the way systemd reads it.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runCommand } from '../helpers/cli-process.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const UNIT = join(ROOT, 'deploy/systemd/switchyard.service');
const TEXT = readFileSync(UNIT, 'utf8');

/** `Key=value` lines of one `[Section]`, comments left out; a key set twice keeps both. */
function section(name: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  let current = '';
  for (const raw of TEXT.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#') || line.startsWith(';')) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header) current = header[1]!;
    else if (current === name) {
      const at = line.indexOf('=');
      const key = line.slice(0, at);
      out.set(key, [...(out.get(key) ?? []), line.slice(at + 1)]);
    }
  }
  return out;
}

const has = (cmd: string): boolean => {
  try {
    execFileSync(cmd, ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

describe('deploy/systemd/switchyard.service', () => {
  const service = section('Service');
  const one = (key: string): string | undefined => service.get(key)?.at(-1);

  it('runs the CLI on /etc/switchyard/config.yaml and reloads with SIGHUP', () => {
    assert.match(one('ExecStart')!, /(^|\/)switchyard(\.js)? -f \/etc\/switchyard\/config\.yaml$/);
    assert.equal(one('ExecReload'), '/bin/kill -HUP $MAINPID');
    assert.equal(one('Type'), 'simple');
  });

  it('is hardened: its own unprivileged user, read-only system, no new privileges, no capabilities', () => {
    assert.ok(one('DynamicUser') === 'yes' || (one('User') ?? 'root') !== 'root', 'DynamicUser=yes or a dedicated User=');
    for (const [key, value] of Object.entries({
      ProtectSystem: 'strict',
      NoNewPrivileges: 'yes',
      ProtectHome: 'yes',
      PrivateTmp: 'yes',
      PrivateDevices: 'yes',
      CapabilityBoundingSet: '',
      RestrictAddressFamilies: 'AF_INET AF_INET6 AF_UNIX',
      SystemCallFilter: '@system-service',
    })) {
      assert.equal(one(key), value, key);
    }
    // V8 needs writable+executable memory for its JIT: this one would stop Node from starting.
    assert.equal(one('MemoryDenyWriteExecute'), undefined);
  });

  it('passes systemd-analyze verify', { skip: has('systemd-analyze') ? false : 'systemd-analyze is not installed' }, async () => {
    // The ExecStart binary must exist for verify: point it at this checkout's launcher.
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-unit-'));
    try {
      const file = join(dir, 'switchyard.service');
      writeFileSync(file, TEXT.replace(/^ExecStart=\S+/m, `ExecStart=${process.execPath} ${join(ROOT, 'bin/switchyard.js')}`));
      const r = await runCommand('systemd-analyze', ['verify', file], { cwd: dir });
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stderr.trim(), '', r.stderr);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
