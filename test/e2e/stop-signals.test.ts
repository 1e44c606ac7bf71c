// Signals that come together at a stop, as an orchestrator or an operator's scripts send them: a SIGHUP (reload)
// just before the SIGTERM. The reload must not be applied nor reported as failed: with workers the supervisor said
// "config reload failed; keeping the last good config" (a worker had exited meanwhile) and counted it invalid. A
// second SIGTERM while the first drains ends the process at once (an operator who will not wait).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { BIN, ROOT } from '../helpers/cli.ts';
import { childEnv, startCli } from '../helpers/cli-process.ts';
import { startSilentServer } from '../helpers/silent-server.ts';
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

describe('a second SIGTERM', () => {
  it('while a request holds the drain, it ends the process at once (exit 1), saying so', async () => {
    const held = await startSilentServer();
    const port = await freePort();
    const file = join(testTempDir('switchyard-term-term-'), 'gw.yaml');
    writeFileSync(
      file,
      `config:\n  drainTimeout: 60s\n  adminAddr: 127.0.0.1:0\n  statsAddr: 127.0.0.1:0\n  readinessAddr: 127.0.0.1:0\nbinds:\n- port: ${port}\n  address: 127.0.0.1\n  listeners:\n  - routes:\n    - backends: [{ host: '127.0.0.1:${held.port}' }]\n`,
    );
    const gw = await startCli(process.execPath, [BIN, '-f', file], { cwd: ROOT });
    try {
      // A request the upstream never answers: the drain would wait the full minute.
      void fetch(`http://127.0.0.1:${port}/held`).catch(() => undefined);
      await sleep(300);
      const exited = new Promise<number | null>((done) => gw.child.once('exit', (code) => done(code)));
      gw.child.kill('SIGTERM');
      await sleep(300);
      assert.equal(gw.child.exitCode, null, 'the first SIGTERM drains');
      const started = Date.now();
      gw.child.kill('SIGTERM');
      assert.equal(await exited, 1);
      assert.ok(Date.now() - started < 3000, `exit took ${Date.now() - started} ms`);
      assert.match(gw.output(), /second SIGTERM, exiting now/);
    } finally {
      await gw.stop();
      await held.close();
    }
  });
});

describe('SIGTERM while starting', () => {
  const cases = [
    { workers: 1, signals: 1 },
    { workers: 2, signals: 1 },
    { workers: 1, signals: 2 },
  ];
  for (const { workers, signals } of cases) {
    const title =
      signals === 1
        ? `workers: ${workers}: the gateway finishes starting, then stops (exit 0), instead of being killed by the signal`
        : `workers: ${workers}: a second SIGTERM while starting ends the process at once (exit 1), saying so`;
    it(title, async () => {
      // The config load waits on a JWKS server that takes the connection and does not answer (5 s fetch deadline)
      // until the gateway has said it got the SIGTERM while starting; then it answers (an empty key set), so the start
      // settles without waiting out the deadline.
      const sockets = new Set<Socket>();
      const asked = new Set<Socket>();
      let answering = false;
      const answer = (s: Socket): void => void s.end('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\nConnection: close\r\n\r\n{"keys":[]}');
      const jwks = createServer((s) => {
        sockets.add(s);
        s.on('error', () => undefined);
        s.once('data', () => (answering ? answer(s) : asked.add(s)));
      });
      await new Promise<void>((r) => jwks.listen(0, '127.0.0.1', r));
      const port = await freePort();
      const file = join(testTempDir('switchyard-term-start-'), 'gw.yaml');
      writeFileSync(
        file,
        `config:\n  workers: ${workers}\n  adminAddr: 127.0.0.1:0\n  statsAddr: 127.0.0.1:0\n  readinessAddr: 127.0.0.1:0\nbinds:\n- port: ${port}\n  address: 127.0.0.1\n  listeners:\n  - routes:\n    - policies:\n        jwtAuth: { issuer: x, jwks: { url: 'http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks' } }\n        directResponse: { body: one, status: 200 }\n`,
      );
      const child = spawn(process.execPath, [BIN, '-f', file], { cwd: ROOT, env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
      child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => child.on('exit', (code, signal) => done({ code, signal })));
      try {
        const end = Date.now() + 20_000;
        while (sockets.size === 0) {
          assert.ok(Date.now() < end && child.exitCode === null, `no JWKS fetch:\n${output}`);
          await sleep(20);
        }
        assert.doesNotMatch(output, /switchyard ready/);
        child.kill('SIGTERM');
        if (signals === 2) {
          await sleep(200);
          const started = Date.now();
          child.kill('SIGTERM');
          assert.deepEqual(await exited, { code: 1, signal: null }, output);
          assert.ok(Date.now() - started < 3000, `exit took ${Date.now() - started} ms`);
          assert.match(output, /second SIGTERM, exiting now/);
          return;
        }
        const told = Date.now() + 20_000;
        while (!/SIGTERM while starting; stopping once started/.test(output)) {
          assert.ok(Date.now() < told && child.exitCode === null, `not told of the SIGTERM:\n${output}`);
          await sleep(20);
        }
        answering = true;
        for (const s of asked) answer(s);
        assert.deepEqual(await exited, { code: 0, signal: null }, output);
        assert.match(output, /SIGTERM while starting; stopping once started/);
        assert.match(output, /switchyard stopped/);
      } finally {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
        await exited;
        for (const s of sockets) s.destroy();
        jwks.close();
      }
    });
  }
});
