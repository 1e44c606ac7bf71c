// Bench OTLP/HTTP receiver: accepts `POST /v1/traces` (protobuf), answers 200 with an empty
// ExportTraceServiceResponse, and counts what it received (`GET /stats`: {"exports":n,"bytes":n}). It stands in for a
// collector, so the tracing rows measure the gateway's cost of making and exporting spans, not a backend's.
// Usage: node test/bench/otlp-sink.ts PORT   (prints `listening PORT` once it accepts connections)
import { createServer } from 'node:http';

let exports = 0;
let bytes = 0;
const port = Number(process.argv[2] ?? 0);
const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  if (req.method === 'GET' && req.url === '/stats') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ exports, bytes }));
    return;
  }
  req.on('data', (c: Buffer) => (bytes += c.length));
  req.on('end', () => {
    exports++;
    res.writeHead(200, { 'content-type': 'application/x-protobuf', 'content-length': '0' }).end();
  });
});
server.listen(port, '127.0.0.1', () => console.log(`listening ${port}`));
