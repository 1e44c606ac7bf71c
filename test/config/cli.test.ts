import assert from 'node:assert/strict';
import { openSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { spawn } from 'node:child_process';
import { BIN, runCli, ROOT } from '../helpers/cli.ts';
import { childEnv, runClosingStdoutEarly } from '../helpers/cli-process.ts';
import type { CliRun } from '../helpers/cli.ts';
import { freePort } from '../helpers/ports.ts';
import { tempDirs, yaml } from './helpers.ts';

// The CLI as a user runs it: `node bin/switchyard.js ...` in a child process (issue 2 "What a user can do").

const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));

/** Temp dirs made by this file, removed when it ends. */
const tempDir = tempDirs();
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

/** Run the CLI to completion; a child still running after `timeoutMs` is killed (by its own pid) and fails the test. */
const cli = (args: readonly string[], timeoutMs = 20_000): Promise<CliRun> => runCli(args, { timeoutMs });

function tempFile(name: string, text: string): string {
  const file = join(tempDir('switchyard-cli-'), name);
  writeFileSync(file, text);
  return file;
}

describe('CLI: --validate-only', () => {
  it('a valid file: exit 0 and "Configuration is valid!" alone on stdout', async () => {
    const r = await cli(['--validate-only', '-f', join(FIXTURES, 'valid.yaml')]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'Configuration is valid!\n');
  });

  it('inline config with -c', async () => {
    const r = await cli(['--validate-only', '-c', '{"binds": [{"port": 18081, "listeners": []}]}']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'Configuration is valid!\n');
  });

  it('an invalid file: exit 1 with file:line:col, message and code frame on stderr', async () => {
    const file = join(FIXTURES, 'invalid.yaml');
    const r = await cli(['--validate-only', '-f', file]);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.ok(
      r.stderr.includes(
        `${file}:6:15: unknown policy \`directRespons\`; did you mean \`directResponse\`? (at binds[0].listeners[0].routes[0].policies.directRespons) [SWY_ERR_CONFIG_UNKNOWN_KEY]`,
      ),
      r.stderr,
    );
    assert.match(r.stderr, /^switchyard: invalid config\n/);
    assert.match(r.stderr, /> 6 \| {15}directRespons: \{ status: 200 \}\n {4}\| {15}\^/);
  });

  it('a relative -f path is reported as the absolute file', async () => {
    const r = await cli(['--validate-only', '-f', 'test/config/fixtures/invalid.yaml']);
    assert.equal(r.code, 1);
    assert.ok(r.stderr.includes(`${join(ROOT, 'test/config/fixtures/invalid.yaml')}:6:15: unknown policy`), r.stderr);
  });

  it('an unset environment variable: exit 1, positioned, naming the variable', async () => {
    const file = tempFile('env.yaml', yaml('binds:', '  - port: ${SWITCHYARD_TEST_SURELY_UNSET}', '    listeners: []'));
    const r = await cli(['--validate-only', '-f', file]);
    assert.equal(r.code, 1);
    assert.ok(r.stderr.includes(`${file}:2:11: environment variable \`SWITCHYARD_TEST_SURELY_UNSET\` is not set`), r.stderr);
  });

  it('a missing file: exit 1 naming the file', async () => {
    const file = join(tmpdir(), 'switchyard-no-such-dir', 'nope.yaml');
    const r = await cli(['--validate-only', '-f', file]);
    assert.equal(r.code, 1);
    assert.ok(r.stderr.includes(file), r.stderr);
  });
});

