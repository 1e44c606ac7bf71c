import { accessSync, constants } from 'node:fs';
import { delimiter, isAbsolute, join, resolve } from 'node:path';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { isProcessBudgetFull } from 'switchyard/sdk';
import type { ChildPipe, GatewayChild, GatewayProcesses, Logger } from 'switchyard/sdk';
import { LOG_LINES_PER_SECOND, LogBudget } from '../../lib/mcp/log-budget.ts';
import { MAX_TARGET_MESSAGE, MAX_TARGET_MESSAGE_BYTES, McpTargetBusy } from '../../lib/mcp/upstream-contract.ts';
import type { McpUpstream } from '../../lib/mcp/upstream-contract.ts';

export interface StdioSpec {
  readonly cmd: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  /** Start from an empty environment instead of the gateway's (`clearEnv`). */
  readonly clearEnv?: boolean;
}

/**
 * Variables of the gateway's environment a target process never inherits: the session-sealing key (set by the
 * operator, or drawn by the supervisor for its workers) would let whoever reads the child's environment (a
 * third-party server, or a client through a tool such as server-everything's `get-env`) forge session ids (ADR 0134).
 */
const NOT_INHERITED = ['SESSION_KEY'];

/** The environment of a target process: the gateway's (less {@link NOT_INHERITED}) or none, plus the target's `env`. */
function childEnvironment(spec: StdioSpec): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = spec.clearEnv ? {} : { ...process.env };
  for (const name of NOT_INHERITED) delete env[name];
  return Object.assign(env, spec.env);
}

/**
 * Bytes waiting for a child's stdin past which a message is refused, not queued: a child that stops reading would
 * otherwise make the gateway (the supervisor, under workers) hold everything its clients send. Four MCP bodies at
 * their cap (2 MiB).
 */
export const MAX_QUEUED_STDIN = 8 * 1024 * 1024;
/** stderr lines are logged up to this many characters. */
const MAX_STDERR_LINE = 8 * 1024;
/** After stdin is closed, how long a child gets to exit on its own before SIGTERM, then SIGKILL. */
const GRACE_MS = 300;
const TERM_MS = 2000;

/**
 * How a child is started on POSIX systems (ADR 0018): `sh` forks a watcher that blocks reading fd 3, a pipe whose
 * other end only the gateway holds, then execs the MCP server in its place (same pid, same process group). When the
 * gateway exits, however it exits (SIGKILL included), the kernel closes its end, the watcher reads EOF and kills the
 * whole process group: the server and anything it started (`npx` -> `node`). The gateway also closes its end when the
 * server exits, so leftovers of a server that died are cleaned up the same way.
 */
const SUPERVISOR = '(read -r _ <&3; kill -9 0) </dev/null >/dev/null 2>&1 &\nexec 3<&-\nexec "$@"';
/** Without `/bin/sh` (Windows, distroless images) children are spawned directly, unsupervised (logged once). */
const SUPERVISED = process.platform !== 'win32' && canRun('/bin/sh');
let unsupervisedWarned = false;

