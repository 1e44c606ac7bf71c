// An upstream answering in 1-byte chunk frames to a client that stopped reading, on routes that forward through the
// kernel's `forward()` rather than the direct forward: a route with `retry`, one with a per-attempt `timeout`
// (ADR 0156). undici's `request()` kept a Buffer per chunk up to its body's high-water mark and the client's response
// a write per chunk: 12.8 MiB for one answer (ADR 0153). In process, so the gateway's heap is this one.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { oneListenerConfig, startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { heldByUnreadAnswer, startEndlessUpstream } from '../helpers/byte-chunk-upstream.ts';
import type { EndlessUpstream } from '../helpers/byte-chunk-upstream.ts';

describe('a streamed answer in 1-byte chunks to a client that stopped reading (ADR 0156)', () => {
  let upstream: EndlessUpstream;
  let gw: RunningGateway;
  let port: number;

  before(async () => {
    // Each byte a chunk frame of its own, written as fast as the gateway reads them, for as long as it does.
    upstream = await startEndlessUpstream('application/octet-stream', '1\r\nx\r\n');
    const host = upstream.host;
    port = await freePort();
    gw = await startGateway(oneListenerConfig(port, [
      { name: 'retry', matches: [{ path: { pathPrefix: '/retry' } }], policies: { retry: { attempts: 2, codes: [503] } }, backends: [{ host }] },
      { name: 'timeout', matches: [{ path: { pathPrefix: '/timeout' } }], policies: { timeout: { backendRequestTimeout: '30s' } }, backends: [{ host }] },
    ]));
  });
  after(async () => {
    await gw?.stop();
    await upstream?.close();
  });

  for (const path of ['/retry', '/timeout']) {
    it(`${path}: the answer backs up to the upstream with its small chunks joined`, async () => {
      // What the test before let go of is collected first.
      await new Promise((resolve) => setTimeout(resolve, 500));
      const held = await heldByUnreadAnswer(port, `GET ${path} HTTP/1.1\r\nHost: gw\r\n\r\n`);
      assert.ok(held < 4 * 1024 * 1024, `${(held / 1024 / 1024).toFixed(1)} MiB held by one answer the client does not read`);
    });
  }
});
