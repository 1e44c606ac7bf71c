import { createServer } from 'node:http';
import { Pool } from 'undici';
let opened = 0, closed = 0, arrived = 0;
const server = createServer((req) => { arrived++; req.resume(); });
server.on('connection', (s) => { opened++; s.on('close', () => closed++); });
server.keepAliveTimeout = 0; server.headersTimeout = 0; server.requestTimeout = 0;
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const pool = new Pool(`http://127.0.0.1:${server.address().port}`, { headersTimeout: 0, bodyTimeout: 0, keepAliveTimeout: 30_000 });
const mode = process.argv[2];
const ctrls = [];
const ps = [];
for (let i = 0; i < 30; i++) {
  const c = new AbortController(); ctrls.push(c);
  ps.push(pool.request({ path: '/', method: 'GET', signal: c.signal }).catch(() => undefined));
  if (mode === 'immediate') c.abort();
}
if (mode === 'after') { while (arrived < 30) await new Promise((r) => setTimeout(r, 5)); for (const c of ctrls) c.abort(); }
if (mode === 'soon') { await new Promise((r) => setTimeout(r, 1)); for (const c of ctrls) c.abort(); }
await Promise.all(ps);
await new Promise((r) => setTimeout(r, 1000));
console.log(mode, 'opened', opened, 'closed', closed, 'arrived', arrived, 'pool', JSON.stringify(pool.stats));
process.exit(0);
