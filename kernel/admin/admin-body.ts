import type { IncomingMessage } from 'node:http';
import { BodyTooLargeError, readCapped } from '../sdk/streams.ts';

/** Largest request body an admin endpoint reads (a pasted config, a plugin endpoint's JSON). */
export const ADMIN_BODY_LIMIT = 1024 * 1024;

/**
 * The body of a request to an admin endpoint, at most ADMIN_BODY_LIMIT bytes; a BodyTooLargeError (413) beyond.
 * A declared `content-length` over the cap is refused before a byte is read, and the request is left alone: Node
 * discards the rest once the 413 is written, where `readCapped` destroys the request, and with it the socket, so the
 * client saw a reset instead of the answer. A chunked body that passes the cap still ends its connection.
 */
export function readAdminBody(req: IncomingMessage): Promise<Buffer> {
  if (Number(req.headers['content-length'] ?? 0) > ADMIN_BODY_LIMIT) return Promise.reject(new BodyTooLargeError(ADMIN_BODY_LIMIT));
  return readCapped(req, ADMIN_BODY_LIMIT);
}
