// Without `config.maxConnectionsPerBind`, a bind's client connections are bounded by default (ADR 0143): half the
// process's open-file limit, shared by its workers. A client opening sockets it never finishes a TLS handshake on
// (each held up to 15 s, ADR 0138) ran the gateway out of file descriptors: requests on connections already open then
// failed, their upstream connections refused with EMFILE. A gateway process started under `ulimit -n 256` (so 128 client
// connections per bind), an HTTPS listener proxying to an upstream that closes every connection (so each request needs
// a new descriptor), and 300 sockets that send nothing.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { connect as tcpConnect } from 'node:net';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { connect } from 'node:tls';
import type { TLSSocket } from 'node:tls';
import { after, before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import { BIN } from '../helpers/cli.ts';
import { childEnv, startCli } from '../helpers/cli-process.ts';
import type { RunningCli } from '../helpers/cli-process.ts';
import { selfSignedPair } from '../helpers/pki.ts';
import { freePort } from '../helpers/ports.ts';
import { testTempDir } from '../helpers/temp-dir.ts';
import { requestOn, startHttpUpstream, waitFor } from './proxy-support.ts';
import type { HttpUpstream } from './proxy-support.ts';

const FILES = 256;
const FLOOD = 300;

describe('a bind without maxConnectionsPerBind is bounded by the open-file limit', () => {
  let upstream: HttpUpstream;
  let gw: RunningCli;
  let port: number;
  let ca: string;
  const flood: Socket[] = [];

  before(async () => {
    const dir = testTempDir('switchyard-conn-bound-');
    const pair = selfSignedPair(dir, 'localhost');
    ca = readFileSync(pair.cert, 'utf8');
    upstream = await startHttpUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '8', connection: 'close' });
      res.end('upstream');
    });
    port = await freePort();
    const file = join(dir, 'config.yaml');
    writeFileSync(
      file,
      stringify({
        config: { adminAddr: 'off', statsAddr: 'off', readinessAddr: 'off', drainTimeout: '200ms' },
        binds: [{ port, listeners: [{ protocol: 'HTTPS', tls: pair, routes: [{ backends: [{ host: upstream.host }] }] }] }],
      }),
    );
    // `ulimit -n` sets the soft and the hard limit: Node cannot raise it.
    gw = await startCli('/bin/sh', ['-c', `ulimit -n ${FILES} && exec "$0" "$@"`, process.execPath, BIN, '-f', file], { cwd: dir, env: childEnv() });
  });
  after(async () => {
    for (const s of flood) s.destroy();
    await gw?.stop();
    await upstream?.close();
  });

  it('connections past half the limit are closed at once; a connection already open keeps being served', async () => {
    const client = await new Promise<TLSSocket>((resolve, reject) => {
      const s = connect({ host: '127.0.0.1', port, servername: 'localhost', ca }, () => resolve(s));
      s.on('error', reject);
    });
    try {
      assert.match(await requestOn(client, '/before', 'localhost'), / 200 /);
      let closed = 0;
      for (let i = 0; i < FLOOD; i++) {
        const s = tcpConnect(port, '127.0.0.1');
        s.on('error', () => undefined);
        s.on('close', () => void closed++);
        flood.push(s);
      }
      // The gateway holds FILES / 2 client connections (the one above among them) and closes the rest.
      await waitFor(() => closed >= FLOOD - FILES / 2 + 1, 5_000, `${FLOOD - FILES / 2 + 1} connections closed by the gateway (${closed} so far)`);
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(closed, FLOOD - FILES / 2 + 1);
      // Each request needs a new upstream connection: there are descriptors left for it.
      for (let i = 0; i < 3; i++) assert.match(await requestOn(client, `/during-${i}`, 'localhost'), / 200 /);
      assert.doesNotMatch(gw.output(), /EMFILE/);
    } finally {
      client.destroy();
    }
  });
});
