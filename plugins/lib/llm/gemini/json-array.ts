// Gemini's `streamGenerateContent` without `alt=sse` (ADR 0153): Google then streams a JSON array, one
// `GenerateContentResponse` element at a time. The gateway asks the provider for SSE whatever the client asked (usage
// is read, guards and translations work on events), and gives such a client the array it asked for.
import { Transform } from 'node:stream';
import type { TransformCallback } from 'node:stream';
import { parseSseEvents, pipeWithTeardown, replyHeader, SseParser } from 'switchyard/sdk';
import type { Reply } from 'switchyard/sdk';
import { MAX_LLM_EVENT } from '../stream.ts';

/** True when a Gemini client's query asks for server-sent events (`alt=sse`); else it reads a JSON array. */
export function asksForSse(query: string): boolean {
  return new URLSearchParams(query).get('alt') === 'sse';
}

/** Google separates the elements with a comma and a line break; the array's text ends with `]`. */
const SEPARATOR = ',\r\n';

/** Each event's `data` as the next element of a JSON array, written as it comes. */
class SseToJsonArray extends Transform {
  private started = false;
  private readonly parser = new SseParser({ onEvent: (e) => this.element(e.data), maxEventSize: MAX_LLM_EVENT });

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    try {
      this.parser.push(chunk);
    } catch (err) {
      return callback(err as Error);
    }
    callback();
  }

  override _flush(callback: TransformCallback): void {
    try {
      this.parser.end();
    } catch (err) {
      return callback(err as Error);
    }
    callback(null, this.started ? '\n]' : '[]');
  }

  private element(data: string): void {
    this.push(`${this.started ? SEPARATOR : '['}${data}`);
    this.started = true;
  }
}

/** An event-stream answer (streamed, or held whole by the stream guard) as Google's JSON array; others as they are. */
export function asJsonArray(reply: Reply): Reply {
  if (reply.status >= 400 || !String(replyHeader(reply, 'content-type') ?? '').toLowerCase().includes('text/event-stream')) return reply;
  const body = reply.body;
  if (body === null || body === undefined || typeof body === 'string' || body instanceof Uint8Array) {
    const elements = parseSseEvents(body ?? '', { maxEventSize: MAX_LLM_EVENT }).map((e) => e.data);
    reply.body = `[${elements.join(SEPARATOR)}${elements.length > 0 ? '\n' : ''}]`;
  } else reply.body = pipeWithTeardown(body, new SseToJsonArray());
  const h = reply.headers;
  delete h['content-length'];
  delete h['transfer-encoding'];
  h['content-type'] = 'application/json; charset=UTF-8';
  return reply;
}
