// PostResponder: an answer that comes before the SSE response started goes out whole (one string body, the same
// events: priming, ids, event log); a longer call starts its stream after POST_COMMIT_DELAY_MS, or at its first
// related message.
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { describe, it } from 'node:test';
import type { Logger, Reply } from 'switchyard/sdk';
import { EventLog } from './event-log.ts';
import { POST_COMMIT_DELAY_MS, PostResponder } from './responder.ts';

const logger: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => logger, isEnabled: () => false };
const answer = { jsonrpc: '2.0' as const, id: 1, result: { ok: true } };

function responder(log: EventLog): PostResponder {
  return new PostResponder(true, 1, false, { 'mcp-session-id': 's' }, () => undefined, { open: () => log.post(), prime: true });
}

async function bodyText(reply: Reply): Promise<string> {
  if (typeof reply.body === 'string') return reply.body;
  let out = '';
  for await (const chunk of reply.body as Readable) out += String(chunk);
  return out;
}

describe('mcp PostResponder', () => {
  it('sends an answer that came before the stream started as one body, with its priming event and ids', async () => {
    const log = new EventLog(logger);
    const r = responder(log);
    r.commit();
    r.final(answer);
    const reply = await r.reply;
    assert.equal(typeof reply.body, 'string', 'one body, not a stream');
    assert.equal(reply.headers['content-type'], 'text/event-stream');
    assert.equal(reply.headers['mcp-session-id'], 's');
    const id = `${log.tag}.p1`;
    assert.equal(reply.body, `id: ${id}_1\ndata: \n\nevent: message\nid: ${id}_2\ndata: ${JSON.stringify(answer)}\n\n`);
    // Kept in the event log like any other: a client can still replay it with Last-Event-ID.
    const found = log.find(`${id}_1`)!;
    assert.deepEqual(log.after(found.stream, found.seq).map((e) => e.data), [JSON.stringify(answer)]);
  });

  it(`starts the stream ${POST_COMMIT_DELAY_MS} ms after the request went upstream when the answer has not come`, async () => {
    const log = new EventLog(logger);
    const r = responder(log);
    const t0 = Date.now();
    r.commit();
    const reply = await r.reply;
    assert.ok(Date.now() - t0 >= POST_COMMIT_DELAY_MS - 5);
    assert.ok(reply.body instanceof Readable);
    r.final(answer);
    const text = await bodyText(reply);
    assert.match(text, /^id: [0-9a-f]{8}\.p1_1\ndata: \n\nevent: message\nid: [0-9a-f]{8}\.p1_2\ndata: \{"jsonrpc"/);
  });

  it('starts the stream at once for a related message (progress), then the answer ends it', async () => {
    const log = new EventLog(logger);
    const r = responder(log);
    r.commit();
    r.related({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 't', progress: 1 } });
    const reply = await r.reply;
    assert.ok(reply.body instanceof Readable);
    r.final(answer);
    const events = (await bodyText(reply)).split('\n\n').filter(Boolean);
    assert.equal(events.length, 3, 'priming, progress, answer');
    assert.match(events[1]!, /notifications\/progress/);
  });

  it('answers JSON for a gateway-made error that comes before the stream, and 202 when the call is abandoned', async () => {
    const failed = responder(new EventLog(logger));
    failed.commit();
    failed.final({ jsonrpc: '2.0', id: 1, error: { code: -32602, message: 'Unknown tool: x' } }, 400);
    const reply = await failed.reply;
    assert.equal(reply.status, 400);
    assert.equal(reply.headers['content-type'], 'application/json');

    const abandoned = responder(new EventLog(logger));
    abandoned.commit();
    abandoned.abandon();
    assert.equal((await abandoned.reply).status, 202);
  });
});
