// Config input edge cases (issue 14 items 8 and 12): addresses and ports out of range, durations longer than
// timers hold, huge values echoed back in errors, and what --validate-only prints.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fullPreset } from '../../plugins/presets/full.ts';
import { runCli } from '../helpers/cli.ts';
import { compileError, compileValue, headlines, yaml } from './helpers.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

const dir = testTempDir('switchyard-limits-');
after(() => rmSync(dir, { recursive: true, force: true }));
function tempFile(name: string, text: string): string {
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

const full = { preset: fullPreset };
const oneRoute = (...policyLines: string[]): string =>
  yaml('binds:', '  - port: 8080', '    listeners:', '      - routes:', '          - policies:', ...policyLines.map((l) => `              ${l}`), '            backends: [{ host: "127.0.0.1:1" }]');

describe('addresses and ports', () => {
  for (const [field, value] of [
    ['adminAddr', '127.0.0.1:99999'],
    ['statsAddr', '0.0.0.0:65536'],
    ['readinessAddr', '[::]:70000'],
    ['adminAddr', '999.1.1.1:15000'],
    ['adminAddr', 'bad host:15000'],
  ] as const) {
    it(`${field}: ${value} is a positioned error`, async () => {
      const err = await compileError(yaml('config:', `  ${field}: "${value}"`, 'binds: []'));
      assert.deepEqual(headlines(err), [
        `test.yaml:2:${field.length + 5}: must be \`host:port\` (a host name, an IPv4 address or \`[IPv6]\`, and a port 0-65535) or \`off\`, got the string ${JSON.stringify(value)} (at config.${field}) [SWY_ERR_CONFIG_SCHEMA]`,
      ]);
    });
  }

  it('valid addresses still load: IPv4, [IPv6], names, port 0 and 65535, off', async () => {
    await compileValue(yaml('config:', '  adminAddr: "[::1]:65535"', '  statsAddr: localhost:0', '  readinessAddr: "off"', 'binds: []'));
    await compileValue(yaml('config:', '  adminAddr: 0.0.0.0:15000', '  statsAddr: my-host.example.com:15020', 'binds: []'));
  });

  it('an address from the environment (ADMIN_ADDR) out of range is an error at config.adminAddr', async () => {
    const err = await compileError(yaml('config:', '  logging: { level: info }', 'binds: []'), { env: { ADMIN_ADDR: '127.0.0.1:99999' } });
    assert.match(err.message, /the `ADMIN_ADDR` environment variable must be `host:port` \(a port 0-65535\) or `off`, got "127\.0\.0\.1:99999" \(at config\.adminAddr\)/);
  });

  it('a bind address that is not an IP address (it would fail in getaddrinfo at start)', async () => {
    for (const address of ['999.1.1.1', 'localhost', '[::1]']) {
      const err = await compileError(yaml('binds:', '  - port: 8080', `    address: "${address}"`, '    listeners: []'));
      assert.deepEqual(headlines(err), [
        `test.yaml:3:14: \`${address}\` is not an IP address (write one such as \`127.0.0.1\` or \`::1\`) (at binds[0].address) [SWY_ERR_CONFIG_INVALID]`,
      ]);
    }
    await compileValue(yaml('binds:', '  - port: 8080', '    address: "::1"', '    listeners: []', '  - port: 8081', '    address: 127.0.0.1', '    listeners: []'));
  });

  it('a bind port out of range', async () => {
    const err = await compileError(yaml('binds:', '  - port: 99999', '    listeners: []'));
    assert.deepEqual(headlines(err), ['test.yaml:2:11: must be at most 65535, got number 99999 (at binds[0].port) [SWY_ERR_CONFIG_SCHEMA]']);
  });

  // Upstream hosts are checked by the plugins that parse them; these stay errors at load.
  for (const [what, policy, at] of [
    ['a host backend', 'directResponse: { status: 200 }', 'backends[0].host'],
    ['extAuthz.host', 'extAuthz: { host: "127.0.0.1:99999" }', 'policies.extAuthz.host'],
    ['requestMirror.backend.host', 'requestMirror: { backend: { host: "127.0.0.1:99999" } }', 'policies.requestMirror.backend.host'],
  ] as const) {
    it(`${what} with port 99999`, async () => {
      const text = oneRoute(policy);
      const err = await compileError(what === 'a host backend' ? text.replace('127.0.0.1:1', '127.0.0.1:99999') : text, full);
      assert.match(err.message, new RegExp(`port \`?99999\`? is out of range \\(at binds\\[0\\]\\.listeners\\[0\\]\\.routes\\[0\\]\\.${at.replace(/[.[\]]/g, '\\$&')}\\)`));
    });
  }

  it('--validate-only refuses adminAddr 127.0.0.1:99999 (exit 1), so a start cannot fail on it later', async () => {
    const file = tempFile('port.yaml', yaml('config:', '  adminAddr: 127.0.0.1:99999', 'binds: []'));
    const r = await runCli(['--validate-only', '-f', file]);
    assert.equal(r.code, 1, r.stderr);
    assert.ok(r.stderr.includes(`${file}:2:14: must be \`host:port\``), r.stderr);
  });
});

describe('durations', () => {
  it('596h is the longest duration accepted', async () => {
    await compileValue(oneRoute('timeout: { requestTimeout: 596h, backendRequestTimeout: 595h60m }'), full);
  });

  for (const [field, value] of [
    ['requestTimeout', '597h'],
    ['backendRequestTimeout', '2147483648ms'],
    ['requestTimeout', '100000h'],
  ] as const) {
    it(`${field}: ${value} is refused with a positioned error (timers would fire after 1 ms)`, async () => {
      const err = await compileError(oneRoute(`timeout: { ${field}: ${value} }`), full);
      const line = headlines(err).find((l) => l.includes(`policies.timeout.${field}`));
      assert.ok(line, err.message);
      assert.match(line, new RegExp(`^test\\.yaml:6:\\d+: must be at most \`596h\` \\(longer timers are not supported\\), got the string "${value}" \\(at binds\\[0\\]\\.listeners\\[0\\]\\.routes\\[0\\]\\.policies\\.timeout\\.${field}\\) \\[SWY_ERR_CONFIG_SCHEMA\\]$`));
    });
  }

  it('every duration field shares the limit (config.drainTimeout, localRateLimit.fillInterval)', async () => {
    let err = await compileError(yaml('config:', '  drainTimeout: 1000h', 'binds: []'));
    assert.match(headlines(err)[0]!, /^test\.yaml:2:17: must be at most `596h`.* \(at config\.drainTimeout\)/);
    err = await compileError(oneRoute('localRateLimit: [{ maxTokens: 1, tokensPerFill: 1, fillInterval: 600h }]'), full);
    assert.match(err.message, /must be at most `596h`.*fillInterval/);
  });

  it('config.adminUi.endpointTimeout must leave an admin endpoint some time (ADR 0155)', async () => {
    const err = await compileError(yaml('config:', '  adminUi:', '    endpointTimeout: 0s', 'binds: []'));
    assert.match(err.message, /must be more than `0s`.*config\.adminUi\.endpointTimeout/s);
  });

  it('a duration that is not one keeps its own message, not a second one', async () => {
    const err = await compileError(oneRoute('timeout: { requestTimeout: soon }'), full);
    assert.deepEqual(headlines(err).length, 1);
    assert.match(err.message, /must be a duration such as `500ms`/);
  });
});

describe('huge values are not echoed back', () => {
  const MiB = 'x'.repeat(1024 * 1024);

  it('a 1 MiB key: the message and the code frame quote a bounded part of it', async () => {
    // An explicit key (`? …`): an implicit one is limited to 1024 characters by YAML itself.
    const file = tempFile('huge-key.yaml', yaml('binds:', '  - port: 8080', `    ? ${MiB}`, '    : 1', '    listeners: []'));
    const r = await runCli(['--validate-only', '-f', file]);
    assert.equal(r.code, 1);
    assert.ok(r.stderr.length < 4000, `stderr has ${r.stderr.length} characters`);
    assert.match(r.stderr, /unknown key `x{60}… \(1048576 characters\)`/);
    assert.match(r.stderr, /> 3 \| {5}\? x{154}…\n/);
  });

  it('a 1 MiB value before the error column: the frame shows the window around the caret', async () => {
    const file = tempFile('huge-value.yaml', yaml('binds:', `  - { listeners: [{ name: ${MiB}, routes: [] }], port: 99999 }`));
    const r = await runCli(['--validate-only', '-f', file]);
    assert.equal(r.code, 1);
    assert.ok(r.stderr.length < 4000, `stderr has ${r.stderr.length} characters`);
    assert.match(r.stderr, /must be at most 65535, got number 99999 \(at binds\[0\]\.port\)/);
    const [frameLine, caret] = r.stderr.split('\n').filter((l) => l.startsWith('> 2 |') || /^ {4}\| +\^$/.test(l));
    assert.ok(frameLine && caret, r.stderr);
    // The caret sits under the first digit of 99999 in the window shown.
    assert.equal(frameLine[caret.indexOf('^')], '9');
  });
});

describe('--validate-only output', () => {
  it('a valid config: the verdict on stdout, and no "switchyard stopped" (it never started)', async () => {
    const file = tempFile('valid.yaml', yaml('binds:', '  - port: 8080', '    listeners: []'));
    const r = await runCli(['--validate-only', '-f', file]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'Configuration is valid!\n');
    assert.ok(!r.stderr.includes('switchyard stopped'), r.stderr);
  });
});