describe('CLI: schema and plugins', () => {
  it('`schema` prints valid JSON whose $defs hold the plugin definitions', async () => {
    const r = await cli(['schema']);
    assert.equal(r.code, 0, r.stderr);
    const schema = JSON.parse(r.stdout) as { $schema: string; $defs: Record<string, { properties?: Record<string, unknown> }> };
    assert.equal(schema.$schema, 'https://json-schema.org/draft/2020-12/schema');
    for (const def of ['backend.host', 'backend.backend', 'policy.directResponse', 'policy.requestHeaderModifier', 'slot.routePolicies', 'slot.backend']) {
      assert.ok(schema.$defs[def], `missing $defs.${def}`);
    }
    assert.ok(schema.$defs['slot.routePolicies']!.properties!.directResponse);
    assert.ok(schema.$defs['slot.backend']!.properties!.host);
  });

  it('`schema -f` includes plugins the config loads through config.plugins', async () => {
    const file = tempFile('with-plugin.yaml', yaml('config:', '  plugins:', `    - ${join(FIXTURES, 'neutral-alias-plugin.ts')}`, 'binds: []'));
    const r = await cli(['schema', '-f', file]);
    assert.equal(r.code, 0, r.stderr);
    const schema = JSON.parse(r.stdout) as { $defs: Record<string, { properties?: Record<string, unknown> }> };
    assert.ok(schema.$defs['policy.stampHeader']);
    assert.ok(schema.$defs['slot.routePolicies']!.properties!.neutralWord);
  });

  it('`plugins` lists host, backend and directResponse with their kinds', async () => {
    const r = await cli(['plugins']);
    assert.equal(r.code, 0, r.stderr);
    const [header, ...lines] = r.stdout.trimEnd().split('\n');
    assert.match(header!, /^KIND +KEY +ALIASES +SOURCE +DESCRIPTION$/);
    // Columns are padded to the widest cell; cut each line at the header's column starts.
    const starts = ['KIND', 'KEY', 'ALIASES', 'SOURCE', 'DESCRIPTION'].map((h) => header!.indexOf(h));
    const rows = lines.map((line) => starts.map((from, i) => line.slice(from, starts[i + 1]).trim()));
    const byKey = new Map(rows.map((cells) => [cells[1], cells]));
    assert.equal(byKey.get('host')?.[0], 'backend');
    assert.equal(byKey.get('backend')?.[0], 'backend');
    assert.equal(byKey.get('directResponse')?.[0], 'policy');
    assert.equal(byKey.get('directResponse')?.[3], 'switchyard');
  });

  it('`plugins -f` shows a third-party plugin with its alias', async () => {
    const file = tempFile('with-plugin.yaml', yaml('config:', '  plugins:', `    - ${join(FIXTURES, 'neutral-alias-plugin.ts')}`, 'binds: []'));
    const r = await cli(['plugins', '-f', file]);
    assert.equal(r.code, 0, r.stderr);
    const row = r.stdout.split('\n').find((line) => line.includes('stampHeader'));
    assert.ok(row, r.stdout);
    assert.deepEqual(row.split(/\s+/).slice(0, 3), ['policy', 'stampHeader', 'neutralWord']);
  });
});

