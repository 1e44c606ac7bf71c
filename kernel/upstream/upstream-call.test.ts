// `UpstreamTarget.request()` (a plugin's own call: MCP targets, mirrors, ext-authz, documents, JWKS, guard webhooks)
// answered in 1-byte chunk frames (ADR 0168): undici's `request()` kept a Buffer per chunk in its body while the reader
// was behind, and handed each byte on as a chunk of its own, which readers that keep an unfinished line or event in
// parts (the SSE parser of MCP target streams) held one part per byte.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { BYTE_CHUNKS, heldMessage, startByteChunkUpstream } from '../../test/helpers/byte-chunk-upstream.ts';
import type { ByteChunkUpstream } from '../../test/helpers/byte-chunk-upstream.ts';
import { SseParser } from '../sdk/index.ts';
import type { UpstreamResponse } from '../sdk/index.ts';
import { H1Pool } from './h1-pool.ts';
import { PooledTarget } from './pooled-target.ts';
import { LazyPool, undiciClient } from './undici-core.ts';

async function readAll(body: Readable): Promise<Buffer[]> {
  const parts: Buffer[] = [];
  for await (const part of body) parts.push(part as Buffer);
  return parts;
}

describe('a plugin call answered in 1-byte chunks', () => {
  let json: ByteChunkUpstream;
  let sse: ByteChunkUpstream;
  const pools: { undici: LazyPool; h1: H1Pool }[] = [];
  /** A target as the kernel makes one for a cleartext origin: undici's pool and the lean client's. */
  const targetOf = (upstream: ByteChunkUpstream): PooledTarget => {
    const undici = new LazyPool(() => new (undiciClient().Pool)(upstream.origin));
    const h1 = new H1Pool('127.0.0.1', upstream.port);
    pools.push({ undici, h1 });
    return new PooledTarget({ origin: upstream.origin }, undici, undefined, undefined, h1);
  };
  before(async () => {
    json = await startByteChunkUpstream();
    sse = await startByteChunkUpstream('text/event-stream');
  });
  after(async () => {
    for (const { undici, h1 } of pools) {
      await undici.created?.destroy();
      await h1.destroy();
    }
    await json.close();
    await sse.close();
  });

  it('not read yet: held joined, every byte in order, in few chunks', async () => {
    const target = targetOf(json);
    const { held, result } = await json.heldFor(() => target.request({ method: 'GET', path: '/' }));
    const parts = await readAll(result.body);
    const body = Buffer.concat(parts);
    assert.equal(body.length, BYTE_CHUNKS);
    assert.ok(body.every((b) => b === 0x78));
    assert.ok(held < 3 * 1024 * 1024, heldMessage('request() not read', held));
    assert.ok(parts.length < 1000, `${parts.length} chunks for 512 KiB`);
  });

  it('an event stream read as it comes (an unfinished event): held bounded', async () => {
    const target = targetOf(sse);
    let events = 0;
    const parser = new SseParser({ onEvent: () => events++, maxEventSize: 32 * 1024 * 1024 });
    const { held } = await sse.heldFor(async () => {
      const res: UpstreamResponse = await target.request({ method: 'GET', path: '/' });
      res.body.on('data', (chunk: Buffer) => parser.push(chunk));
      await new Promise((resolve) => res.body.once('end', resolve));
    });
    assert.equal(events, 0);
    assert.ok(held < 2 * 1024 * 1024, heldMessage('request() read by an SSE parser', held));
  });
});
