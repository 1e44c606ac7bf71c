// A provider streaming its answer in 1-byte chunk frames to a client that does not read (ADR 0153): the gateway
// holds the stream's small chunks joined, not a Buffer per byte in the body and a write per byte to the client
// (one such stream held 11.8 MiB of heap; a stream of ordinary chunks is back-pressured at some 100 KiB). In process,
// so the gateway's heap is this one.
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { startGateway } from '../helpers/gateway.ts';
import type { RunningGateway } from '../helpers/gateway.ts';
import { freePort } from '../helpers/ports.ts';
import { heldByUnreadAnswer, startEndlessUpstream } from '../helpers/byte-chunk-upstream.ts';
import type { EndlessUpstream } from '../helpers/byte-chunk-upstream.ts';

let provider: EndlessUpstream;
let gw: RunningGateway;
let port: number;

before(async () => {
  // Newlines, each a chunk frame: to the SSE reader beside the stream, blank lines without an event.
  provider = await startEndlessUpstream('text/event-stream', '1\r\n\n\r\n');
  port = await freePort();
  gw = await startGateway({
    binds: [{ port, listeners: [{ routes: [{ name: 'oa', backends: [{ ai: { name: 'oa', provider: { openAI: {} }, hostOverride: provider.host } }] }] }] }],
  });
});
after(async () => {
  await gw?.stop();
  await provider?.close();
});

it('a stream the client does not read holds its 1-byte chunks joined', async () => {
  const body = JSON.stringify({ model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'hi' }] });
  // The client reads no more than the head: the stream backs up to the provider.
  const held = await heldByUnreadAnswer(port, `POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nAuthorization: Bearer sk-test\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
  assert.ok(held < 4 * 1024 * 1024, `${(held / 1024 / 1024).toFixed(1)} MiB held by one stream the client does not read`);
});
