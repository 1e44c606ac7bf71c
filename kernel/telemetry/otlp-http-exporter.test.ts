// The OTLP/HTTP exporter against a collector that answers but never finishes (a proxy or collector trickling its
// answer a byte at a time): the export's timeout is a deadline for the whole call, not for a silence, or one such
// export holds every later one (the batcher sends one at a time) and every span after it is dropped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { OtlpHttpTraceExporter } from './otlp-http-exporter.ts';
import type { ExportOutcome } from './span-batcher.ts';

test('an export whose answer never ends fails at its deadline, though bytes keep coming', async () => {
  const timers = new Set<NodeJS.Timeout>();
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/x-protobuf' });
      timers.add(setInterval(() => res.write('x'), 50));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const exporter = new OtlpHttpTraceExporter(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`, {}, 400);
  try {
    const started = Date.now();
    const outcome = await new Promise<ExportOutcome>((resolve) => exporter.export(Buffer.alloc(0), resolve));
    assert.equal(outcome.code, 1);
    assert.equal(outcome.errorType, 'timeout');
    assert.ok(Date.now() - started < 2000, `failed after ${Date.now() - started} ms`);
  } finally {
    for (const t of timers) clearInterval(t);
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await exporter.shutdown();
  }
});
