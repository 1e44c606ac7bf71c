// The OTLP/gRPC exporter against a collector that stops answering: a connection that took an export and never
// answered it (a collector hung, a peer gone without a reset, a proxy holding the socket) must not keep every later
// export waiting on it until the process restarts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createConnection, createServer } from 'node:net';
import type { Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { OtlpGrpcTraceExporter } from './otlp-grpc-exporter.ts';
import type { ExportOutcome } from './span-batcher.ts';
import { startGrpcCollector } from '../../test/helpers/grpc-collector.ts';

test('an export that timed out closes its connection: the next one connects again and reaches the collector', async () => {
  const sink = await startGrpcCollector();
  // In front of the collector: while `hold`, connections are accepted and never answered (bytes not read).
  let hold = true;
  const held: Socket[] = [];
  const relays: Socket[] = [];
  const front = createServer((socket) => {
    socket.on('error', () => undefined);
    if (hold) {
      held.push(socket);
      return;
    }
    const back = createConnection(sink.port, '127.0.0.1');
    back.on('error', () => undefined);
    relays.push(socket, back);
    socket.pipe(back).pipe(socket);
  });
  await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
  const exporter = new OtlpGrpcTraceExporter(`http://127.0.0.1:${(front.address() as AddressInfo).port}`, {}, 300);
  const send = (): Promise<ExportOutcome> => new Promise((resolve) => exporter.export(Buffer.alloc(0), resolve));
  try {
    const first = await send();
    assert.equal(first.code, 1);
    assert.match(String(first.error?.message), /timed out/);
    assert.equal(held.length, 1);
    hold = false;
    const second = await send();
    assert.equal(second.code, 0, `second export: ${String(second.error?.message)}`);
  } finally {
    await exporter.shutdown();
    for (const s of [...held, ...relays]) s.destroy();
    await new Promise((resolve) => front.close(resolve));
    await sink.close();
  }
});

test('a grpc-message that is not valid percent-encoding is reported, not thrown out of the trailers handler', async () => {
  const sink = await startGrpcCollector({ 'grpc-status': '14', 'grpc-message': 'overloaded 100%' });
  const exporter = new OtlpGrpcTraceExporter(sink.url, {}, 2000);
  const uncaught: Error[] = [];
  const onUncaught = (err: Error): void => void uncaught.push(err);
  process.on('uncaughtException', onUncaught);
  try {
    const outcome = await new Promise<ExportOutcome>((resolve) => exporter.export(Buffer.alloc(0), resolve));
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual(uncaught, []);
    assert.equal(outcome.code, 1);
    assert.equal(outcome.errorType, 'UNAVAILABLE');
    assert.match(String(outcome.error?.message), /overloaded 100%/);
  } finally {
    process.off('uncaughtException', onUncaught);
    await exporter.shutdown();
    await sink.close();
  }
});
