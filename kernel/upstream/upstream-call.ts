import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { ErrorCode } from '../sdk/index.ts';
import type { UpstreamCallOptions, UpstreamResponse } from '../sdk/index.ts';
import { bodyBytes } from '../sdk/streams.ts';
import { UpstreamFailure, upstreamFailure } from './upstream-errors.ts';
import { parseHeaders } from './undici-core.ts';
import { StreamAnswer } from './stream-answer.ts';
import type { WholeResponse } from './whole-answer.ts';
import type { PooledTarget } from './pooled-target.ts';

/** A body given as a string or bytes, as one Buffer (no copy of bytes); a stream as it is. */
function bodyBuffer(body: UpstreamCallOptions['body']): Buffer | Readable | null {
  if (body === undefined || body === null) return null;
  return typeof body === 'string' || body instanceof Uint8Array ? bodyBytes(body) : body;
}

/**
 * Send the call through the kernel's streamed-answer handler (ADR 0168), as `forward()` does (ADR 0156): small chunks of
 * one tick reach the reader joined and reading stops while it is behind. undici's `request()` kept a Buffer per chunk
 * up to its body's high-water mark and handed each byte of a 1-byte-chunk answer on alone. The signal (the caller's
 * and `timeoutMs`) aborts the call until its answer's body ended, as `request()`'s did.
 */
function dispatch(target: PooledTarget, options: UpstreamCallOptions, path: string, headers: IncomingHttpHeaders, body: Buffer | Readable | null, signal: AbortSignal | undefined): Promise<WholeResponse> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  const handler = new StreamAnswer(null);
  const onAbort = (): void => handler.abort(signal!.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  const opts = { path, method: options.method as Dispatcher.HttpMethod, headers, headersTimeout: options.headersTimeoutMs ?? 0, bodyTimeout: options.idleTimeoutMs ?? 0 };
  // To a cleartext HTTP/1.1 origin through the lean client (ADR 0084) when the body is in memory; undici's pool else.
  if (target.h1 !== null && (body === null || Buffer.isBuffer(body))) target.h1.dispatch({ ...opts, body }, handler);
  else target.pool.dispatch({ ...opts, body }, handler);
  if (signal === undefined) return handler.promise;
  return handler.promise.then(
    (response) => {
      (response.body as Readable).once('close', () => signal.removeEventListener('abort', onAbort));
      return response;
    },
    (err: unknown) => {
      signal.removeEventListener('abort', onAbort);
      throw err;
    },
  );
}

/** `UpstreamTarget.request`: a call a plugin makes itself (its own headers, body, deadlines and signal). */
export async function upstreamCall(target: PooledTarget, options: UpstreamCallOptions): Promise<UpstreamResponse> {
  const headers = { ...(options.headers ?? {}) } as Record<string, string>;
  if (!Object.keys(headers).some((k) => k.toLowerCase() === 'host')) headers.host = target.parsed.authority;
  const body = bodyBuffer(options.body);
  let path = options.path;
  if (options.onAttempt) {
    const view = { method: options.method, path, origin: target.origin, headers, body: Buffer.isBuffer(body) ? body : undefined, attempt: 0, credentialLocation: options.credentialLocation };
    await options.onAttempt(view);
    // A hook may add a query key: it is sent, while the span keeps the path the caller gave.
    path = view.path;
  }
  const tracing = target.traces?.tracing ?? null;
  const span = tracing === null ? undefined : tracing.client(options.method, target.parsed, options.path, headers, options.what === undefined ? undefined : { 'switchyard.upstream.purpose': options.what });
  const signals: AbortSignal[] = [];
  if (options.signal) signals.push(options.signal);
  if (options.timeoutMs) signals.push(AbortSignal.timeout(options.timeoutMs));
  try {
    const signal = signals.length === 0 ? undefined : signals.length === 1 ? signals[0] : AbortSignal.any(signals);
    const response = await dispatch(target, options, path, headers, body, signal);
    if (span !== undefined) tracing!.endClient(span, response.statusCode);
    return { status: response.statusCode, headers: parseHeaders(response.rawHeaders) as IncomingHttpHeaders, body: response.body as Readable };
  } catch (err) {
    if (span !== undefined) tracing!.endClient(span, undefined, err);
    if ((err as Error)?.name === 'TimeoutError') {
      throw new UpstreamFailure(504, 'upstream_timeout', 'upstream timed out', ErrorCode.upstreamTimeout, `upstream ${target.origin} timed out`);
    }
    throw upstreamFailure(err, target.origin);
  }
}
