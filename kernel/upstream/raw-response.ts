import type { Duplex } from 'node:stream';

// Not `import ... from 'node:http'`: an ES import builds http's namespace, which reads its lazy WebSocket getters and so
// loads Node's bundled undici (about 13 MiB and 25 ms at start, docs/perf.md "Startup").
const { STATUS_CODES } = process.getBuiltinModule('node:http');

/** Write a complete HTTP/1.1 response on a raw socket and close it (for upgrade requests that are refused). */
export function writeRawResponse(
  socket: Duplex,
  status: number,
  headers: Record<string, string | string[] | number | undefined>,
  body: string | Uint8Array = '',
): void {
  if (socket.destroyed) return;
  const payload = typeof body === 'string' ? Buffer.from(body) : body;
  let head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n`;
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || name === 'content-length' || name === 'connection') continue;
    for (const v of Array.isArray(value) ? value : [value]) head += `${name}: ${v}\r\n`;
  }
  head += `content-length: ${payload.length}\r\nconnection: close\r\n\r\n`;
  socket.write(Buffer.concat([Buffer.from(head), payload]));
  closeAfterWrite(socket);
}

/**
 * End `socket` and destroy it once what was written is flushed, as node:http's `destroySoon` closes a connection after
 * its last answer. Ended only, a socket of a server that allows half-open connections (node:http's) stays open for
 * as long as the client keeps its side open, with no timeout (ADR 0166).
 */
export function closeAfterWrite(socket: Duplex): void {
  socket.end();
  if (socket.writableFinished) socket.destroy();
  else socket.once('finish', () => socket.destroy());
}
