// HTTP/2 with prior knowledge on cleartext binds (h2c, ADR 0158). A client that opens with the HTTP/2 connection
// preface (RFC 9113 3.4) reaches node:http's parser on both cleartext server sides: node:http alone, or the lean side,
// whose parser never accepts `PRI` and hands such a connection to node:http as it hands off anything it does not know
// (ADR 0088). llhttp recognises the preface, stops after it and reports `HPE_PAUSED_H2_UPGRADE` to the bind's
// 'clientError' handler, which today would answer 400. There the connection is taken from node:http and given to
// the bind's HTTP/2 sessions. Nothing runs per HTTP/1.1 request or connection: the check sits on the error path.
import type { Socket } from 'node:net';

/** llhttp's error for a message that was the HTTP/2 preface. */
export const H2_PREFACE_ERROR = 'HPE_PAUSED_H2_UPGRADE';

/** RFC 9113 3.4: the client connection preface, which the session must read first. */
const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

/** node:http's parser of a connection (node's `_http_common` HTTPParser), what is called here. */
interface NodeParser {
  _consumed?: boolean;
  socket: unknown;
  incoming: unknown;
  unconsume(): void;
  remove(): void;
  close(): void;
}

type NodeSocket = Socket & { parser?: NodeParser | null; _httpMessage?: unknown };

/**
 * node:http's listeners on a connection it serves (`connectionListenerInternal`), by their names: its data, end,
 * close and drain handlers are bound per connection and are found only so. Node's own upgrade path removes the same.
 */
const NODE_LISTENERS = new Set(['bound socketOnData', 'bound socketOnEnd', 'bound socketOnClose', 'bound socketOnDrain', 'socketOnTimeout', 'socketOnError', 'onSocketResume', 'onSocketPause']);
const EVENTS = ['data', 'end', 'close', 'drain', 'timeout', 'error', 'resume', 'pause'] as const;

/**
 * Take a connection whose client sent the HTTP/2 preface from node:http (`err` its 'clientError'), with the bytes read
 * past the preface put back in front of the socket's stream for the HTTP/2 session to read first. False when the
 * preface is not the connection's first message (an answer was written or is in flight: the client spoke HTTP/1.1
 * first, and the 400 stands) or node's error does not say where it stopped.
 */
export function takeH2cConnection(err: NodeJS.ErrnoException & { rawPacket?: unknown; bytesParsed?: unknown }, socket: Socket): boolean {
  const s = socket as NodeSocket;
  const packet = err.rawPacket;
  const parsed = err.bytesParsed;
  if (s.bytesWritten > 0 || s._httpMessage || !Buffer.isBuffer(packet) || typeof parsed !== 'number' || parsed > packet.length) return false;
  for (const event of EVENTS) for (const listener of s.listeners(event)) if (NODE_LISTENERS.has((listener as () => void).name)) s.off(event, listener as () => void);
  const parser = s.parser;
  if (parser) {
    // As node's upgrade path frees it (`unconsume`, `freeParser`): the socket's reads come back to its stream, the
    // parser leaves the server's connection list (its header deadline), and is closed once its call stack unwinds.
    if (parser._consumed) parser.unconsume();
    parser._consumed = false;
    parser.remove();
    parser.socket = null;
    parser.incoming = null;
    s.parser = null;
    setImmediate(() => parser.close());
  }
  // node:http's connections are half-open (its 'end' handler, gone now, closed them); a node:http2 server's are not:
  // the client's FIN closes ours, as it closes a TLS h2 connection.
  s.allowHalfOpen = false;
  // Paused: the session reads what is buffered (`socket.read()`) on its next tick; a flowing stream without 'data'
  // listeners would drop it.
  s.pause();
  s.unshift(Buffer.concat([PREFACE, packet.subarray(parsed)]));
  return true;
}
