// The Node ceiling: a bare reverse proxy (node:http server + undici Pool.request), no routing, no policies.
// Usage: node test/bench/bare-proxy.ts PORT UPSTREAM_PORT   (prints `listening PORT` once ready)
import { createServer } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import { Pool } from 'undici';
import type { Dispatcher } from 'undici';

const [port, upstreamPort] = [Number(process.argv[2] ?? 0), Number(process.argv[3])];
const pool = new Pool(`http://127.0.0.1:${upstreamPort}`, { headersTimeout: 0, bodyTimeout: 0, keepAliveTimeout: 30_000 });
const HOP = ['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade'];
function strip(h: IncomingHttpHeaders | Record<string, unknown>): void {
  for (const name of HOP) if (h[name] !== undefined) delete h[name];
}

const server = createServer({ requestTimeout: 0, keepAliveTimeout: 65_000 }, (req, res) => {
  const headers = req.headers;
  strip(headers);
  const hasBody = headers['content-length'] !== undefined && headers['content-length'] !== '0';
  pool
    .request({ path: req.url ?? '/', method: req.method as Dispatcher.HttpMethod, headers, body: hasBody ? req : null })
    .then(
      ({ statusCode, headers: upHeaders, body }) => {
        strip(upHeaders);
        if (res.destroyed) return void body.on('error', () => undefined).destroy();
        res.writeHead(statusCode, upHeaders as Record<string, string | string[]>);
        body.on('error', (err) => res.destroy(err));
        res.on('close', () => {
          if (!res.writableFinished && !body.destroyed) body.destroy();
        });
        body.pipe(res);
      },
      (err: Error) => {
        if (res.headersSent || res.destroyed) return void res.destroy();
        res.writeHead(502, { 'content-type': 'text/plain' }).end(`bad gateway: ${err.message}\n`);
      },
    );
});
server.listen(port, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : port}\n`);
});
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => process.exit(0));
