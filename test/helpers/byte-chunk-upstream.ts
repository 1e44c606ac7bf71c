// An upstream that answers 512 KiB of `x` in 1-byte chunk frames (chunked framing, written raw), and measures of
// the heap a reader holds while that answer is still open (ADR 0153): readers that keep each chunk as it came held
// some 200 bytes of heap per byte.
import { connect, createServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** Bytes of the answer's body: each a chunk frame of its own. */
export const BYTE_CHUNKS = 512 * 1024;

export interface ByteChunkUpstream {
  readonly port: number;
  readonly origin: string;
  /**
   * Heap held (bytes, measured once the heap stops growing) while `read` reads the next answer before its last chunk,
   * then what `read` gave once the answer ended.
   */
  heldFor<T>(read: () => Promise<T>): Promise<{ held: number; result: T }>;
  close(): Promise<void>;
}

const settle = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Heap in use after a full collection: the baseline of {@link heapGrowth}. */
export function heapNow(): number {
  gc();
  return process.memoryUsage().heapUsed;
}

/** Heap held above `before` (from {@link heapNow}) once it stops growing, checked every 200 ms for up to 10 s. */
export async function heapGrowth(before: number): Promise<number> {
  let held = 0;
  for (let i = 0; i < 50; i++) {
    await settle(200);
    const now = heapNow() - before;
    if (i > 0 && Math.abs(now - held) < 256 * 1024) return now;
    held = now;
  }
  return held;
}

/** `contentType` is the answer's Content-Type. Requests are answered one at a time, one connection each. */
export async function startByteChunkUpstream(contentType = 'application/json'): Promise<ByteChunkUpstream> {
  let open: Socket | undefined;
  let written: Promise<void> | undefined;
  const server = createServer((socket) => {
    open = socket;
    socket.on('error', () => undefined);
    socket.once('data', () => {
      written = new Promise<void>((resolve) => {
        const head = `HTTP/1.1 200 OK\r\nContent-Type: ${contentType}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`;
        socket.write(head + '1\r\nx\r\n'.repeat(BYTE_CHUNKS), () => resolve());
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    origin: `http://127.0.0.1:${port}`,
    async heldFor<T>(read: () => Promise<T>): Promise<{ held: number; result: T }> {
      open = undefined;
      written = undefined;
      const before = heapNow();
      const result = read();
      for (let i = 0; i < 500 && written === undefined; i++) await settle(10);
      await written;
      // Written is not yet read and parsed.
      const held = await heapGrowth(before);
      open!.end('0\r\n\r\n');
      return { held, result: await result };
    },
    async close(): Promise<void> {
      open?.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** `held` as a message: MiB held for the answer. */
export const heldMessage = (name: string, held: number): string => `${name}: ${(held / 1024 / 1024).toFixed(1)} MiB held for 512 KiB`;

/** An upstream answering every request with `frame` (chunked framing, written raw) repeated for as long as it is read. */
export interface EndlessUpstream {
  readonly host: string;
  close(): Promise<void>;
}

export async function startEndlessUpstream(contentType: string, frame: string): Promise<EndlessUpstream> {
  const frames = Buffer.from(frame.repeat(64 * 1024));
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.once('data', () => {
      socket.write(`HTTP/1.1 200 OK\r\nContent-Type: ${contentType}\r\nTransfer-Encoding: chunked\r\n\r\n`);
      const more = (): void => {
        while (!socket.destroyed && socket.write(frames));
      };
      socket.on('drain', more);
      more();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    host: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Heap held while a client that sent `request` to the gateway on `port` reads the answer's head and then nothing:
 * the answer backs up to the upstream. Asserts the head says `status`.
 */
export async function heldByUnreadAnswer(port: number, request: string, status = 200): Promise<number> {
  const before = heapNow();
  const client = connect(port, '127.0.0.1');
  client.on('error', () => undefined);
  client.write(request);
  let head = '';
  await new Promise<void>((resolve) => {
    const onData = (c: Buffer): void => {
      head += c.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      client.off('data', onData);
      client.pause();
      resolve();
    };
    client.on('data', onData);
  });
  try {
    if (!head.startsWith(`HTTP/1.1 ${status}`)) throw new Error(`answered ${head.slice(0, 40)}`);
    return await heapGrowth(before);
  } finally {
    client.destroy();
  }
}
