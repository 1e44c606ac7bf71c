import type { IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import type { RequestHead } from './request-head.ts';

/**
 * A request the lean server side read whole (head and body, ADR 0088), standing in for node:http's `IncomingMessage`
 * as `Exchange.req` and as the `req` of its `ServerResponse`. It carries what the kernel reads of a request (method,
 * url, headers, rawHeaders, httpVersion, socket, complete) and nothing of a stream: it serves only routes whose
 * policies all promise not to read `ex.req` as a stream (`CompiledRoute.leanSafe`, their `requestStream: false`; no
 * tracing), and the body is already the exchange's (`ex.body`, a kernel-only route) or handed over whole when read
 * (`kWholeBody`, body-read.ts). The stream-ish members below are what node:http's `ServerResponse` and the kernel
 * ask of a finished request.
 */
export class LeanRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly rawHeaders: string[];
  readonly httpVersion = '1.1';
  readonly httpVersionMajor = 1;
  readonly httpVersionMinor = 1;
  readonly socket: Socket;
  readonly complete = true;
  readonly readableFlowing = null;
  readonly destroyed = false;
  readonly upgrade = false;
  readonly aborted = false;

  constructor(head: RequestHead, socket: Socket) {
    this.method = head.method;
    this.url = head.url;
    this.headers = head.headers;
    this.rawHeaders = head.rawHeaders;
    this.socket = socket;
  }

  get connection(): Socket {
    return this.socket;
  }

  // A finished request's stream surface: nothing more will come. A policy that promised `requestStream: false` yet
  // listens for the body would wait forever: it hears why instead (ADR 0144).
  on(event?: string | symbol): this {
    if (event === 'data' || event === 'end' || event === 'readable') throw streamRead();
    return this;
  }
  once(event?: string | symbol): this {
    return this.on(event);
  }
  pipe(): never {
    throw streamRead();
  }
  read(): never {
    throw streamRead();
  }
  [Symbol.asyncIterator](): never {
    throw streamRead();
  }
  off(): this {
    return this;
  }
  removeListener(): this {
    return this;
  }
  resume(): this {
    return this;
  }
  destroy(): this {
    return this;
  }
}

/** What a policy that read `ex.req` as a stream on the lean server side hears (its hook's log line names it). */
function streamRead(): Error {
  return new Error(
    'ex.req was read as a stream on a route served by the lean server side, where the gateway has already read the request whole (every policy of the route declared `requestStream: false`): read the body with `ex.bufferBody(limit)`, or leave `requestStream` out',
  );
}
