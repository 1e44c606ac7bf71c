// Signals that come together at a stop, as an orchestrator or an operator's scripts send them: a SIGHUP (reload)
// just before the SIGTERM. The reload must not be applied nor reported as failed: with workers the supervisor said
// "config reload failed; keeping the last good config" (a worker had exited meanwhile) and counted it invalid.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { BIN, ROOT } from '../helpers/cli.ts';
import { childEnv } from '../helpers/cli-process.ts';
import { freePort } from '../helpers/ports.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

const config = (workers: number, port: number, body: string): string =>
  `config:\n  workers: ${workers}\n  adminAddr: 127.0.0.1:0\n  statsAddr: 127.0.0.1:0\n  readinessAddr: 127.0.0.1:0\nbinds:\n- port: ${port}\n  address: 127.0.0.1\n  listeners:\n  - routes:\n    - policies: { directResponse: { body: ${body}, status: 200 } }\n`;

describe('SIGHUP then SIGTERM', () => {
  for (const workers of [1, 2]) {
    it(`workers: ${workers}: the gateway stops (exit 0) without applying the reload or calling it failed`, async () => {
      const port = await freePort();
      const file = join(testTempDir('switchyard-hup-term-'), 'gw.yaml');
      writeFileSync(file, config(workers, port, 'one'));
      const child = spawn(process.execPath, [BIN, '-f', file], { cwd: ROOT, env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
      child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
      const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
      try {
        const end = Date.now() + 20_000;
        while (!output.includes('switchyard ready')) {
          assert.ok(Date.now() < end && child.exitCode === null, `not ready:\n${output}`);
          await new Promise((r) => setTimeout(r, 50));
        }
        writeFileSync(file, config(workers, port, 'two'));
        child.kill('SIGHUP');
        child.kill('SIGTERM');
        assert.equal(await exited, 0, output);
        assert.match(output, /switchyard stopped/);
        assert.doesNotMatch(output, /config reload failed|config reloaded/, output);
      } finally {
        if (child.exitCode === null) child.kill('SIGKILL');
        await exited;
      }
    });
  }
});
