// A stdio MCP target that floods stderr, or writes other things than JSON-RPC on stdout, in a loop (ADR 0134): each
// line used to become a log line, so one client's session with such a server wrote about 150 MB of log a second (1 GB
// in 8 s, measured) until the disk filled. At most LOG_LINES_PER_SECOND lines of a process are logged per second; the
// rest are counted, and one line says how many were left out. A real child process writing to a real pipe.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Logger } from 'switchyard/sdk';
import { LocalProcesses } from '../../kernel/resources/child-processes.ts';
import { LOG_LINES_PER_SECOND } from '../../plugins/lib/mcp/log-budget.ts';
import { StdioUpstream } from '../../plugins/mcp-transports/stdio/stdio.ts';
import { NODE } from './harness.ts';

/** Run a child writing `script`'s output until it exits; what the gateway logged, and why the process ended. */
async function run(script: string): Promise<{ logged: { message: string; fields: Record<string, unknown> }[]; why: string; seconds: number }> {
  const logged: { message: string; fields: Record<string, unknown> }[] = [];
  const capture: Logger = {
    debug: () => undefined,
    info: (message: string, fields?: Record<string, unknown>) => void logged.push({ message, fields: fields ?? {} }),
    warn: (message: string, fields?: Record<string, unknown>) => void logged.push({ message, fields: fields ?? {} }),
    error: () => undefined,
    child: () => capture,
    isEnabled: () => true,
  };
  const upstream = new StdioUpstream({ cmd: NODE, args: ['-e', script], env: {}, cwd: process.cwd() }, new LocalProcesses(), { key: 'output-flood', max: 1 }, capture);
  const ended = new Promise<void>((resolve) => (upstream.onclose = resolve));
  let why = '';
  upstream.onerror = (err) => (why = err.message);
  const started = performance.now();
  await upstream.start();
  await ended;
  return { logged, why, seconds: Math.ceil((performance.now() - started) / 1000) };
}

const leftOut = (logged: { message: string; fields: Record<string, unknown> }[]): number =>
  logged.filter((l) => l.message === 'stdio target log lines left out').reduce((n, l) => n + (l.fields.count as number), 0);

test('a child writing 200,000 stderr lines at once gets a bounded number of log lines, and a count of the rest', async () => {
  const { logged, why, seconds } = await run(`
    const chunk = 'noise\\n'.repeat(1000);
    for (let i = 0; i < 200; i++) process.stderr.write(chunk);
    process.stderr.write('last words\\n', () => process.exit(0));
  `);
  const lines = logged.filter((l) => l.message === 'stdio target stderr');
  assert.ok(lines.length <= LOG_LINES_PER_SECOND * (seconds + 1), `${lines.length} stderr lines logged in ${seconds} s`);
  assert.equal(lines.length + leftOut(logged), 200_001, 'every line is logged or counted');
  // The process's end still logs its last stderr line (usually why it ended), left out or not; the error only points there.
  assert.equal(logged.find((l) => l.message === 'stdio target process ended')?.fields.lastStderr, 'last words');
  assert.match(why, /its last stderr line is in the gateway log/);
});

test('a child writing 200,000 lines that are not JSON-RPC on stdout: the same bound', async () => {
  const { logged, seconds } = await run(`
    const chunk = 'debug: not json\\n'.repeat(500) + '[1,2]\\n'.repeat(500);
    for (let i = 0; i < 200; i++) process.stdout.write(chunk);
    process.stdout.write('', () => process.exit(0));
  `);
  const lines = logged.filter((l) => l.message.startsWith('stdio target wrote'));
  assert.ok(lines.length > 0 && lines.length <= LOG_LINES_PER_SECOND * (seconds + 1), `${lines.length} ignored stdout lines logged in ${seconds} s`);
  assert.equal(lines.length + leftOut(logged), 200_000, 'every line is logged or counted');
});
