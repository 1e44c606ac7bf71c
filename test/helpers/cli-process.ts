import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';

/** The environment a CLI child gets: this one without the test runner's and NODE_OPTIONS' influence. */
export function childEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  delete env.NODE_TEST_CONTEXT;
  delete env.NODE_OPTIONS;
  return env;
}

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run a command to completion (killed after `timeout` ms). */
export function runCommand(file: string, args: readonly string[], options: { cwd: string; env?: NodeJS.ProcessEnv; timeout?: number }): Promise<Run> {
  return new Promise((done) => {
    execFile(file, args, { cwd: options.cwd, env: options.env ?? childEnv(), timeout: options.timeout ?? 30_000, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : null) : 0;
      done({ code, stdout, stderr });
    });
  });
}

/** Run a command, read one chunk of its stdout, then close the pipe (as `cmd | head` does): its exit code and stderr. */
export async function runClosingStdoutEarly(file: string, args: readonly string[]): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'], env: childEnv() });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = new Promise<number | null>((resolve) => child.on('exit', resolve));
  await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
  child.stdout.destroy();
  return { code: await code, stderr };
}

export interface RunningCli {
  readonly child: ChildProcess;
  /** stdout and stderr so far. */
  output(): string;
  /** Resolves when `pattern` appears in the output (rejects after `timeoutMs` or on exit). */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<void>;
  /** SIGTERM (SIGKILL after 10 s); resolves with the exit code. */
  stop(): Promise<number | null>;
}

/** Start a long-running CLI (a gateway) and resolve once it logs `switchyard ready`. */
export async function startCli(file: string, args: readonly string[], options: { cwd: string; env?: NodeJS.ProcessEnv; readyMs?: number }): Promise<RunningCli> {
  const child = spawn(file, args, { cwd: options.cwd, env: options.env ?? childEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  let exited = false;
  const exit = new Promise<number | null>((done) => child.on('exit', (code) => ((exited = true), done(code))));
  const listeners = new Set<() => void>();
  const onData = (d: Buffer): void => {
    output += d.toString();
    for (const l of listeners) l();
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const waitFor = (pattern: RegExp, timeoutMs = 15_000): Promise<void> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        if (pattern.test(output)) finish();
      };
      const finish = (err?: Error): void => {
        clearTimeout(timer);
        listeners.delete(check);
        if (err) reject(err);
        else resolve();
      };
      const timer = setTimeout(() => finish(new Error(`no ${pattern} within ${timeoutMs} ms:\n${output}`)), timeoutMs);
      listeners.add(check);
      void exit.then((code) => finish(new Error(`exited (${code}) before ${pattern}:\n${output}`)));
      check();
    });
  const running: RunningCli = {
    child,
    output: () => output,
    waitFor,
    async stop() {
      if (!exited) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      const code = await exit;
      clearTimeout(timer);
      return code;
    },
  };
  try {
    await waitFor(/switchyard ready/, options.readyMs ?? 20_000);
  } catch (err) {
    await running.stop();
    throw err;
  }
  return running;
}
