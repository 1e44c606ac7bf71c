// `probeDiscover` reads a target's `server/discover` answer with the SDK's SSE parser (issue 10 item 3: one parser),
// so every line ending the event-stream format allows works, not only LF and CRLF.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { probeDiscover } from './upstream-2026-07-28.ts';

const RESULT = { supportedVersions: ['2025-11-25', '2026-07-28'], capabilities: { tools: {} }, instructions: 'hi' };

describe('probeDiscover', () => {
  let server: Server;
  let url: URL;
  /** The SSE body the target answers with, given the request's JSON-RPC id; `endless` streams comments until cut. */
  let answer: (id: string) => string;
  let endless = false;
  let cut: Promise<number> | undefined;

  before(async () => {
    server = createServer((req, res) => {
      let raw = '';
      req.setEncoding('utf8');
      req.on('data', (s: string) => (raw += s));
      req.on('end', () => {
        const { id } = JSON.parse(raw) as { id: string };
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        if (!endless) return res.end(answer(id));
        // 64 KiB of comments at a time until the client goes; resolves with the bytes written by then.
        let sent = 0;
        cut = new Promise((resolve) => res.on('close', () => resolve(sent)));
        const chunk = `: ${'x'.repeat(64 * 1024 - 3)}\n`;
        const pump = (): void => {
          while (!res.destroyed && res.write(chunk)) sent += chunk.length;
          if (!res.destroyed) res.once('drain', pump);
        };
        pump();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`);
  });
  after(async () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
  });

  const event = (id: string, eol: string): string =>
    [': a comment', 'event: message', `data: ${JSON.stringify({ jsonrpc: '2.0', id, result: RESULT })}`, '', ''].join(eol);

  for (const [name, eol] of [['LF', '\n'], ['CRLF', '\r\n'], ['CR', '\r']] as const) {
    it(`finds the answer in an event-stream whose lines end with ${name}`, async () => {
      answer = (id) => `data: {"jsonrpc":"2.0","method":"notifications/message"}${eol}${eol}${event(id, eol)}`;
      const outcome = await probeDiscover(url, fetch, undefined);
      assert.equal(outcome.kind, '2026-07-28');
      assert.deepEqual(outcome.kind === '2026-07-28' && outcome.discovery.supportedVersions, RESULT.supportedVersions);
    });
  }

  it('reads a data field split over several lines as one message', async () => {
    answer = (id) => `data: {"jsonrpc":"2.0",\ndata: "id":${JSON.stringify(id)},\ndata: "result":${JSON.stringify(RESULT)}}\n\n`;
    assert.equal((await probeDiscover(url, fetch, undefined)).kind, '2026-07-28');
  });

  it('is legacy when no event answers', async () => {
    answer = () => 'data: not json\n\n';
    assert.equal((await probeDiscover(url, fetch, undefined)).kind, 'legacy');
  });

  it('reads an endless answer no further than 1 MiB: legacy at once, the connection closed', async () => {
    endless = true;
    try {
      const started = performance.now();
      assert.equal((await probeDiscover(url, fetch, undefined)).kind, 'legacy');
      assert.ok(performance.now() - started < 5_000, 'not left to the 15 s probe timeout');
      const sent = await cut!;
      assert.ok(sent < 8 * 1024 * 1024, `the target wrote ${sent} bytes before the gateway left`);
    } finally {
      endless = false;
    }
  });
});
