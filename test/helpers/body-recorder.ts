// An upstream that records what it received of each request body (byte count and SHA-256, whether it ended), for
// tests that compare what reached an upstream byte for byte; with the bits such tests share.
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';

/** What the upstream received of one request. */
export interface SeenBody {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  bytes: number;
  sha256: string;
  /** The request's body ended (false: it was cut). */
  complete: boolean;
}

export const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/** `body` as a stream of `size`-byte chunks: undici sends it chunked. */
export function chunkedBody(body: Buffer, size = 65536): Readable {
  return Readable.from(
    (function* () {
      for (let i = 0; i < body.length; i += size) yield body.subarray(i, i + size);
    })(),
  );
}

export interface BodyRecorder {
  readonly server: Server;
  readonly port: number;
  /** Every request, oldest first, recorded as its body arrives. */
  readonly seen: SeenBody[];
  close(): Promise<void>;
}

/** Start a recorder on a free loopback port; `answer` answers each request once its body ended. */
export async function startBodyRecorder(answer: (res: ServerResponse) => void): Promise<BodyRecorder> {
  const seen: SeenBody[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    const entry: SeenBody = { method: req.method!, url: req.url!, headers: req.headers, bytes: 0, sha256: '', complete: false };
    seen.push(entry);
    req.on('data', (c: Buffer) => {
      chunks.push(c);
      entry.bytes += c.length;
    });
    req.on('end', () => {
      entry.complete = true;
      entry.sha256 = sha256(Buffer.concat(chunks));
      answer(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    server,
    port: (server.address() as AddressInfo).port,
    seen,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Poll `get` until it gives a value; fails naming `what` after `ms`. */
export async function waitFor<T>(get: () => T | undefined, what: string, ms = 8000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = get();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}
