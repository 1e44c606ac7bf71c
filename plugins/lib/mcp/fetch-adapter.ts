import type { Readable } from 'node:stream';
import type { AttemptHook, HeaderMap, UpstreamTarget } from 'switchyard/sdk';
import { McpDeadlineError, isUpstreamTimeout } from './deadlines.ts';
import type { McpDeadlines } from './deadlines.ts';

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
 * A web stream over a Node body. `Readable.toWeb` throws (uncaught, from a 'data' listener) when the consumer cancels
 * while an undici body still has data buffered; this one stops reading instead.
 */
function toWeb(body: Readable): ReadableStream<Uint8Array> {
  let done = false;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      body.on('data', (chunk: Buffer) => {
        if (done) return;
        try {
          controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
          if ((controller.desiredSize ?? 1) <= 0) body.pause();
        } catch {
          done = true;
          body.destroy();
        }
      });
      body.once('end', () => {
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
      upstream.body.resume();
      return new Response(null, { status: upstream.status, headers });
    }
    return new Response(toWeb(upstream.body), { status: upstream.status, headers });
  }) as typeof fetch;
}
