// What the in-process tracing benches (tracing-cost, tracing-ab, tracing-promoted, tracing-path-micro) share: a
// fixed-answer upstream, the OTLP sink in a child process, and a block of keep-alive requests timed in CPU.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Pool } from 'undici';
import { freePort } from '../helpers/ports.ts';

const HERE = fileURLToPath(new URL('.', import.meta.url));
const BODY = Buffer.from(`${JSON.stringify({ ok: true, service: 'bench-upstream', note: 'a small fixed body of about one hundred bytes' })}\n`);

/** An upstream on 127.0.0.1 answering every request with the same ~100-byte JSON body. */
export async function startFixedUpstream(): Promise<{ server: Server; port: number }> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(BODY.length) }).end(BODY);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

/** otlp-sink.ts in a child process (its CPU is not this process's), ready to take exports. */
export async function startOtlpSink(): Promise<{ child: ChildProcess; port: number }> {
  const port = await freePort();
  const child = spawn(process.execPath, [join(HERE, 'otlp-sink.ts'), String(port)], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve) => child.stdout!.on('data', (s: Buffer) => s.toString().includes('listening') && resolve()));
  return { child, port };
}

/** `n` GET requests to `path` over `concurrency` keep-alive connections: this process's CPU µs per request. */
export async function cpuPerRequest(pool: Pool, n: number, concurrency: number, path = '/plain'): Promise<number> {
  let next = 0;
  const t0 = process.cpuUsage();
  const worker = async (): Promise<void> => {
    while (next++ < n) {
      const r = await pool.request({ path, method: 'GET' });
      if (r.statusCode !== 200) throw new Error(`status ${r.statusCode}`);
      await r.body.dump();
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const d = process.cpuUsage(t0);
  return (d.user + d.system) / n;
}

export const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
