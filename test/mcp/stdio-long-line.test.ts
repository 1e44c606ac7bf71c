// A stdio MCP target that writes a long JSON-RPC line (a large tool result) costs the gateway time linear in the
// line (docs/security.md "Bounded reads of what a peer sends"): the line's chunks are joined once, when its newline
// arrives. Before, each 64 KiB chunk searched the whole pending line again: a 32 MiB line blocked the event loop for
// seconds (about 12 s of CPU on an idle machine). A real child process writing to a real pipe.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Logger } from 'switchyard/sdk';
import { LocalProcesses } from '../../kernel/resources/child-processes.ts';
import { StdioUpstream } from '../../plugins/mcp-transports/stdio/stdio.ts';
import { NODE } from './harness.ts';

/** The text of the long answer: its line stays within the 32 MiB every MCP transport takes of one message. */
const TEXT = 32 * 1024 * 1024 - 1024;

const quiet: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  child: () => quiet,
  isEnabled: () => false,
};

test('a JSON-RPC line of nearly 32 MiB (the bound, ADR 0143) arrives whole, read in CPU time linear in its length', async () => {
  // The child writes one message whose line is 1 KiB short of 32 MiB, in pieces (the pipe delivers about 64 KiB per read).
  const script = `
    const text = 'x'.repeat(${TEXT});
    process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { text } }) + '\\n');
    setInterval(() => undefined, 1000);
  `;
  const upstream = new StdioUpstream({ cmd: NODE, args: ['-e', script], env: {}, cwd: process.cwd() }, new LocalProcesses(), { key: 'long-line', max: 1 }, quiet);
  try {
    const message = new Promise<{ id?: number; result?: { text?: string } }>((resolve, reject) => {
      upstream.onmessage = (m) => resolve(m as { id?: number; result?: { text?: string } });
      upstream.onerror = reject;
    });
    await upstream.start();
    // CPU of this process (the gateway's side) while the line arrives: unlike wall time, not stretched by a busy machine.
    const before = process.cpuUsage();
    const got = await message;
    const cpu = process.cpuUsage(before);
    const cpuMs = (cpu.user + cpu.system) / 1000;
    assert.equal(got.id, 1);
    assert.equal(got.result?.text?.length, TEXT);
    // Reading and parsing 32 MiB once costs a few hundred ms; searching the pending line at every chunk cost seconds.
    assert.ok(cpuMs < 4000, `reading the line took ${Math.round(cpuMs)} ms of CPU`);
  } finally {
    await upstream.close();
  }
});
