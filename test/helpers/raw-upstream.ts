// An upstream that writes exact bytes: for tests of what the gateway makes of an answer head as the upstream wrote it
// (case, order, repeated names, framing), which node:http's own server would normalise.
import { createServer } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';

export interface RawUpstream {
  readonly port: number;
  /** `127.0.0.1:<port>`, as a `host` backend takes it. */
  readonly host: string;
  close(): Promise<void>;
}

/**
 * A keep-alive upstream on 127.0.0.1 that writes `answer(method, path)` for each request once its head and its
 * Content-Length body (if any) have arrived; requests on one connection are answered in order.
 */
export async function startRawUpstream(answer: (method: string, path: string) => string): Promise<RawUpstream> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    let pending = '';
    socket.on('data', (chunk: Buffer) => {
      pending += chunk.toString('latin1');
      for (let end = pending.indexOf('\r\n\r\n'); end !== -1; end = pending.indexOf('\r\n\r\n')) {
        const head = pending.slice(0, end);
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
        if (pending.length < end + 4 + length) return;
        pending = pending.slice(end + 4 + length);
        const [method, path] = head.split(' ');
        socket.write(answer(method!, path!));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    host: `127.0.0.1:${port}`,
    close() {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
