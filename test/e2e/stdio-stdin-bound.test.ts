// A stdio MCP target that stops reading its stdin while a client keeps sending (issue 11, ADR 0056): what waits for
// the child is bounded (MAX_QUEUED_STDIN, 8 MiB), messages past it are refused at once with a clear error instead of
// being buffered, and the gateway stays healthy: once the child reads again the queued requests are answered and the
// session goes on. Under `config.workers: 2` the supervisor runs the child and relays its stdin; it held everything a
// worker sent (no back-pressure). Without workers the child's own pipe stream held it the same way.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LogSink } from 'switchyard';
import { Supervisor } from '../../kernel/boot/supervisor.ts';
import { BIN } from '../helpers/cli.ts';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { twoWorkersYaml } from '../helpers/workers.ts';
import { INIT, NODE, ROOT, mcpPreset, messagesOf, rawPost } from '../mcp/harness.ts';
import { cmdline, descendants } from '../mcp/support/procs.ts';
import { sleep } from './proxy-support.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

const STALLER = join(ROOT, 'test/mcp/fixtures/stdin-staller.ts');
const MiB = 1024 * 1024;
/** Requests of about 1 MiB each sent while the children do not read (five times the bound). */
const FLOOD = 40;

interface Answer {
  status: number;
  text?: string;
  error?: string;
  code?: number;
}

for (const workers of [2, 1]) {
  describe(`a stdio target that stops reading its stdin (workers: ${workers})`, () => {
    const dir = testTempDir('switchyard-stdin-bound-');
    const counts = testTempDir('switchyard-stdin-read-');
    let supervisor: Supervisor | undefined;
    let gw: RunningGateway | undefined;
    let url: URL;

    before(async () => {
      const port = await freePort();
      url = new URL(`http://127.0.0.1:${port}/mcp`);
      const route = { name: 'mcp', backends: [{ mcp: { targets: [{ name: 'staller', stdio: { cmd: NODE, args: [STALLER, `--count=${counts}`] } }] } }] };
      if (workers === 1) {
        gw = await startGateway({ binds: [{ port, listeners: [{ routes: [route] }] }] }, { preset: mcpPreset });
        return;
      }
      const file = join(dir, 'config.yaml');
      writeFileSync(file, twoWorkersYaml([{ port, listeners: [{ routes: [route] }] }]));
      supervisor = new Supervisor({ entry: BIN, config: { file }, count: 2, sink: new LogSink(() => undefined), watch: false });
      await supervisor.start();
    });
    after(async () => {
      await supervisor?.stop();
      await gw?.stop();
    });

    /** One JSON-RPC call on the session: its result's text or its error's message. */
    async function call(session: string, id: number, method: string, params: Record<string, unknown>): Promise<Answer> {
      const res = await rawPost(url, JSON.stringify({ jsonrpc: '2.0', id, method, params }), { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' });
      const m = messagesOf(res.text).find((x) => x.id === id) as { result?: { content?: { text: string }[] }; error?: { code: number; message: string } } | undefined;
      return { status: res.status, text: m?.result?.content?.[0]?.text, error: m?.error?.message, code: m?.error?.code };
    }

    async function session(): Promise<string> {
      const res = await rawPost(url, INIT(1));
      assert.equal(res.status, 200, res.text);
      const id = res.headers.get('mcp-session-id')!;
      await rawPost(url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), { 'mcp-session-id': id, 'mcp-protocol-version': '2025-11-25' });
      return id;
    }

    it('refuses what exceeds the bound with a clear error, and serves the rest once the child reads again', async () => {
      const id = await session();
      // The child answers its first tool call, then stops reading. Under workers each worker serving the session
      // runs a child of its own (docs/deploy.md "Workers"): up to the bound may wait for each.
      const pad = 'x'.repeat(MiB);
      const settled: Answer[] = [];
      const flood = Array.from({ length: FLOOD }, (_, i) => call(id, 10 + i, 'tools/call', { name: 'big', arguments: { pad } }).then((a) => (settled.push(a), a)));
      // Those past the bound are refused without waiting for the child.
      const mayWait = workers * 10;
      const deadline = Date.now() + 15_000;
      while (FLOOD - settled.length > mayWait && Date.now() < deadline) await sleep(50);
      assert.ok(FLOOD - settled.length <= mayWait, `${FLOOD - settled.length} of ${FLOOD} requests of 1 MiB wait for children that do not read (at most 8 MiB may wait per child)`);

      // The children read again: every queued request is answered, and no child got more than the bound (plus its
      // pipe and one message).
      const pids = descendants(process.pid).filter((pid) => cmdline(pid).startsWith(NODE) && cmdline(pid).includes(`--count=${counts}`));
      assert.ok(pids.length > 0 && pids.length <= workers, `children: ${pids.join(', ')}`);
      for (const pid of pids) process.kill(pid, 'SIGUSR2');
      const all = await Promise.all(flood);
      const refused = all.filter((a) => a.error !== undefined);
      for (const a of refused) {
        assert.match(a.error!, /^target `staller` .* did not get request `tools\/call`: its process is not reading its stdin: [\d.]+ MiB already wait for it \(at most 8 MiB\); try again when it catches up$/, JSON.stringify(a));
        assert.deepEqual([a.status, a.code], [503, -32000], 'a limit: try later');
      }
      assert.ok(refused.length >= FLOOD - mayWait, `${refused.length} of ${FLOOD} refused`);
      assert.equal(all.filter((a) => a.text === 'read' || a.text === 'stalled').length, FLOOD - refused.length, 'every other request was answered');
      for (const pid of pids) {
        const read = Number(readFileSync(join(counts, String(pid)), 'utf8'));
        assert.ok(read <= 10 * MiB, `child ${pid} read ${(read / MiB).toFixed(1)} MiB: what was queued for it`);
      }

      // The gateway and the session are healthy.
      assert.match((await call(id, 100, 'tools/call', { name: 'big', arguments: { pad: 'small' } })).text ?? '', /^(read|stalled)$/);
      const other = await session();
      assert.equal((await call(other, 2, 'tools/call', { name: 'big', arguments: {} })).text, 'stalled');
    });
  });
}
