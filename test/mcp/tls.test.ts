// A streamable-HTTP target behind TLS: the `mcp` transport's requests go through the gateway's pooled upstreams, so
// `backendTLS` applies (here at route level; `targets[].policies` once backendTLS attaches to mcpTargetPolicies).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer } from 'node:https';
import type { Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { INIT, connectClient, rawPost, startEverything, startMcpGateway } from './harness.ts';
import type { UpstreamServer } from './harness.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

function makePki(): { ca: string; cert: string; key: string } {
  const dir = testTempDir('switchyard-mcp-tls-');
  const p = (n: string): string => join(dir, n);
  const run = (...args: string[]): void => void execFileSync('/usr/bin/openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  run('req', '-x509', ...ec, '-keyout', p('ca.key'), '-out', p('ca.pem'), '-days', '2', '-subj', '/CN=MCP Test CA', '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign');
  writeFileSync(p('server.ext'), 'basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1\n');
  run('req', '-new', ...ec, '-keyout', p('server.key'), '-out', p('server.csr'), '-subj', '/CN=127.0.0.1');
  run('x509', '-req', '-in', p('server.csr'), '-CA', p('ca.pem'), '-CAkey', p('ca.key'), '-set_serial', '2', '-days', '2', '-extfile', p('server.ext'), '-out', p('server.pem'));
  return { ca: p('ca.pem'), cert: p('server.pem'), key: p('server.key') };
}

describe('mcp backend, a streamable-HTTP target over TLS', () => {
  let upstream: UpstreamServer;
  let tls: Server;
  let tlsPort: number;
  let pki: ReturnType<typeof makePki>;
  before(async () => {
    pki = makePki();
    upstream = await startEverything('streamableHttp');
    // TLS terminator in front of server-everything, streaming both ways.
    tls = createServer({ cert: readFileSync(pki.cert), key: readFileSync(pki.key) }, (req, res) => {
      const up = httpRequest({ host: '127.0.0.1', port: upstream.port, method: req.method, path: req.url, headers: { ...req.headers, host: `127.0.0.1:${upstream.port}` } }, (ur) => {
        res.writeHead(ur.statusCode!, ur.headers);
        ur.pipe(res);
      });
      up.on('error', () => res.destroy());
      res.on('close', () => up.destroy());
      req.pipe(up);
    });
    await new Promise<void>((r) => tls.listen(0, '127.0.0.1', r));
    tlsPort = (tls.address() as AddressInfo).port;
  });
  after(async () => {
    tls.closeAllConnections();
    await new Promise<void>((r) => tls.close(() => r()));
    await upstream.stop();
  });

  it('reaches the target when backendTLS trusts its CA', async () => {
    const gw = await startMcpGateway({ targets: [{ name: 'secure', mcp: { host: `https://127.0.0.1:${tlsPort}/mcp` } }] }, { policies: { backendTLS: { root: pki.ca } } });
    try {
      const { client, transport } = await connectClient(gw.mcpUrl);
      const r = await client.callTool({ name: 'echo', arguments: { message: 'over tls' } });
      assert.deepEqual(r.content, [{ type: 'text', text: 'Echo: over tls' }]);
      await transport.terminateSession();
      await client.close();
    } finally {
      await gw.stop();
    }
  });

  it('fails naming the target when the certificate is not trusted', async () => {
    const gw = await startMcpGateway({ targets: [{ name: 'secure', mcp: { host: `https://127.0.0.1:${tlsPort}/mcp` } }] });
    try {
      const res = await rawPost(gw.mcpUrl, INIT());
      assert.equal(res.status, 500);
      assert.match(JSON.parse(res.text).error.message, /^target `secure` \(mcp: https:\/\/127\.0\.0\.1:\d+\/mcp\) failed to start: /);
    } finally {
      await gw.stop();
    }
  });
});
