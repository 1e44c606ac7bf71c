// Spans a collector lost must show in /metrics (the OpenTelemetry SDK's own metrics, otel.sdk.*): without them a
// collector that refuses or fails every export leaves the traces silently missing, the only sign one warn line a
// minute. The collector here is a node:http2 server speaking gRPC's wire that answers every export UNAVAILABLE; the
// OTLP/HTTP case points at a port nothing listens on.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { startGrpcCollector } from '../helpers/grpc-collector.ts';
import type { GrpcCollector } from '../helpers/grpc-collector.ts';
import { scrape, value } from '../helpers/metrics.ts';
import type { parseMetrics } from '../helpers/metrics.ts';

async function tracedGateway(tracing: Record<string, unknown>): Promise<{ gw: RunningGateway; base: string }> {
  const port = await freePort();
  const gw = await startGateway({
    config: { tracing: { randomSampling: true, ...tracing } },
    binds: [{ port, listeners: [{ routes: [{ name: 'ok', policies: { directResponse: { status: 200, body: 'ok' } } }] }] }],
  });
  return { gw, base: `http://127.0.0.1:${port}` };
}

/** Scrape until `check` accepts (exports leave a second after their first span), or fail after `ms`. */
async function until(gw: RunningGateway, check: (m: ReturnType<typeof parseMetrics>) => boolean, ms = 15_000): Promise<ReturnType<typeof parseMetrics>> {
  const end = Date.now() + ms;
  for (;;) {
    const m = await scrape(gw);
    if (check(m)) return m;
    if (Date.now() > end) assert.fail(`metrics never matched:\n${JSON.stringify(m.samples.filter((s) => s.name.startsWith('otel_')))}`);
    await sleep(200);
  }
}

describe('tracing: export outcomes in /metrics', () => {
  let collector: GrpcCollector;
  before(async () => {
    collector = await startGrpcCollector({ 'grpc-status': '14', 'grpc-message': 'overloaded' });
  });
  after(() => collector.close());

  it('OTLP/gRPC: spans the collector refused count under their gRPC status name; the queue is empty after', async () => {
    const { gw, base } = await tracedGateway({ otlpEndpoint: collector.url });
    try {
      for (let i = 0; i < 3; i++) assert.equal((await fetch(`${base}/x${i}`)).status, 200);
      const m = await until(gw, (m) => value(m, 'otel_sdk_exporter_span_exported_total', { error_type: 'UNAVAILABLE' }) === 3);
      assert.equal(m.types.get('otel_sdk_exporter_span_exported_total'), 'counter');
      assert.equal(m.types.get('otel_sdk_processor_span_processed_total'), 'counter');
      assert.equal(value(m, 'otel_sdk_processor_span_processed_total', { error_type: '' }), 3);
      assert.equal(value(m, 'otel_sdk_exporter_span_exported_total', { error_type: '' }), undefined);
      assert.equal(m.types.get('otel_sdk_processor_span_queue_size'), 'gauge');
      assert.equal(value(m, 'otel_sdk_processor_span_queue_size'), 0);
    } finally {
      await gw.stop();
    }
  });

  for (const otlpProtocol of ['http', 'grpc']) {
    it(`OTLP/${otlpProtocol} to a port nothing listens on: the spans count under the socket error`, async () => {
      const { gw, base } = await tracedGateway({ otlpEndpoint: `http://127.0.0.1:${await freePort()}`, otlpProtocol });
      try {
        assert.equal((await fetch(`${base}/y`)).status, 200);
        await until(gw, (m) => value(m, 'otel_sdk_exporter_span_exported_total', { error_type: 'ECONNREFUSED' }) === 1);
      } finally {
        await gw.stop();
      }
    });
  }
});
