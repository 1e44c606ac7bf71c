// node:http's 'clientError' on a bind (a request llhttp could not parse, a header deadline, a TLS failure): the broken
// request answered in turn, after the answers before it, and the connection closed.
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** Set once a connection's parse error has been handled (node:http may report the same broken stream again). */
const kFailed = Symbol('failed');
/** `_httpMessage`: node:http's response being written on the connection; the queued ones get it in turn. */
export type ClientSocket = Socket & { _httpMessage?: ServerResponse | null; [kFailed]?: true };

function errorStatus(err: NodeJS.ErrnoException): [status: number, reason: string] {
  return err.code === 'HPE_HEADER_OVERFLOW' ? [431, 'Request Header Fields Too Large'] : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? [408, 'Request Timeout'] : [400, 'Bad Request'];
}

function errorResponse(err: NodeJS.ErrnoException): string {
  const [status, reason] = errorStatus(err);
  const message = status === 408 ? 'the request headers were not received in time' : `malformed HTTP request: ${err.code ?? err.message}`;
  const body = JSON.stringify({ error: { type: status === 408 ? 'request_timeout' : 'bad_request', message } });
  return `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`;
}

/**
 * node:http 'clientError': answer the broken request and close. A request pipelined behind ones still being
 * answered waits for them: their answers (the upstream executed them) go first, in order.
 */
export function onClientError(err: NodeJS.ErrnoException, socket: ClientSocket, refused: (status: number) => void): void {
  if (socket[kFailed]) return;
  socket[kFailed] = true;
  // The client is gone (reset, or closed in the middle of a request body): there is no one to answer. Closing the
  // socket now closes the in-flight response, which aborts its upstream request (waiting for that response would
  // keep the upstream connection, and a drain, open forever).
  if (err.code === 'ECONNRESET' || err.code === 'HPE_INVALID_EOF_STATE') return void socket.destroy();
  // node:https hands TLS failures (handshake deadline, bad handshake, renegotiation) here too: there is no HTTP
  // exchange to answer, and the closing answer below would keep a half-open TLS socket up to 5 s more.
  if (isTlsFailure(err)) return void socket.destroy();
  // Nothing after the broken request can be parsed: stop reading while earlier answers are written.
  socket.pause();
  afterPendingResponses(socket, () => {
    // Closing the connection also aborts a request whose body was cut short (it is still in flight).
    if (!socket.writable || socket.destroyed) return void socket.destroy();
    // The broken request was answered already (refused on its head, and llhttp then failed on its body): one
    // request, one answer. A second would be read as the answer to the client's next request. Close once the first
    // is written; one still being streamed is cut (the request it answers is broken).
    const res = socket._httpMessage;
    if (res && res.headersSent && !res.req.complete) {
      if (!res.writableEnded) return void socket.destroy();
      if (res.writableFinished) return closeAfterAnswer(socket);
      res.once('finish', () => closeAfterAnswer(socket));
      res.once('close', () => void (res.writableFinished || socket.destroy()));
      return;
    }
    // Counted with the bind's requests (no route): a flood of malformed requests shows in /metrics.
    refused(errorStatus(err)[0]);
    closeAfterAnswer(socket, errorResponse(err));
  });
}

/** A TLS-level error of a client connection (node:tls `ERR_TLS_*`, OpenSSL `ERR_SSL_*`), not an HTTP one. */
function isTlsFailure(err: NodeJS.ErrnoException): boolean {
  return typeof err.code === 'string' && (err.code.startsWith('ERR_TLS_') || err.code.startsWith('ERR_SSL_'));
}

/** End the connection after `last` (if any), still reading until the client closes, for at most 5 s. */
function closeAfterAnswer(socket: ClientSocket, last?: string): void {
  if (!socket.writable || socket.destroyed) return void socket.destroy();
  // Read again (and drop) until the client closes: a socket paused after `end()` would never see its FIN and
  // stay open, counting against `maxConnectionsPerBind`.
  socket.resume();
  if (last === undefined) socket.end();
  else socket.end(last);
  // A client that never closes its side does not keep the connection (and a slot of the cap) for ever.
  socket.setTimeout(5_000, () => socket.destroy());
}

/**
 * Run `then` once every response of the connection whose request was read whole has been written. When one
 * finishes, node:http hands the connection to the next queued response before that one's 'close'; no per-request
 * bookkeeping is needed. A request not read whole is the broken one (a body cut short): `then` runs at once.
 */
function afterPendingResponses(socket: ClientSocket, then: () => void): void {
  const current = socket._httpMessage;
  if (!current || current.writableFinished || !current.req.complete) return then();
  current.once('close', () => (current.writableFinished ? afterPendingResponses(socket, then) : socket.destroy()));
}
