import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { ProxyResponse } from './proxy-response.ts';
import { closeAfterWrite, writeRawResponse } from '../upstream/raw-response.ts';
import { jsonErrorReply } from '../sdk/reply.ts';

/**
 * An upgrade request that `shouldUpgrade` declines (h2c, or one with a body: ADR 0092) but that node:http handed to
 * the 'upgrade' event anyway: Node before 22.21 / 24.9 ignores the `shouldUpgradeCallback` option (`engines` allows
 * 22.12). Never relayed as an upgrade. Without a body it is served as a plain request on a response made here, as
 * node:http's `parserOnIncoming` would, and the connection closes after the answer; with a body it is refused (400):
 * node:http has already taken the body's first bytes as the upgraded protocol's, so it cannot be forwarded whole.
 */
export function serveDeclinedUpgrade(req: IncomingMessage, socket: Socket, serve: (res: ServerResponse) => void): void {
  socket.on('error', () => socket.destroy());
  const h = req.headers;
  if ((h['content-length'] !== undefined && h['content-length'] !== '0') || h['transfer-encoding'] !== undefined) {
    const reply = jsonErrorReply(400, 'bad_request', 'an upgrade request with a body is not accepted');
    writeRawResponse(socket, reply.status, reply.headers, reply.body as string);
    return;
  }
  serveOnSocket(req, socket, serve);
}

/**
 * An HTTP/1.1 CONNECT (node:http's 'connect' event): the pipeline refuses it (405, ADR 0166) on a response made here,
 * as for an HTTP/2 client (ADR 0158), and the connection closes after the answer. What follows the head is the
 * tunnel's (node:http reads no more of it), never a request.
 */
export function serveConnect(req: IncomingMessage, socket: Socket, serve: (res: ServerResponse) => void): void {
  socket.on('error', () => socket.destroy());
  serveOnSocket(req, socket, serve);
}

/** `serve` a response made on a socket node:http has let go of (an upgrade's, a CONNECT's); closed once it finished. */
function serveOnSocket(req: IncomingMessage, socket: Socket, serve: (res: ServerResponse) => void): void {
  type Attachable = ProxyResponse & { assignSocket(s: Socket): void; detachSocket(s: Socket): void };
  const res = new ProxyResponse(req) as Attachable;
  res.shouldKeepAlive = false;
  res.assignSocket(socket);
  res.once('finish', () => {
    res.detachSocket(socket);
    closeAfterWrite(socket);
    // node:http's server emits it after 'finish' (its `resOnFinish`); the pipeline logs and counts the request then.
    res.emit('close');
  });
  serve(res);
}

/**
 * Run `serve` once node:http's answers to the requests pipelined before this one (an upgrade's or a CONNECT's, handed
 * over at once by node:http) is written: a response made on the socket earlier would throw
 * `ERR_HTTP_SOCKET_ASSIGNED` out of node's parser (ending the process), and raw bytes would land inside that answer.
 * Nothing runs if the socket closes first (the client left). The socket is paused meanwhile (node:http set it so).
 */
export function afterAnswerInFlight(socket: Socket, serve: () => void): void {
  const inFlight = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
  if (inFlight == null) return serve();
  // node:http's own 'finish' listener (registered first) detaches the answer from the socket before this runs, and
  // gives it the next pipelined request's answer if there is one: that one is waited for too.
  inFlight.once('finish', () => {
    if (!socket.destroyed) afterAnswerInFlight(socket, serve);
  });
}

