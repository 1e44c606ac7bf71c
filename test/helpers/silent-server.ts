// A TCP server that takes connections and never answers: a store (Redis, Postgres) behind a hung proxy or a wrong
// port. Tests of open deadlines use it.
import { createServer } from 'node:net';
import type { Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface SilentServer {
  readonly port: number;
  close(): Promise<void>;
}

export async function startSilentServer(): Promise<SilentServer> {
  const held = new Set<Socket>();
  const server = createServer((socket) => {
    held.add(socket);
    socket.on('close', () => held.delete(socket));
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of held) s.destroy();
        server.close(() => resolve());
      }),
  };
}
