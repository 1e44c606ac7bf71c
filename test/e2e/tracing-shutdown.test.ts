// SIGTERM with spans still queued for an OTLP/gRPC collector (the default protocol): the gateway sends them, then
// exits 0. The exporter's HTTP/2 session is unref'd (a trace backend that is down must not keep the process alive),
// so with the shutdown export the only work left Node found nothing keeping it alive and exited 13 ("unsettled
// top-level await") without its `switchyard stopped` line. The collector is a node:http2 server speaking gRPC's wire
// (length-prefixed message, `grpc-status` trailer) that answers each export 300 ms late.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http2';
import type { Http2Server } from 'node:http2';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { BIN, ROOT } from '../helpers/cli.ts';
import { startCli } from '../helpers/cli-process.ts';
import { startSilentServer } from '../helpers/silent-server.ts';
import { freePort } from '../helpers/ports.ts';
import { testTempDir } from '../helpers/temp-dir.ts';

describe('tracing: SIGTERM with spans queued for an OTLP/gRPC collector', () => {
  let collector: Http2Server;
  let collectorPort: number;
  const exports: number[] = [];
  before(async () => {
    collector = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        exports.push(Buffer.concat(chunks).length);
        setTimeout(() => {
          res.writeHead(200, { 'content-type': 'application/grpc' });
          res.addTrailers({ 'grpc-status': '0' });
          // An empty ExportTraceServiceResponse, framed.
          res.end(Buffer.from([0, 0, 0, 0, 0]));
        }, 300);
      });
    });
    await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
    collectorPort = (collector.address() as { port: number }).port;
  });
  after(() => new Promise<void>((resolve) => collector.close(() => resolve())));

  it('sends the queued spans, logs that it stopped and exits 0', async () => {
    const port = await freePort();
    const dir = testTempDir('switchyard-trace-stop-');
    const file = join(dir, 'gw.yaml');
    writeFileSync(
      file,
      `config:\n  adminAddr: 127.0.0.1:0\n  statsAddr: 127.0.0.1:0\n  readinessAddr: 127.0.0.1:0\n  tracing:\n    otlpEndpoint: http://127.0.0.1:${collectorPort}\n    randomSampling: true\nbinds:\n- port: ${port}\n  address: 127.0.0.1\n  listeners:\n  - routes:\n    - policies: { directResponse: { body: ok, status: 200 } }\n`,
    );
    const gw = await startCli(process.execPath, [BIN, '-f', file], { cwd: ROOT });
    const res = await fetch(`http://127.0.0.1:${port}/`);
    assert.equal(res.status, 200);
    const code = await gw.stop();
    assert.equal(code, 0, gw.output());
    assert.match(gw.output(), /switchyard stopped/);
    assert.ok(exports.length >= 1 && exports.every((n) => n > 5), `the collector got the spans: ${exports.join(',')}`);
  });
});

// A collector that takes the connection and never answers (hung, or a proxy in front of a dead one): the export at
// shutdown waited for its 10 s timeout after the drain, on top of one already hanging, so a SIGTERM took up to 20 s
// more than `drainTimeout` and an orchestrator's grace period (drain + a few seconds) ended it with SIGKILL.
describe('tracing: SIGTERM with a collector that never answers', () => {
  for (const otlpProtocol of ['grpc', 'http']) {
    it(`OTLP/${otlpProtocol}: the gateway exits by its drain deadline, saying the spans were not sent`, async () => {
      const silent = await startSilentServer();
      const port = await freePort();
      const file = join(testTempDir('switchyard-trace-hung-'), 'gw.yaml');
      writeFileSync(
        file,
        `config:\n  drainTimeout: 2s\n  adminAddr: 127.0.0.1:0\n  statsAddr: 127.0.0.1:0\n  readinessAddr: 127.0.0.1:0\n  tracing:\n    otlpEndpoint: http://127.0.0.1:${silent.port}\n    otlpProtocol: ${otlpProtocol}\n    randomSampling: true\nbinds:\n- port: ${port}\n  address: 127.0.0.1\n  listeners:\n  - routes:\n    - policies: { directResponse: { body: ok, status: 200 } }\n`,
      );
      const gw = await startCli(process.execPath, [BIN, '-f', file], { cwd: ROOT });
      try {
        assert.equal((await fetch(`http://127.0.0.1:${port}/a`)).status, 200);
        // The first batch leaves a second after its span and hangs; the next span waits behind it.
        await sleep(1300);
        assert.equal((await fetch(`http://127.0.0.1:${port}/b`)).status, 200);
        const started = Date.now();
        const code = await gw.stop();
        const took = Date.now() - started;
        assert.equal(code, 0, gw.output());
        assert.ok(took < 4500, `SIGTERM to exit took ${took} ms (drainTimeout 2s)`);
        assert.match(gw.output(), /trace export at shutdown did not finish by the drain deadline/);
        assert.match(gw.output(), /switchyard stopped/);
      } finally {
        await gw.stop();
        await silent.close();
      }
    });
  }
});