describe('CLI: flags', () => {
  it('--version and -V print the package version', async () => {
    for (const flag of ['--version', '-V']) {
      const r = await cli([flag]);
      assert.equal(r.code, 0);
      assert.equal(r.stdout, `switchyard ${VERSION}\n`);
    }
  });

  it('--help prints the usage and exits 0', async () => {
    const r = await cli(['--help']);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /^Usage: switchyard/);
  });

  it('an unknown flag exits 2 with the usage on stderr', async () => {
    const r = await cli(['--frobnicate']);
    assert.equal(r.code, 2);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /^switchyard: unknown argument `--frobnicate`\n\nUsage: switchyard/);
  });

  it('a misspelt flag or command exits 2 naming the one meant (did you mean); a word like none gets no guess', async () => {
    const cases: [string[], string][] = [
      [['--verison'], '--version'],
      [['--validate_only', '-f', 'a.yaml'], '--validate-only'],
      [['-validate-only', '-f', 'a.yaml'], '--validate-only'],
      [['-v'], '-V'],
      [['plugin'], 'plugins'],
      [['init', '--forse'], '--force'],
      [['--fiel=a.yaml'], '--file'],
      [['help'], '--help'],
      [['version'], '--version'],
    ];
    for (const [argv, meant] of cases) {
      const r = await cli(argv);
      assert.equal(r.code, 2, argv.join(' '));
      assert.equal(r.stderr.split('\n')[0], `switchyard: unknown argument \`${argv.find((a) => a !== '-f' && a !== 'a.yaml' && a !== 'init')}\`; did you mean \`${meant}\`?`);
    }
    const keysLater = await cli(['-f', 'a.yaml', 'keys', 'list']);
    assert.equal(keysLater.code, 2);
    assert.equal(keysLater.stderr.split('\n')[0], 'switchyard: `keys` is a command of its own and comes first: switchyard keys COMMAND [options]');
    for (const word of ['--frobnicate', '-x', 'start']) {
      const r = await cli([word]);
      assert.equal(r.code, 2, word);
      assert.equal(r.stderr.split('\n')[0], `switchyard: unknown argument \`${word}\``);
    }
  });

  it('`keys` without a command is a usage error like the others: the reason and the usage on stderr, exit 2; `keys --help` on stdout, exit 0', async () => {
    const r = await cli(['keys']);
    assert.equal(r.code, 2);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /^switchyard: a keys command is required\n\nUsage: switchyard keys COMMAND/);
    const help = await cli(['keys', '--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^Usage: switchyard keys COMMAND/);
    assert.equal(help.stderr, '');
  });

  // `switchyard keys create --help` answered "unknown argument `--help`", exit 2: asking for help is not an error.
  it('`keys COMMAND --help` (and -h) prints the keys usage on stdout, exit 0, sending nothing', async () => {
    for (const args of [['keys', 'create', '--help'], ['keys', 'show', '-h'], ['keys', 'list', '--team', 't', '--help']]) {
      const r = await cli(args);
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stdout, /^Usage: switchyard keys COMMAND/);
      assert.equal(r.stderr, '');
    }
  });

  it('`keys --help` names every command `keys` takes (`usage`, which docs/llm-economics.md names, was missing)', async () => {
    const help = await cli(['keys', '--help']);
    for (const command of ['list', 'create', 'show', 'usage', 'rotate', 'revoke']) {
      assert.match(help.stdout, new RegExp(`^  (\\S+ \\S+, )?${command}\\b`, 'm'), command);
    }
  });

  it('--config=TEXT is taken as --file=FILE is', async () => {
    const r = await cli(['--config=binds: []', '--validate-only']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'Configuration is valid!\n');
    const twice = await cli(['--config=binds: []', '-c', 'binds: []', '--validate-only']);
    assert.equal(twice.code, 2);
    assert.match(twice.stderr, /^switchyard: (-c|--config) is given twice/);
  });

  it('-f without a value exits 2', async () => {
    const r = await cli(['-f']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^switchyard: -f needs a value/);
  });

  it('-f and -c together exit 2: two configs, not one silently ignored', async () => {
    const r = await cli(['-f', 'a.yaml', '-c', 'binds: []', '--validate-only']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^switchyard: -f FILE and -c TEXT are two configs: give one/);
  });

  it('-f twice (or -c twice) exits 2: one config file, not the last one silently', async () => {
    for (const argv of [['-f', 'a.yaml', '-f', 'b.yaml'], ['--file=a.yaml', '-f', 'b.yaml'], ['-c', 'binds: []', '--config', 'binds: []']]) {
      const r = await cli([...argv, '--validate-only']);
      assert.equal(r.code, 2, argv.join(' '));
      assert.match(r.stderr, /^switchyard: (-f|--file|-c|--config) is given twice: the gateway runs one config/, argv.join(' '));
    }
  });

  it('no config at all exits 2', async () => {
    const r = await cli([]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^switchyard: a config is required/);
  });
});

