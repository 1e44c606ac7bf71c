// The drain deadline under the reference gateway's names (BEHAVIOUR.md 2.1, ADR 0184): `connectionTerminationDeadline`
// is another name for `drainTimeout`, and without either the deadline follows `TERMINATION_GRACE_PERIOD_SECONDS`
// (its value less 5 s, less 1 s when it is 10 or less) as the reference's does.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { resolveStaticConfig } from '../../kernel/compile/static-config.ts';
import { runCli } from '../helpers/cli.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

const dir = testTempDir('switchyard-drain-config-');
function configFile(name: string, statics: string): string {
  const file = join(dir, name);
  writeFileSync(file, `config:\n${statics}  adminAddr: "off"\nbinds:\n- port: 18080\n  listeners:\n  - routes:\n    - policies: { directResponse: { status: 200 } }\n`);
  return file;
}

describe('the drain deadline', () => {
  it('takes the reference name connectionTerminationDeadline', async () => {
    const run = await runCli(['-f', configFile('ok.yaml', '  connectionTerminationDeadline: 30s\n'), '--validate-only']);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(resolveStaticConfig({ connectionTerminationDeadline: '30s' }, {}).drainTimeoutMs, 30_000);
    assert.equal(resolveStaticConfig({ connectionTerminationDeadline: '30s', drainTimeout: '30s' }, {}).drainTimeoutMs, 30_000);
  });

  it('refuses the two names with different values, at the position', async () => {
    const run = await runCli(['-f', configFile('bad.yaml', '  drainTimeout: 10s\n  connectionTerminationDeadline: 30s\n'), '--validate-only']);
    assert.equal(run.code, 1);
    assert.match(run.stderr, /bad\.yaml:3[\s\S]*`connectionTerminationDeadline` is another name for `drainTimeout`/);
  });

  it('follows TERMINATION_GRACE_PERIOD_SECONDS when the config sets no deadline', () => {
    assert.equal(resolveStaticConfig({}, {}).drainTimeoutMs, 10_000);
    assert.equal(resolveStaticConfig({}, { TERMINATION_GRACE_PERIOD_SECONDS: '30' }).drainTimeoutMs, 25_000);
    assert.equal(resolveStaticConfig({}, { TERMINATION_GRACE_PERIOD_SECONDS: '10' }).drainTimeoutMs, 9_000);
    assert.equal(resolveStaticConfig({}, { TERMINATION_GRACE_PERIOD_SECONDS: '1' }).drainTimeoutMs, 0);
    assert.equal(resolveStaticConfig({}, { TERMINATION_GRACE_PERIOD_SECONDS: 'soon' }).drainTimeoutMs, 10_000);
    assert.equal(resolveStaticConfig({ drainTimeout: '3s' }, { TERMINATION_GRACE_PERIOD_SECONDS: '30' }).drainTimeoutMs, 3_000);
  });
});
