// A non-streamed ai answer passed through is written from the lean client's checked raw header list without
// node:http checking each header again (ADR 0084, as the plain route's since ADR 0082). The bytes a client gets must
// be what `writeHead` of the flat list wrote: names lower-cased, order and repeats kept, hop-by-hop headers and those a
// `Connection` header names left out, the upstream's Date and Content-Length once, a Content-Length for a chunked
// answer read whole, the gateway's own Connection. An upstream writing exact bytes, read byte for byte.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { rawRequest } from '../e2e/proxy-support.ts';
import { startRawUpstream } from '../helpers/raw-upstream.ts';
import type { RawUpstream } from '../helpers/raw-upstream.ts';
import { startAiGateway } from './harness.ts';
import type { AiGateway } from './harness.ts';

const DATE = 'Wed, 01 Jan 2025 00:00:00 GMT';
const ANSWER = JSON.stringify({ id: 'c1', object: 'chat.completion', model: 'gpt-x', choices: [], usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 } });
const ERROR = JSON.stringify({ error: { message: 'slow down', type: 'rate_limit' } });
const CHAT = JSON.stringify({ model: 'gpt-x', messages: [{ role: 'user', content: 'hi' }] });

/** The upstream's answer by the path's first segment, byte for byte. */
function answer(path: string): string {
  switch (path.split('/')[1]) {
    case 'cookies':
      return `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nSet-Cookie: a=1; Path=/\r\nX-Multi: one\r\nset-cookie: b=2\r\nX-MULTI: two\r\nDate: ${DATE}\r\nContent-Length: ${ANSWER.length}\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\n\r\n${ANSWER}`;
    case 'chunked':
      return `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${ANSWER.length.toString(16)}\r\n${ANSWER}\r\n0\r\n\r\n`;
    case 'listed':
      return `HTTP/1.1 200 OK\r\nConnection: keep-alive, X-Secret\r\nX-Secret: s\r\nX-Kept: k\r\nContent-Type: application/json\r\nContent-Length: ${ANSWER.length}\r\n\r\n${ANSWER}`;
    case 'limited':
      return `HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nRetry-After: 7\r\nContent-Length: ${ERROR.length}\r\n\r\n${ERROR}`;
    default:
      return 'HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n';
  }
}

describe('a non-streamed ai answer passed through: the head a client gets', () => {
  let gw: AiGateway;
  let upstream: RawUpstream;

  before(async () => {
    upstream = await startRawUpstream((_method, path) => answer(path));
    const route = (name: string): Record<string, unknown> => ({
      name,
      matches: [{ path: { pathPrefix: `/${name}` } }],
      // The upstream answers by the path's first segment: keep it.
      backends: [{ ai: { name, provider: { openAI: {} }, hostOverride: `127.0.0.1:${upstream.port}`, pathOverride: `/${name}/v1/chat/completions` } }],
    });
    gw = await startAiGateway(['cookies', 'chunked', 'listed', 'limited'].map(route));
  });
  after(async () => {
    await gw?.stop();
    await upstream?.close();
  });

  const post = (name: string): ReturnType<typeof rawRequest> =>
    rawRequest(gw.port, `POST /${name}/v1/chat/completions HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: ${CHAT.length}\r\nConnection: close`, CHAT);

  it('names lower-cased, repeats in their order, the upstream Date and Content-Length once, the gateway Connection', async () => {
    const res = await post('cookies');
    assert.equal(res.status, 200);
    assert.deepEqual(res.headers, [
      ['content-type', 'application/json'],
      ['set-cookie', 'a=1; Path=/'],
      ['x-multi', 'one'],
      ['set-cookie', 'b=2'],
      ['x-multi', 'two'],
      ['date', DATE],
      ['content-length', String(ANSWER.length)],
      ['connection', 'close'],
    ]);
    assert.equal(res.body.toString(), ANSWER);
  });

  it('a chunked answer read whole goes out with a Content-Length and a Date of the gateway', async () => {
    const res = await post('chunked');
    assert.equal(res.status, 200);
    assert.deepEqual(
      res.headers.filter(([n]) => n !== 'date'),
      [
        ['content-type', 'application/json'],
        ['content-length', String(ANSWER.length)],
        ['connection', 'close'],
      ],
    );
    assert.equal(res.headers.filter(([n]) => n === 'date').length, 1);
    assert.equal(res.body.toString(), ANSWER);
  });

  it('a header the upstream Connection names is left out', async () => {
    const res = await post('listed');
    assert.equal(res.status, 200);
    assert.deepEqual(
      res.headers.filter(([n]) => n !== 'date'),
      [
        ['x-kept', 'k'],
        ['content-type', 'application/json'],
        ['content-length', String(ANSWER.length)],
        ['connection', 'close'],
      ],
    );
    assert.equal(res.body.toString(), ANSWER);
  });

  it('an upstream error in the client API family passes with its status and headers', async () => {
    const res = await post('limited');
    assert.equal(res.status, 429);
    assert.deepEqual(
      res.headers.filter(([n]) => n !== 'date'),
      [
        ['content-type', 'application/json'],
        ['retry-after', '7'],
        ['content-length', String(ERROR.length)],
        ['connection', 'close'],
      ],
    );
    assert.equal(res.body.toString(), ERROR);
  });
});
