// Child processes the tests start (servers on 127.0.0.1): waiting for one to listen, and stopping one by its own
// handle. Shared by the helpers that start redis-server, PostgreSQL, Jaeger and the Envoy rate limit service.
import type { ChildProcess } from 'node:child_process';
import { connect } from 'node:net';

/** Resolves once something accepts connections on 127.0.0.1:`port`; rejects after `deadline` (ms since the epoch). */
export function waitForPort(port: number, deadline: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const attempt = () => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve();
      });
      socket.once('error', () => {
        socket.destroy();
        if (Date.now() > deadline) reject(new Error(`nothing listened on 127.0.0.1:${port} in time`));
        else setTimeout(attempt, 50);
      });
    };
    attempt();
  });
}

/** Stop a child we started (by its own handle, never by name) and wait for it to exit. */
export async function stopChild(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
  await exited;
  clearTimeout(timer);
}
