// The SDK stream readers on an upstream answer in 1-byte chunks (ADR 0153). Here rather than beside
// kernel/sdk/streams.ts: the public SDK's files import only their own and node: builtins (import-boundaries test).
import assert from 'node:assert/strict';
import { request } from 'node:http';
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { readCapped, readUpTo, tapCapped } from '../../kernel/sdk/streams.ts';
import { BYTE_CHUNKS, heldMessage, startByteChunkUpstream } from '../helpers/byte-chunk-upstream.ts';

describe('readers of an upstream answer in 1-byte chunks (ADR 0153)', () => {
  // Kept as it came, each byte was a Buffer of its own (some 200 bytes of heap): 512 KiB held 105 MiB. The answer as
  // node:http's client gives it: how plugins fetch JWKS, OpenAPI documents, guard and MCP target answers.
  it('readCapped, readUpTo and tapCapped hold it joined while it is read', async () => {
    const upstream = await startByteChunkUpstream();
    const get = (): Promise<IncomingMessage> =>
      new Promise((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port: upstream.port, path: '/', agent: false }, resolve);
        req.on('error', reject);
        req.end();
      });
    const readers: Record<string, (res: Readable) => Promise<Buffer | undefined>> = {
      readCapped: (res) => readCapped(res, 1024 * 1024),
      readUpTo: async (res) => (await readUpTo(res, 1024 * 1024)) as Buffer,
      tapCapped: (res) => new Promise((resolve) => void tapCapped(res, 1024 * 1024, resolve).resume()),
    };
    try {
      for (const [name, reader] of Object.entries(readers)) {
        const { held, result } = await upstream.heldFor(async () => reader(await get()));
        assert.equal(result?.length, BYTE_CHUNKS, name);
        assert.ok(result.every((b) => b === 0x78), name);
        assert.ok(held < 24 * 1024 * 1024, heldMessage(name, held));
      }
    } finally {
      await upstream.close();
    }
  });
});
