// The MCP backend's SSE responses are written through the SDK's bounded SseWriter: a client that stops reading is
// cut once more than 8 MiB wait unread, instead of the gateway buffering without end (docs/security.md).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SseStream } from './sse-stream.ts';

describe('SseStream', () => {
  it('frames JSON-RPC messages, ids and priming events as before', async () => {
    const s = new SseStream();
    s.prime('p1');
    s.sendData('{"a":1}', 'e1');
    s.send({ jsonrpc: '2.0', method: 'x' });
    s.end();
    const chunks: string[] = [];
    for await (const c of s.body) chunks.push(String(c));
    assert.equal(chunks.join(''), 'id: p1\ndata: \n\nevent: message\nid: e1\ndata: {"a":1}\n\nevent: message\ndata: {"jsonrpc":"2.0","method":"x"}\n\n');
  });

  it('cuts a client that does not read once more than 8 MiB wait, and reports the close', async () => {
    const s = new SseStream();
    let closed = false;
    s.onClose = () => (closed = true);
    const mib = 'x'.repeat(1024 * 1024);
    let sent = 0;
    while (s.sendData(JSON.stringify(mib)) && sent < 20) sent++;
    assert.ok(sent >= 7 && sent <= 9, `sent ${sent} MiB before the cut`);
    await new Promise((r) => setImmediate(r));
    assert.equal(s.open, false);
    assert.equal(closed, true);
  });
});
