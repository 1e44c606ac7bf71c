import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root and the CLI a user runs (`node bin/switchyard.js`). */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const BIN = join(ROOT, 'bin/switchyard.js');

export interface CliRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Wall time from spawn to exit. */
  ms: number;
  /** Largest resident set seen while it ran (sampled from /proc every 25 ms; 0 where /proc is absent). */
  peakRssMiB: number;
}

function rssMiB(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

/**
 * Run the CLI to completion in a child process; one still running after `timeoutMs` is killed (by its own pid)
 * and the promise rejects with what it printed.
 */
export function runCli(args: readonly string[], options: { timeoutMs?: number; cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<CliRun> {
  const timeoutMs = options.timeoutMs ?? 20_000;
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, [BIN, ...args], { cwd: options.cwd ?? ROOT, env: { ...process.env, NODE_OPTIONS: '', ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let peakRssMiB = 0;
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const sampler = setInterval(() => {
      if (child.pid !== undefined) peakRssMiB = Math.max(peakRssMiB, rssMiB(child.pid));
    }, 25);
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`switchyard ${args.join(' ')} did not exit within ${timeoutMs} ms (peak RSS ${peakRssMiB.toFixed(0)} MiB)\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      clearInterval(sampler);
      reject(err);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      clearInterval(sampler);
      resolve({ code, signal, stdout, stderr, ms: performance.now() - t0, peakRssMiB });
    });
  });
}