function canRun(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Where `cmd` resolves through `PATH` (as `sh` will look it up), or why it cannot run. Checked before spawning: the
 * supervisor `sh` always starts, so a missing program would otherwise only show as exit code 127.
 */
function findProgram(cmd: string, path: string | undefined, cwd: string): { file: string } | { why: string } {
  const candidates = cmd.includes('/') ? [resolve(cwd, cmd)] : (path ?? '').split(delimiter).map((dir) => join(dir === '' ? cwd : isAbsolute(dir) ? dir : resolve(cwd, dir), cmd));
  let why = 'not found (looked in PATH)';
  for (const file of candidates) {
    try {
      accessSync(file, constants.X_OK);
      return { file };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EACCES') why = `${file} is not executable`;
    }
  }
  return { why };
}

/**
 * Children still running. They run in their own process group (so terminal signals to the gateway do not reach
 * them): if the gateway exits without stopping them (a crash), they are killed on the way out.
 */
const live = new Set<GatewayChild>();
let exitHook = false;
function track(child: GatewayChild): void {
  live.add(child);
  child.once('close', () => live.delete(child));
  if (exitHook) return;
  exitHook = true;
  process.once('exit', () => {
    for (const c of live) {
      try {
        if (c.pid !== undefined && process.platform !== 'win32') process.kill(-c.pid, 'SIGKILL');
        else c.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
  });
}

/**
 * One child process speaking newline-delimited JSON-RPC on stdin/stdout. The child runs in its own process group
 * so that stopping it also stops what it spawned (`npx` -> `node`), under the SUPERVISOR watcher; stderr goes to the
 * logger line by line.
 */
export class StdioUpstream implements McpUpstream {
  onmessage?: (message: JSONRPCMessage) => void;
  onerror?: (error: Error) => void;
  onclose?: () => void;
  private readonly spec: StdioSpec;
  private readonly processes: GatewayProcesses;
  private readonly budget: { readonly key: string; readonly max: number };
  private readonly logger: Logger;
  private child: GatewayChild | undefined;
  private stdout = '';
  /** UTF-8 bytes of `stdout` (the unfinished line), against MAX_TARGET_MESSAGE_BYTES. */
  private stdoutBytes = 0;
  /** The process wrote a line past the bound and is being stopped: the rest of its output is dropped. */
  private overLong = false;
  private stderr = '';
  private closing = false;
  private exited: Promise<void> | undefined;
  private hasExited = false;
  /** The last stderr line, logged when the process dies (it usually says why). */
  private lastStderr = '';
  /** Settles when stdin drains (or the process ends); one for every send waiting on it. */
  private drained: Promise<void> | undefined;
  /** A refused message was logged for this child (once per child). */
  private refusalLogged = false;
  /** Lines of output logged: stderr, and stdout lines that are not JSON-RPC (LOG_LINES_PER_SECOND). */
  private readonly logBudget: LogBudget;

  /** `budget`: `maxProcesses`, counted for the whole gateway by `processes` (a slot per live child). */
  constructor(spec: StdioSpec, processes: GatewayProcesses, budget: { readonly key: string; readonly max: number }, logger: Logger) {
    this.spec = spec;
    this.processes = processes;
    this.budget = budget;
    this.logger = logger;
    this.logBudget = new LogBudget((count) => this.logger.warn('stdio target log lines left out', { pid: this.child?.pid, count, limitPerSecond: LOG_LINES_PER_SECOND }));
  }

  /** The child's process id once started. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  start(): Promise<void> {
    if (this.child) return Promise.reject(new Error('already started'));
    const env = childEnvironment(this.spec);
    // Without `PATH` of its own (`clearEnv`), `cmd` is looked up through the gateway's, and run by its full name.
    let cmd = this.spec.cmd;
    if (SUPERVISED) {
      const found = findProgram(cmd, env.PATH ?? process.env.PATH, this.spec.cwd);
      if ('why' in found) return Promise.reject(new Error(`cannot start \`${cmd}\`: ${found.why}`));
      if (env.PATH === undefined) cmd = found.file;
    } else if (!unsupervisedWarned && process.platform !== 'win32') {
      unsupervisedWarned = true;
      this.logger.warn('no /bin/sh: stdio target processes are not supervised and may outlive a gateway that is killed (ADR 0018)');
    }
    return new Promise<void>((resolve, reject) => {
      // The budget (`maxProcesses`) is taken before the spawn and given back when the child exits, by `processes`.
      const { cwd, args } = this.spec;
      const budget = this.budget;
      const child = SUPERVISED
        ? this.processes.spawn({ file: '/bin/sh', args: ['-c', SUPERVISOR, 'switchyard-stdio', cmd, ...args], cwd, env, extraPipes: 1, detached: true, budget })
        : this.processes.spawn({ file: cmd, args, cwd, env, detached: process.platform !== 'win32', budget });
      this.child = child;
      let spawned = false;
      // The gateway's end of the supervisor's lifeline: never written; closed when the server exits (see SUPERVISOR).
      const lifeline = child.stdio[3] as ChildPipe | undefined;
      lifeline?.on('error', () => undefined);
      child.once('exit', () => {
        // The server is gone (the watcher stops what it left behind).
        lifeline?.destroy();
      });
      this.exited = new Promise<void>((done) => {
        child.once('close', (code, signal) => {
          this.hasExited = true;
          this.logBudget.flush();
          if (spawned && !this.closing) {
            // The last stderr line usually says why, but servers print tokens and connection strings there: it goes to
            // the log, never to the client (docs/adr/0160).
            const why = (signal ? `was killed by ${signal}` : `exited with code ${code}`) + (this.lastStderr ? ' (its last stderr line is in the gateway log)' : '');
            this.logger.warn('stdio target process ended', { pid: child.pid, code, signal, ...(this.lastStderr ? { lastStderr: this.lastStderr } : {}) });
            this.onerror?.(new Error(`the process ${why}`));
          }
          if (spawned) this.onclose?.();
          done();
        });
      });
      child.once('error', (err) => {
        if (!spawned) {
          this.hasExited = true;
          if (isProcessBudgetFull(err)) reject(new McpTargetBusy(`is at its limit of ${err.max} running processes (maxProcesses); try again when one of its sessions ends`));
          else reject(new Error(`cannot start \`${this.spec.cmd}\`: ${err.message}`));
        } else this.onerror?.(err);
      });
      child.once('spawn', () => {
        spawned = true;
        track(child);
        this.logger.info('stdio target process started', { pid: child.pid, cmd: this.spec.cmd, maxProcesses: this.budget.max });
        resolve();
      });
      child.stdin?.on('error', (err) => this.logger.debug('stdio target stdin failed', { error: err.message }));
      child.stdout?.setEncoding('utf8');
      child.stdout?.on('data', (chunk: string) => this.onStdout(chunk));
      child.stderr?.setEncoding('utf8');
      child.stderr?.on('data', (chunk: string) => this.onStderr(chunk));
    });
  }

  private onStdout(chunk: string): void {
    if (this.overLong) return;
    // A chunk without a newline is only appended: searching the whole pending line at every chunk made a long line
    // quadratic (a 32 MiB line took 12 s of CPU with the event loop blocked), so the search waits for its end.
    // Bytes are counted as HTTP answers are (the same bound): a chunk's length each time, once.
    if (chunk.indexOf('\n') === -1) {
      this.stdout += chunk;
      this.stdoutBytes += Buffer.byteLength(chunk, 'utf8');
      if (this.stdoutBytes > MAX_TARGET_MESSAGE_BYTES) this.lineTooLong();
      return;
    }
    this.stdout += chunk;
    let nl: number;
    while ((nl = this.stdout.indexOf('\n')) !== -1) {
      const line = this.stdout.slice(0, nl).replace(/\r$/, '');
      this.stdout = this.stdout.slice(nl + 1);
      // A line that ends in this chunk was not counted whole: its own length decides.
      if (Buffer.byteLength(line, 'utf8') > MAX_TARGET_MESSAGE_BYTES) return this.lineTooLong();
      if (line.trim() === '') continue;
      let message: unknown;
      try {
        message = JSON.parse(line);
      } catch {
        if (this.logBudget.take()) this.logger.warn('stdio target wrote a line that is not JSON-RPC on stdout; ignored', { line: line.slice(0, 200) });
        continue;
      }
      if (typeof message !== 'object' || message === null || (message as { jsonrpc?: unknown }).jsonrpc !== '2.0') {
        if (this.logBudget.take()) this.logger.warn('stdio target wrote a JSON value that is not a JSON-RPC message; ignored', { line: line.slice(0, 200) });
        continue;
      }
      this.onmessage?.(message as JSONRPCMessage);
    }
    this.stdoutBytes = Buffer.byteLength(this.stdout, 'utf8');
    if (this.stdoutBytes > MAX_TARGET_MESSAGE_BYTES) this.lineTooLong();
  }

  /**
   * A line past the bound of every transport: the process is stopped (its requests fail with this error, and the
   * session's next request starts it again). Skipping to the next newline would leave the request the line answered
   * waiting, and its id is inside what is not read.
   */
  private lineTooLong(): void {
    this.stdout = '';
    this.stdoutBytes = 0;
    this.overLong = true;
    this.logger.warn('stdio target process wrote a line longer than an MCP message may be; stopping it', { pid: this.child?.pid, limitBytes: MAX_TARGET_MESSAGE_BYTES });
    this.onerror?.(new Error(`the process wrote a line longer than ${MAX_TARGET_MESSAGE} (the most a target may send in one message)`));
    void this.close();
  }

  private onStderr(chunk: string): void {
    this.stderr += chunk;
    let nl: number;
    while ((nl = this.stderr.indexOf('\n')) !== -1) {
      const line = this.stderr.slice(0, nl).replace(/\r$/, '');
      this.stderr = this.stderr.slice(nl + 1);
      if (line.trim() === '') continue;
      this.lastStderr = line.slice(0, 300);
      if (this.logBudget.take()) this.logger.info('stdio target stderr', { pid: this.child?.pid, line: line.slice(0, MAX_STDERR_LINE) });
    }
    if (this.stderr.length > MAX_STDERR_LINE) {
      if (this.logBudget.take()) this.logger.info('stdio target stderr', { pid: this.child?.pid, line: this.stderr.slice(0, MAX_STDERR_LINE) });
      this.stderr = '';
    }
  }


  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin;
    if (!stdin || !stdin.writable || this.hasExited) return Promise.reject(new Error('the process is not running'));
    const line = `${JSON.stringify(message)}\n`;
    const queued = stdin.writableLength;
    if (queued + line.length > MAX_QUEUED_STDIN) {
      const waiting = `${(queued / 1024 / 1024).toFixed(1)} MiB`;
      if (!this.refusalLogged) {
        this.refusalLogged = true;
        this.logger.warn('stdio target process is not reading its stdin; refusing messages while it is behind', { pid: this.child?.pid, queuedBytes: queued, limitBytes: MAX_QUEUED_STDIN });
      }
      return Promise.reject(new McpTargetBusy(`its process is not reading its stdin: ${waiting} already wait for it (at most ${MAX_QUEUED_STDIN / 1024 / 1024} MiB); try again when it catches up`));
    }
    // A write error surfaces as the process ending; pending requests are failed then.
    if (stdin.write(line)) return Promise.resolve();
    if (this.drained) return this.drained;
    const drained = new Promise<void>((resolve) => {
      stdin.once('drain', resolve);
      void this.exited?.then(resolve);
    });
    this.drained = drained;
    void drained.then(() => {
      if (this.drained === drained) this.drained = undefined;
    });
    return drained;
  }

  private signal(sig: NodeJS.Signals): void {
    const pid = this.child?.pid;
    if (pid === undefined || this.hasExited) return;
    try {
      if (process.platform !== 'win32') process.kill(-pid, sig);
      else this.child!.kill(sig);
    } catch {
      try {
        this.child!.kill(sig);
      } catch {
        // already gone
      }
    }
  }

  /** Stop the child: close stdin, then SIGTERM and SIGKILL to its process group if it lingers. */
  async close(): Promise<void> {
    if (!this.child || this.closing) return this.exited;
    this.closing = true;
    if (this.hasExited) return;
    const exited = this.exited!;
    const wait = (ms: number): Promise<boolean> =>
      Promise.race([exited.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms).unref())]);
    try {
      this.child.stdin?.end();
    } catch {
      // ignore
    }
    if (await wait(GRACE_MS)) return;
    this.signal('SIGTERM');
    if (await wait(TERM_MS)) return;
    this.signal('SIGKILL');
    await wait(TERM_MS);
  }
}
