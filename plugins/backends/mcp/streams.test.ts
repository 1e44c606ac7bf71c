// The queue of target messages for a client with no stream open yet: bounded by count and by bytes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Logger } from 'switchyard/sdk';
import type { RpcMessage } from './jsonrpc.ts';
import type { SseStream } from './sse-stream.ts';
import { ClientStreams, QUEUE_MAX_BYTES } from './streams.ts';

function streams(): { client: ClientStreams; warnings: string[] } {
  const warnings: string[] = [];
  const logger = { warn: (msg: string) => warnings.push(msg), info: () => undefined, debug: () => undefined, error: () => undefined } as unknown as Logger;
  return { client: new ClientStreams(false, logger, () => false, () => undefined), warnings };
}

/** A GET stream that records what it is sent. */
function getStream(): { stream: SseStream; sent: RpcMessage[] } {
  const sent: RpcMessage[] = [];
  const stream = { open: true, send: (m: RpcMessage) => void sent.push(m), flushHeaders: () => undefined, startKeepAlive: () => undefined, end: () => undefined } as unknown as SseStream;
  return { stream, sent };
}

const note = (n: number, bytes: number): RpcMessage => ({ jsonrpc: '2.0', method: 'notifications/message', params: { n, data: 'x'.repeat(bytes) } }) as unknown as RpcMessage;

test('queued messages are kept up to QUEUE_MAX_BYTES, the oldest dropped first; one larger than that is not kept', () => {
  const { client, warnings } = streams();
  const big = 300 * 1024;
  for (let n = 0; n < 10; n++) client.unrelated(note(n, big));
  client.unrelated(note(99, QUEUE_MAX_BYTES + 1));
  const { stream, sent } = getStream();
  assert.equal(client.openGet(stream), true);
  const numbers = sent.map((m) => (m as unknown as { params: { n: number } }).params.n);
  assert.deepEqual(numbers, [7, 8, 9], 'the newest that fit in 1 MiB, in order');
  assert.ok(sent.reduce((sum, m) => sum + JSON.stringify(m).length, 0) <= QUEUE_MAX_BYTES);
  assert.equal(warnings.length, 1, 'warned once');
});

test('small messages are still kept up to 256, the oldest dropped first', () => {
  const { client } = streams();
  for (let n = 0; n < 300; n++) client.unrelated(note(n, 10));
  const { stream, sent } = getStream();
  client.openGet(stream);
  assert.equal(sent.length, 256);
  assert.equal((sent[0] as unknown as { params: { n: number } }).params.n, 44);
});
