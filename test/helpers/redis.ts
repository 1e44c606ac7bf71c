// A real redis-server for a test (Debian's package): on a free 127.0.0.1 port, no persistence, stopped by the test.
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { freePort } from './ports.ts';
import { stopChild, waitForPort } from './processes.ts';
import { testTempDir } from './temp-dir.ts';
import { which } from './which.ts';

/** redis-server's path, if installed. */
export const redisServer = which('redis-server', ['/usr/bin', '/usr/sbin', '/usr/local/bin']);
/** A suite's `skip` without it (false when it is installed). */
export const redisSkip: string | false = redisServer ? false : 'redis-server is not installed (Debian: apt-get install -y redis-server)';

export interface RunningRedis {
  readonly port: number;
  /** `redis://127.0.0.1:<port>` */
  readonly url: string;
  readonly pid: number;
  stop(): Promise<void>;
}

/** `args`: more redis-server options (`--tcp-backlog 1`, ...). */
export async function startRedis(args: readonly string[] = []): Promise<RunningRedis> {
  if (!redisServer) throw new Error(String(redisSkip));
  const dir = testTempDir('switchyard-redis-');
  const port = await freePort();
  const child = spawn(redisServer, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...args], { stdio: 'ignore' });
  const stop = async (): Promise<void> => {
    await stopChild(child);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitForPort(port, Date.now() + 10_000);
  } catch (err) {
    await stop();
    throw err;
  }
  return { port, url: `redis://127.0.0.1:${port}`, pid: child.pid!, stop };
}
