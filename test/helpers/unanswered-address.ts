// Addresses whose TCP handshakes never complete, as a host gone from the network or a firewall dropping SYNs: a
// connect waits for the kernel's retries (about 2 min on Linux). An unroutable address does not do here: this
// sandbox completes a connection to any address. A listener that no longer accepts does, once its accept queue is
// full: the kernel then drops new handshakes to it.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { Socket } from 'node:net';

/**
 * Fill the accept queue of `port`, whose listener no longer accepts (its process stopped or blocked): connect until
 * one handshake does not complete within 300 ms. Destroy the sockets to empty it again.
 */
export async function fillAcceptQueue(port: number): Promise<Socket[]> {
  const fillers: Socket[] = [];
  for (let i = 0; i < 64; i++) {
    const s = new Socket();
    s.on('error', () => undefined);
    s.connect(port, '127.0.0.1');
    fillers.push(s);
    const done = await Promise.race([once(s, 'connect').then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 300))]);
    if (!done) return fillers;
  }
  for (const s of fillers) s.destroy();
  throw new Error(`127.0.0.1:${port} completed 64 handshakes: its listener still accepts`);
}

/** A 127.0.0.1 port whose handshakes never complete: a child listening with a backlog of 1 that never accepts. */
export async function unansweredAddress(): Promise<{ readonly port: number; close(): void }> {
  const script = `const s = require('net').createServer();
    s.listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => {
      process.stdout.write(s.address().port + '\\n');
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
    });`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [line] = (await once(child.stdout!, 'data')) as [Buffer];
  const port = Number(line.toString().trim());
  const fillers = await fillAcceptQueue(port);
  return {
    port,
    close: () => {
      for (const s of fillers) s.destroy();
      child.kill('SIGKILL');
    },
  };
}
