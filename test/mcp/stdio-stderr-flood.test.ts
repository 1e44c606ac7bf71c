// A stdio MCP target that floods stderr (ADR 0134): each line used to become a log line, so one client's session
// with such a server wrote about 150 MB of log a second (1 GB in 8 s, measured) until the disk filled. At most
// STDERR_LINES_PER_SECOND lines of a process are logged per second; the rest are counted, and one line says how
// many were left out. A real child process writing to a real pipe.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Logger } from 'switchyard/sdk';
import { LocalProcesses } from '../../kernel/resources/child-processes.ts';
import { STDERR_LINES_PER_SECOND, StdioUpstream } from '../../plugins/mcp-transports/stdio/stdio.ts';
import { NODE } from './harness.ts';

test('a child writing 200,000 stderr lines at once gets a bounded number of log lines, and a count of the rest', async () => {
  const logged: { message: string; fields: Record<string, unknown> }[] = [];
  const capture: Logger = {
    debug: () => undefined,
    info: (message: string, fields?: Record<string, unknown>) => void logged.push({ message, fields: fields ?? {} }),
    warn: (message: string, fields?: Record<string, unknown>) => void logged.push({ message, fields: fields ?? {} }),
    error: () => undefined,
    child: () => capture,
    isEnabled: () => true,
  };
  const script = `
    const chunk = 'noise\\n'.repeat(1000);
    for (let i = 0; i < 200; i++) process.stderr.write(chunk);
    process.stderr.write('last words\\n', () => process.exit(0));
  `;
  const upstream = new StdioUpstream({ cmd: NODE, args: ['-e', script], env: {}, cwd: process.cwd() }, new LocalProcesses(), { key: 'stderr-flood', max: 1 }, capture);
  const ended = new Promise<void>((resolve) => (upstream.onclose = resolve));
  let why = '';
  upstream.onerror = (err) => (why = err.message);
  const started = performance.now();
  await upstream.start();
  await ended;
  const lines = logged.filter((l) => l.message === 'stdio target stderr');
  const seconds = Math.ceil((performance.now() - started) / 1000);
  assert.ok(lines.length <= STDERR_LINES_PER_SECOND * (seconds + 1), `${lines.length} stderr lines logged in ${seconds} s`);
  const left = logged.filter((l) => l.message === 'stdio target stderr lines left out').reduce((n, l) => n + (l.fields.count as number), 0);
  assert.equal(lines.length + left, 200_001, 'every line is logged or counted');
  // The process's end still quotes its last stderr line (usually why it ended), logged or not.
  assert.match(why, /last stderr line: last words/);
});
