import { createServer } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request as the test upstream received it. */
export interface ReceivedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  rawHeaders: string[];
  body: Buffer;
}

export interface TestUpstream {
  readonly port: number;
  readonly url: string;
  readonly received: ReceivedRequest[];
  close(): Promise<void>;
}

export type UpstreamHandler = (req: IncomingMessage, res: ServerResponse, body: Buffer) => void;

const echoHandler: UpstreamHandler = (req, res, body) => {
  res.writeHead(200, { 'content-type': 'application/json', 'x-upstream': 'yes' });
  res.end(JSON.stringify({ method: req.method, url: req.url, headers: req.headers, bodyLength: body.length }));
};

/** A real HTTP server on 127.0.0.1 that records what it receives. The default handler echoes as JSON. */
export async function startUpstream(handler: UpstreamHandler = echoHandler, options: { bufferBody?: boolean } = {}): Promise<TestUpstream> {
  const received: ReceivedRequest[] = [];
  const server: Server = createServer((req, res) => {
    if (options.bufferBody === false) {
      received.push({ method: req.method!, url: req.url!, headers: req.headers, rawHeaders: req.rawHeaders, body: Buffer.alloc(0) });
      handler(req, res, Buffer.alloc(0));
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      received.push({ method: req.method!, url: req.url!, headers: req.headers, rawHeaders: req.rawHeaders, body });
      handler(req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
