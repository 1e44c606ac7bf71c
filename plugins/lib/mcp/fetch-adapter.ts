import type { Readable } from 'node:stream';
import { BodyTooLargeError, discardBody } from 'switchyard/sdk';
import type { AttemptHook, HeaderMap, UpstreamTarget } from 'switchyard/sdk';
import { McpDeadlineError, isUpstreamTimeout } from './deadlines.ts';
import type { McpDeadlines } from './deadlines.ts';
import { MAX_TARGET_MESSAGE, MAX_TARGET_MESSAGE_BYTES } from './upstream-contract.ts';

type FetchInput = string | URL | { url: string };

/** Statuses whose responses carry no body (the Response constructor refuses one). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

function headerObject(init: RequestInit | undefined): HeaderMap {
  const out: HeaderMap = {};
  const h = init?.headers;
  if (!h) return out;
  if (h instanceof Headers) h.forEach((v, k) => (out[k] = v));
  else if (Array.isArray(h)) for (const [k, v] of h) out[k!.toLowerCase()] = v;
  else for (const [k, v] of Object.entries(h)) if (v !== undefined) out[k.toLowerCase()] = v as string;
  return out;
}

async function bodyOf(body: RequestInit['body']): Promise<string | Uint8Array | null> {
  if (body === undefined || body === null) return null;
  if (typeof body === 'string' || body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  return new Uint8Array(await new Response(body).arrayBuffer());
}

/**
 * The most the MCP SDK may read of one answer through this fetch (it reads answers with `text()`/`json()` and event
 * streams with a parser that buffers a line, and an event's `data:` lines, without bound): a JSON answer or error body,
 * or one event-stream event (from one blank line to the next), of at most MAX_TARGET_MESSAGE_BYTES, the bound of
 * every transport. Past it the body fails with a `BodyTooLargeError` and the upstream connection is closed.
 */
const MAX_ANSWER_BYTES = MAX_TARGET_MESSAGE_BYTES;

/** How {@link toWeb} bounds a body: its whole length, or (an event stream, open for hours) the bytes of one event. */
type BodyCap = { readonly total: number } | { readonly event: number };

/**
 * Blank lines end an event: a line end (LF, CRLF or CR) followed by another. `\n\r` is one whether a `\n` follows
 * (CRLF) or not (CR), a byte early in the first case: no matter for a bound.
 */
const EVENT_ENDS = ['\n\n', '\n\r', '\r\r'].map((s) => Buffer.from(s, 'latin1'));

/** Where the bytes after the last event end in `chunk` start (-1: none), `tail` the previous chunk's last bytes. */
function afterLastEventEnd(chunk: Buffer, tail: Buffer): number {
  let at = -1;
  for (const end of EVENT_ENDS) {
    const i = chunk.lastIndexOf(end);
    if (i !== -1) at = Math.max(at, i + end.length);
  }
  if (at !== -1 || tail.length === 0) return at;
  // An end split between the chunks: only the first bytes of this chunk can finish it.
  const seam = Buffer.concat([tail, chunk.subarray(0, 1)]);
  for (const end of EVENT_ENDS) {
    const i = seam.lastIndexOf(end);
    if (i !== -1 && i + end.length > tail.length) at = Math.max(at, i + end.length - tail.length);
  }
  return at;
}

/**
 * A web stream over a Node body. `Readable.toWeb` throws (uncaught, from a 'data' listener) when the consumer cancels
 * while an undici body still has data buffered; this one stops reading instead.
 */
