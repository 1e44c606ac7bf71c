import { createServer } from 'node:net';

/**
 * Ports come from below the kernel's ephemeral range (32768+ on Linux), where outgoing connections of other
 * tests cannot take them between this check and the real listen; a random start keeps parallel test files
 * apart.
 */
const LOW = 20_000;
const HIGH = 32_000;
const handedOut = new Set<number>();

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    // `::` without ipv6Only also claims the IPv4 port, as the gateway's binds do.
    server.listen({ port, host: '::', ipv6Only: false }, () => server.close(() => resolve(true)));
  });
}

/** A TCP port free on every interface right now, never handed out twice by this process. */
export async function freePort(): Promise<number> {
  for (let tries = 0; tries < 200; tries++) {
    const port = LOW + Math.floor(Math.random() * (HIGH - LOW));
    if (handedOut.has(port)) continue;
    if (await canListen(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error('no free port found');
}
