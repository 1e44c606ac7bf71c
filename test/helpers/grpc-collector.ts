// An OTLP/gRPC collector in a few lines: a node:http2 server speaking gRPC's wire that answers every export with
// the given trailers (`grpc-status`, `grpc-message`), for tests of what the exporter makes of a collector's answer.
import { createServer } from 'node:http2';
import type { Http2Server } from 'node:http2';
import type { AddressInfo } from 'node:net';

export interface GrpcCollector {
  readonly server: Http2Server;
  readonly port: number;
  /** `http://127.0.0.1:<port>`, as `otlpEndpoint` takes it. */
  readonly url: string;
  close(): Promise<void>;
}

export async function startGrpcCollector(trailers: Record<string, string> = { 'grpc-status': '0' }): Promise<GrpcCollector> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/grpc' });
      res.addTrailers(trailers);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return { server, port, url: `http://127.0.0.1:${port}`, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}
