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
 * close, drain, timeout, resume and pause handlers are bound per connection and are found only so. Node's own upgrade
 * path removes the same. Its error handler is a no-op by the time 'clientError' runs; taken too where it is not.
 */
const NODE_LISTENERS: readonly (readonly [event: string, name: string, required: boolean])[] = [
  ['data', 'bound socketOnData', true],
  ['end', 'bound socketOnEnd', true],
  ['close', 'bound socketOnClose', true],
  ['drain', 'bound socketOnDrain', true],
  ['timeout', 'socketOnTimeout', true],
  ['resume', 'onSocketResume', true],
  ['pause', 'onSocketPause', true],
  ['error', 'socketOnError', false],
];

/**
 * node:http's listeners on `s`, each found exactly once (at most once where not required); undefined when node names
 * them otherwise: left attached, socketOnData would feed a freed parser, so nothing is taken and the 400 stands.
 */
function nodeListeners(s: Socket): [string, (...args: unknown[]) => void][] | undefined {
  const found: [string, (...args: unknown[]) => void][] = [];
  for (const [event, name, required] of NODE_LISTENERS) {
    const matched = s.listeners(event).filter((l) => l.name === name);
    if (matched.length > 1 || (required && matched.length === 0)) return undefined;
    if (matched[0] !== undefined) found.push([event, matched[0] as (...args: unknown[]) => void]);
  }
  return found;
}

/**
 * Take a connection whose client sent the HTTP/2 preface from node:http (`err` its 'clientError'), with the bytes read
 * past the preface put back in front of the socket's stream for the HTTP/2 session to read first. False when the
 * preface is not the connection's first message (an answer was written or is in flight: the client spoke HTTP/1.1
 * first, and the 400 stands), node's error does not say where it stopped, or node's listeners are not found by name.
 */
export function takeH2cConnection(err: NodeJS.ErrnoException & { rawPacket?: unknown; bytesParsed?: unknown }, socket: Socket): boolean {
  const s = socket as NodeSocket;
  const packet = err.rawPacket;
  const parsed = err.bytesParsed;
  if (s.bytesWritten > 0 || s._httpMessage || !Buffer.isBuffer(packet) || typeof parsed !== 'number' || parsed > packet.length) return false;
  const listeners = nodeListeners(s);
  if (listeners === undefined) return false;
  for (const [event, listener] of listeners) s.off(event, listener);
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
