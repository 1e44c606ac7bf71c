// Header fields of an HTTP/2 upstream's answer (ADR 0158). node:http2 refuses an answer of more than 128 fields (its
// `maxHeaderListPairs` default; the stream is reset and the client gets a 502), where an HTTP/1.1 answer is bounded
// only by its 16 KiB head (undici's `maxHeaderSize`, h1-parser.ts) and node:http counts up to 2,000. undici's h2
// client takes no session options, so node:http2's `connect` is given the gateway's default for the field count,
// once, when the first pool that may speak h2 is made. Only undici's calls are changed: they hand over the socket
// (`createConnection`); anyone else's connect (grpc-js, a plugin's client) keeps node's defaults, and a call that
// sets its own count keeps it.
import type { ClientSessionOptions } from 'node:http2';

/** Header fields an h2 answer may carry: node:http's count (`maxHeadersCount`), as on the listener side (ADR 0141). */
export const MAX_ANSWER_HEADER_PAIRS = 2_000;

let installed = false;

/** Give node:http2 client sessions made over a given socket from now on the field count above, unless set. */
export function boundH2Answers(): void {
  if (installed) return;
  installed = true;
  const http2 = process.getBuiltinModule('node:http2');
  const connect = http2.connect;
  http2.connect = function (this: unknown, ...args: unknown[]) {
    const options = args[1] as (ClientSessionOptions & { createConnection?: unknown }) | undefined;
    if (typeof options === 'object' && options !== null && typeof options.createConnection === 'function' && options.maxHeaderListPairs === undefined) {
      args[1] = { ...options, maxHeaderListPairs: MAX_ANSWER_HEADER_PAIRS };
    }
    return Reflect.apply(connect, this, args);
  } as typeof connect;
}
