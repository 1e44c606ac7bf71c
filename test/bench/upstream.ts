// Bench upstream: a minimal node:http server. Paths under `/small` and `/large` answer the chat completions of the
// `peers` scenario (llm-bodies.ts: 320 B and 16 KiB); `/v1/chat/completions` (the `ai` rows, ai.ts) the small one, or
// the streamed one when the request body has `"stream":true`; every other path the same ~100-byte body.
// Usage: node test/bench/upstream.ts PORT   (prints `listening PORT` once it accepts connections)
import { createServer } from 'node:http';
import { LARGE_ANSWER, SMALL_ANSWER, STREAM_ANSWER } from './llm-bodies.ts';

const BODY = Buffer.from(`${JSON.stringify({ ok: true, service: 'bench-upstream', note: 'a small fixed body of about one hundred bytes' })}\n`);
const answer = (body: Buffer) => ({ body, headers: { 'content-type': 'application/json', 'content-length': String(body.length) } });
const PLAIN = answer(BODY);
const SMALL = answer(Buffer.from(SMALL_ANSWER));
const LARGE = answer(Buffer.from(LARGE_ANSWER));
const STREAM = { body: Buffer.from(STREAM_ANSWER), headers: { 'content-type': 'text/event-stream', 'content-length': String(Buffer.byteLength(STREAM_ANSWER)) } };

const port = Number(process.argv[2] ?? 0);
const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  if (req.url === '/v1/chat/completions' || req.url === '/host/v1/chat/completions') {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const { body, headers } = Buffer.concat(chunks).includes('"stream":true') ? STREAM : SMALL;
      res.writeHead(200, headers);
      res.end(body);
    });
    return;
  }
  // Drain any request body, then answer.
  if (req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined) req.resume();
  const url = req.url ?? '/';
  const { body, headers } = url.startsWith('/small') ? SMALL : url.startsWith('/large') ? LARGE : PLAIN;
  res.writeHead(200, headers);
  res.end(body);
});
server.listen(port, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : port}\n`);
});
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => process.exit(0));