describe('CLI: starting', () => {
  let blocker: Server;
  let port: number;

  before(async () => {
    blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    port = (blocker.address() as { port: number }).port;
  });
  after(() => new Promise<void>((resolve) => blocker.close(() => resolve())));

  /** A config answering 200 on `bindPort`, with the admin-side addresses given. */
  const listening = (name: string, addrs: { admin: string; stats: string; readiness: string }, bindPort: number): string =>
    tempFile(
      name,
      yaml(
        'config:',
        `  adminAddr: ${addrs.admin}`,
        `  statsAddr: ${addrs.stats}`,
        `  readinessAddr: ${addrs.readiness}`,
        'binds:',
        `  - port: ${bindPort}`,
        '    listeners:',
        '      - routes:',
        '          - policies:',
        '              directResponse: { status: 200 }',
      ),
    );

  it('an admin address that is already taken: exit 1 naming the address and its config keys, not a bare EADDRINUSE', async () => {
    const taken = `127.0.0.1:${port}`;
    const r = await cli(['-f', listening('admin-taken.yaml', { admin: 'off', stats: taken, readiness: taken }, await freePort())]);
    assert.equal(r.code, 1, `stdout: ${r.stdout}\nstderr: ${r.stderr}`);
    assert.match(r.stderr, new RegExp(`^switchyard: cannot listen on 127\\.0\\.0\\.1:${port} \\(config\\.readinessAddr, config\\.statsAddr\\): the address is in use`, 'm'));
  });

  it('a bind port that is already taken: exit 1 with a clear message', async () => {
    const [admin, stats, readiness] = [await freePort(), await freePort(), await freePort()].map((p) => `127.0.0.1:${p}`);
    const r = await cli(['-f', listening('taken.yaml', { admin: admin!, stats: stats!, readiness: readiness! }, port)]);
    assert.equal(r.code, 1, `stdout: ${r.stdout}\nstderr: ${r.stderr}`);
    assert.match(r.stderr, new RegExp(`^switchyard: cannot listen on port ${port}: .*EADDRINUSE`, 'm'));
  });

  it('a SIGHUP while starting does not end the process: it is acted on once ready (a reload of the file)', async () => {
    const [admin, stats, readiness, bind] = [await freePort(), await freePort(), await freePort(), await freePort()];
    // 3,000 routes: a start long enough to signal the process between its first JavaScript and its being ready.
    const routes = (first: string): string[] =>
      Array.from({ length: 3000 }, (_, i) => [`          - matches: [{ path: { pathPrefix: /r${i} } }]`, `            policies: { directResponse: { status: 200, body: ${i === 0 ? first : `r${i}`} } }`]).flat();
    const text = (first: string): string =>
      yaml('config:', `  adminAddr: 127.0.0.1:${admin}`, `  statsAddr: 127.0.0.1:${stats}`, `  readinessAddr: 127.0.0.1:${readiness}`, 'binds:', `  - port: ${bind}`, '    address: 127.0.0.1', '    listeners:', '      - routes:', ...routes(first));
    const file = tempFile('early-hup.yaml', text('first'));
    const child = spawn(process.execPath, [BIN, '-f', file], { stdio: ['ignore', 'pipe', 'pipe'], env: childEnv() });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const catchesHup = (): boolean => {
      const m = /^SigCgt:\s+([0-9a-f]+)$/m.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
      return m !== null && (BigInt(`0x${m[1]}`) & 1n) === 1n;
    };
    const listening = (): Promise<boolean> => fetch(`http://127.0.0.1:${bind}/r0`).then(() => true, () => false);
    try {
      const until = Date.now() + 15_000;
      while (!catchesHup() && Date.now() < until) await new Promise((r) => setTimeout(r, 2));
      assert.ok(catchesHup(), `SIGHUP is caught while starting:\n${out}`);
      assert.equal(await listening(), false, 'the signal is sent before the gateway is ready');
      writeFileSync(file, text('second'));
      child.kill('SIGHUP');
      let body = '';
      while (Date.now() < until) {
        body = await fetch(`http://127.0.0.1:${bind}/r0`).then((r) => r.text(), () => '');
        if (body === 'second') break;
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(child.exitCode, null, `the process is still running:\n${out}`);
      assert.equal(body, 'second', out);
    } finally {
      child.kill('SIGTERM');
      assert.equal(await exited, 0, out);
    }
  });
});

describe('CLI: a config that serves nothing (ADR 0185)', () => {
  /** A gateway run from `file`; `out` collects its output. */
  function run(file: string): { child: ReturnType<typeof spawn>; out: () => string; exited: Promise<number | null> } {
    const child = spawn(process.execPath, [BIN, '-f', file], { stdio: ['ignore', 'pipe', 'pipe'], env: childEnv() });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    return { child, out: () => out, exited: new Promise((resolve) => child.on('exit', (code) => resolve(code))) };
  }
  const off = ['config:', '  adminAddr: "off"', '  statsAddr: "off"', '  readinessAddr: "off"'];
  const serving = (port: number, body: string): string =>
    yaml(...off, 'binds:', `  - port: ${port}`, '    address: 127.0.0.1', '    listeners:', '      - routes:', `          - policies: { directResponse: { status: 200, body: ${body} } }`);
  const answer = (port: number): Promise<string> => fetch(`http://127.0.0.1:${port}/`).then((r) => r.text(), () => '');
  async function until(check: () => Promise<boolean> | boolean, ms = 10_000): Promise<boolean> {
    const end = Date.now() + ms;
    while (Date.now() < end) {
      if (await check()) return true;
      await new Promise((r) => setTimeout(r, 50));
    }
    return false;
  }

  it('an empty config file is refused: exit 1 at start; on a reload (a save that truncates first) the last good config keeps serving', async () => {
    const r = await cli(['-f', tempFile('empty.yaml', '')]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /the config file is empty/);
    const port = await freePort();
    const file = tempFile('truncated.yaml', serving(port, 'first'));
    const g = run(file);
    try {
      assert.ok(await until(async () => (await answer(port)) === 'first'), g.out());
      writeFileSync(file, '');
      assert.ok(await until(() => g.out().includes('the config file is empty')), g.out());
      assert.equal(g.child.exitCode, null, `the process is still running:\n${g.out()}`);
      assert.equal(await answer(port), 'first', g.out());
      writeFileSync(file, serving(port, 'second'));
      assert.ok(await until(async () => (await answer(port)) === 'second'), g.out());
    } finally {
      g.child.kill('SIGTERM');
      assert.equal(await g.exited, 0, g.out());
    }
  });

  it('a config without binds keeps the process running, waiting for the file to name some', async () => {
    const port = await freePort();
    const file = tempFile('no-binds.yaml', yaml(...off));
    const g = run(file);
    try {
      assert.ok(await until(() => g.out().includes('switchyard ready')), g.out());
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(g.child.exitCode, null, `the process is still running:\n${g.out()}`);
      writeFileSync(file, serving(port, 'later'));
      assert.ok(await until(async () => (await answer(port)) === 'later'), g.out());
    } finally {
      g.child.kill('SIGTERM');
      assert.equal(await g.exited, 0, g.out());
    }
  });
});

describe('CLI: output to a reader that stops early', () => {
  it('`schema | head -1` ends quietly with 0; a full disk is one line and exit 1, not a stack', async () => {
    const { code, stderr } = await runClosingStdoutEarly(process.execPath, [BIN, 'schema']);
    assert.equal(code, 0, stderr);
    assert.equal(stderr, '');
    const full = spawn(process.execPath, [BIN, 'schema'], { stdio: ['ignore', openSync('/dev/full', 'w'), 'pipe'], env: childEnv() });
    let fullErr = '';
    full.stderr!.on('data', (d: Buffer) => (fullErr += d.toString()));
    assert.equal(await new Promise((resolve) => full.on('exit', resolve)), 1);
    assert.equal(fullErr, 'switchyard: cannot write the output: ENOSPC: no space left on device, write\n');
  });
});

/** A config answering `body` from a directResponse on a loopback bind; every address on a free port. */
async function directResponseConfig(): Promise<{ bind: number; text: (body: string) => string }> {
  const [admin, stats, readiness, bind] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const text = (body: string): string =>
    yaml('config:', `  adminAddr: 127.0.0.1:${admin}`, `  statsAddr: 127.0.0.1:${stats}`, `  readinessAddr: 127.0.0.1:${readiness}`, 'binds:', `  - port: ${bind}`, '    address: 127.0.0.1', '    listeners:', '      - routes:', `          - policies: { directResponse: { status: 200, body: ${body} } }`);
  return { bind, text };
}

/** Wait (until `until`, 20 s from now by default) for the output read so far to show the ready line. */
async function untilReady(out: () => string, until = Date.now() + 20_000): Promise<void> {
  while (!/switchyard ready/.test(out()) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
}

describe('CLI: a running gateway whose log reader goes away', () => {
  it('keeps serving (log lines dropped, one line on stderr), not killed by EPIPE', async () => {
    const { bind, text } = await directResponseConfig();
    const child = spawn(process.execPath, [BIN, '-c', text('ok')], { stdio: ['ignore', 'pipe', 'pipe'], env: childEnv() });
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    let out = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    try {
      await untilReady(() => out);
      assert.match(out, /switchyard ready/);
      // The log shipper reading stdout dies: every later access-log line is a write to a closed pipe.
      child.stdout.destroy();
      for (let i = 0; i < 20; i++) {
        const res = await fetch(`http://127.0.0.1:${bind}/`);
        assert.equal(res.status, 200);
        await res.text();
        await new Promise((r) => setTimeout(r, 20));
      }
      assert.equal(child.exitCode, null, `the gateway exited: ${stderr}`);
      assert.match(stderr, /cannot write log lines to stdout \(EPIPE\)/);
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  });
});

describe('CLI: the ready line names the process to signal', () => {
  it('under a wrapper that does not pass SIGHUP on (npx runs npm, then sh), the logged pid reloads the file', async () => {
    const { bind, text } = await directResponseConfig();
    const file = tempFile('ready-pid.yaml', text('first'));
    const wrapper = spawn('/bin/sh', ['-c', `"${process.execPath}" "${BIN}" -f "${file}"; true`], { stdio: ['ignore', 'pipe', 'pipe'], env: childEnv(), detached: true });
    const exited = new Promise((r) => wrapper.on('exit', r));
    let out = '';
    wrapper.stdout.on('data', (d: Buffer) => (out += d.toString()));
    wrapper.stderr.on('data', (d: Buffer) => (out += d.toString()));
    try {
      const until = Date.now() + 20_000;
      await untilReady(() => out, until);
      const m = /switchyard ready .*\bpid=(\d+)/.exec(out);
      assert.ok(m, `the ready line names the pid:\n${out}`);
      const pid = Number(m[1]);
      assert.notEqual(pid, wrapper.pid, 'the gateway, not the wrapper');
      assert.match(readFileSync(`/proc/${pid}/cmdline`, 'utf8'), /switchyard/);
      writeFileSync(file, text('second'));
      process.kill(pid, 'SIGHUP');
      let body = '';
      while (Date.now() < until) {
        body = await fetch(`http://127.0.0.1:${bind}/`).then((r) => r.text(), () => '');
        if (body === 'second') break;
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(body, 'second', out);
    } finally {
      // The wrapper's process group: the gateway too, whatever happened above.
      process.kill(-wrapper.pid!, 'SIGTERM');
      await exited;
    }
  });
});

describe('CLI: a password in a URL the config refuses', () => {
  it('is starred in the code frame, which still points at its column', async () => {
    const file = tempFile(
      'url-password.yaml',
      yaml('binds:', '  - port: 18082', '    listeners:', '      - routes:', '          - backends:', '              - host: http://svc:UrlPassw0rd77@127.0.0.1:9000'),
    );
    const r = await cli(['-f', file, '--validate-only']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /credentials in the URL are not supported/);
    assert.doesNotMatch(r.stderr, /UrlPassw0rd77/);
    assert.match(r.stderr, /http:\/\/svc:\*{13}@127\.0\.0\.1:9000/);
  });
});
