// Bench upstream: a minimal node:http server answering every request with the same ~100-byte body.
// Usage: node test/bench/upstream.ts PORT   (prints `listening PORT` once it accepts connections)
import { createServer } from 'node:http';

const BODY = Buffer.from(`${JSON.stringify({ ok: true, service: 'bench-upstream', note: 'a small fixed body of about one hundred bytes' })}\n`);
const HEADERS = { 'content-type': 'application/json', 'content-length': String(BODY.length) };

const port = Number(process.argv[2] ?? 0);
const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  // Drain any request body, then answer.
  if (req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined) req.resume();
  res.writeHead(200, HEADERS);
  res.end(BODY);
});
server.listen(port, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : port}\n`);
});
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => process.exit(0));