function toWeb(body: Readable, cap: BodyCap): ReadableStream<Uint8Array> {
  let done = false;
  /** Bytes counted against the cap: all of them, or those since the last event's end. */
  let run = 0;
  let tail = Buffer.alloc(0);
  /**
   * Chunks of the current tick, handed on joined once it ends (ADR 0153): one socket read of 1-byte chunk frames is
   * thousands of chunks, and `text()`/`json()` keep a view per chunk enqueued, some 100 bytes of heap per byte.
   */
  let batch: Buffer[] = [];
  const flush = (controller: ReadableStreamDefaultController<Uint8Array>): void => {
    if (done || batch.length === 0) return;
    const joined = batch.length === 1 ? batch[0]! : Buffer.concat(batch);
    batch = [];
    try {
      controller.enqueue(new Uint8Array(joined.buffer, joined.byteOffset, joined.byteLength));
      if ((controller.desiredSize ?? 1) <= 0) body.pause();
    } catch {
      done = true;
      body.destroy();
    }
  };
  return new ReadableStream<Uint8Array>({
    start(controller) {
      body.on('data', (chunk: Buffer) => {
        if (done) return;
        let over: number | undefined;
        if ('total' in cap) {
          run += chunk.length;
          if (run > cap.total) over = cap.total;
        } else {
          const from = afterLastEventEnd(chunk, tail);
          run = from === -1 ? run + chunk.length : chunk.length - from;
          tail = Buffer.from(chunk.subarray(Math.max(0, chunk.length - 1)));
          if (run > cap.event) over = cap.event;
        }
        if (over !== undefined) {
          done = true;
          controller.error(new BodyTooLargeError(over, 'total' in cap ? `the MCP target's answer is larger than ${MAX_TARGET_MESSAGE}` : `the MCP target's event stream sent an event longer than ${MAX_TARGET_MESSAGE}`));
          body.destroy();
          return;
        }
        if (batch.push(chunk) === 1) queueMicrotask(() => flush(controller));
      });
      body.once('end', () => {
        flush(controller);
        if (done) return;
        done = true;
        controller.close();
      });
      body.once('error', (err) => {
        if (done) return;
        done = true;
        controller.error(err);
      });
      body.once('close', () => {
        if (done) return;
        done = true;
        controller.error(new Error('the upstream connection closed'));
      });
    },
    pull() {
      body.resume();
    },
    cancel() {
      done = true;
      body.destroy();
    },
  }, { highWaterMark: 16 * 1024, size: (chunk) => chunk.byteLength });
}

/**
 * A WHATWG `fetch` over one gateway upstream pool, so the MCP SDK's client transports reuse the kernel's pooled,
 * TLS-configured connections (`backendTLS` of the target applies). Requests to another origin (an SSE server whose
 * `endpoint` points elsewhere) fall back to the global `fetch`. `onAttempt` (backendAuth) runs on each request to
 * the target. `deadlines` (ADR 0019 for MCP targets): the response-start one on every request, the idle one on
 * answers to POSTs only: GET streams (the standalone stream, a legacy SSE connection) may stay quiet for hours.
 */
export function fetchOverTarget(target: UpstreamTarget, onAttempt?: AttemptHook, deadlines?: McpDeadlines): typeof fetch {
  return (async (input: FetchInput, init?: RequestInit): Promise<Response> => {
    const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
    if (url.origin !== new URL(target.origin).origin) return fetch(input as string, init);
    const method = init?.method ?? 'GET';
    let upstream;
    try {
      upstream = await target.request({
        method,
        path: url.pathname + url.search,
        headers: headerObject(init),
        body: await bodyOf(init?.body),
        signal: init?.signal ?? undefined,
        onAttempt,
        headersTimeoutMs: deadlines?.responseMs,
        idleTimeoutMs: method === 'GET' ? 0 : deadlines?.idleMs,
      });
    } catch (err) {
      if (deadlines && deadlines.responseMs > 0 && !init?.signal?.aborted && isUpstreamTimeout(err)) {
        throw new McpDeadlineError('response', deadlines.responseMs, deadlines.responseSource);
      }
      throw err;
    }
    const headers = new Headers();
    for (const [k, v] of Object.entries(upstream.headers)) {
      if (v === undefined) continue;
      if (Array.isArray(v)) for (const one of v) headers.append(k, one);
      else headers.set(k, String(v));
    }
    if (NULL_BODY.has(upstream.status)) {
      discardBody(upstream.body);
      return new Response(null, { status: upstream.status, headers });
    }
    const eventStream = /^\s*text\/event-stream/i.test(String(upstream.headers['content-type'] ?? ''));
    return new Response(toWeb(upstream.body, eventStream ? { event: MAX_ANSWER_BYTES } : { total: MAX_ANSWER_BYTES }), { status: upstream.status, headers });
  }) as typeof fetch;
}
