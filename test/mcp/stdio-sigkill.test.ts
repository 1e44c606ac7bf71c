// stdio children do not outlive a gateway killed with SIGKILL (issue 14 item 4): the CLI gateway runs as a child
// process, N stdio sessions start N MCP servers (and whatever they start), `kill -9` the gateway, and within a few
// seconds no process it started is left (checked in /proc).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { stringify } from 'yaml';
import { freePort } from '../helpers/ports.ts';
import { FIXTURE, INIT, NODE, ROOT, rawPost, waitFor } from './harness.ts';
import { cmdline, descendants, running } from './support/procs.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

const BIN = join(ROOT, 'bin/switchyard.js');
const SESSIONS = 4;

describe('mcp stdio: children of a SIGKILLed gateway', { skip: process.platform !== 'linux' && 'reads /proc' }, () => {
  it('all stop within a few seconds, grandchildren included', async (t) => {
    const [port, readiness] = [await freePort(), await freePort()];
    const file = join(testTempDir('switchyard-sigkill-'), 'config.yaml');
    // The servers keep running when their stdin closes (`--linger`, as servers with a timer of their own do), so
    // the gateway's death must be noticed some other way. One target is a `sh` that starts the MCP server as its own
    // child (as `npx` does): the grandchild must go too.
    const viaShell = { name: 'shell', stdio: { cmd: 'sh', args: ['-c', `"${NODE}" "${FIXTURE}" --linger; exit 0`] } };
    writeFileSync(
      file,
      stringify({
        config: { adminAddr: 'off', statsAddr: 'off', readinessAddr: `127.0.0.1:${readiness}`, logging: { format: 'json' } },
        binds: [{ port, listeners: [{ routes: [{ backends: [{ mcp: { targets: [{ name: 'fixture', stdio: { cmd: NODE, args: [FIXTURE, '--linger'] } }, viaShell] } }] }] }] }],
      }),
    );
    const child = spawn(NODE, [BIN, '-f', file], { cwd: ROOT, env: { ...process.env, NODE_OPTIONS: '' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const gatewayPid = child.pid!;
    let left: number[] = [];
    try {
      await waitFor(async () => (await fetch(`http://127.0.0.1:${readiness}/healthz/ready`).catch(() => undefined))?.status === 200, 'the gateway to be ready', 20_000);
      const url = new URL(`http://127.0.0.1:${port}/mcp`);
      for (let i = 0; i < SESSIONS; i++) {
        const res = await rawPost(url, INIT(i), { accept: 'application/json' });
        assert.equal(res.status, 200, res.text);
      }
      left = descendants(gatewayPid);
      const servers = left.filter((pid) => cmdline(pid).startsWith(NODE));
      // Two MCP servers per session (the fixture and the shell's grandchild).
      assert.ok(servers.length >= 2 * SESSIONS, `MCP servers running: ${servers.length}\n${left.map((p) => `${p} ${cmdline(p)}`).join('\n')}`);
      const killedAt = Date.now();
      process.kill(gatewayPid, 'SIGKILL');
      await waitFor(() => left.every((pid) => !running(pid)), 'every process the gateway started to stop', 5000).catch(() => undefined);
      t.diagnostic(`${left.length} processes (${servers.length} MCP servers) gone ${Date.now() - killedAt} ms after kill -9`);
      const survivors = left.filter((pid) => running(pid));
      assert.deepEqual(
        survivors.map((p) => `${p} ${cmdline(p)}`),
        [],
        'no child of the killed gateway survives',
      );
    } finally {
      try {
        process.kill(gatewayPid, 'SIGKILL');
      } catch {
        // already gone
      }
      // Never leave processes behind, whatever the outcome.
      for (const pid of left) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      if (process.exitCode) process.stderr.write(output);
    }
  });
});
