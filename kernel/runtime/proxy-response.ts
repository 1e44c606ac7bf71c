import type { ServerResponse as NodeServerResponse } from 'node:http';
import { HOP_BY_HOP } from '../upstream/hop-by-hop.ts';
import { headerNameToString } from '../upstream/undici-core.ts';

// Not `import ... from 'node:http'`: an ES import builds http's namespace, which reads its lazy WebSocket getters and so
// loads Node's bundled undici (about 13 MiB and 25 ms at start, docs/perf.md "Startup").
const { ServerResponse, OutgoingMessage, STATUS_CODES } = process.getBuiltinModule('node:http');

/** node:http's own header list of a response (`setHeader`), to know when the fast path must step aside. */
const kOutHeaders: symbol | undefined = Object.getOwnPropertySymbols(new OutgoingMessage()).find((s) => s.description === 'kOutHeaders');

/** `HTTP/1.1 <status> <reason>\r\n` by status, made on first use. */
const statusLines: string[] = [];

/** The node:http internals `writeHead` sets before `_storeHeader` (lib/_http_server.js, Node 24). */
interface Outgoing {
  _header: string | null;
  _hasBody: boolean;
  _contentLength: number | null;
  useChunkedEncodingByDefault: boolean;
  _expect_continue: boolean;
  _sent100: boolean;
  _storeHeader(firstLine: string, headers: string[] | null): void;
}

/** What `checkedHeadLines` made of an answer's head; one object, reused: read it before the next call. */
export interface CheckedHead {
  /** The status line and the header lines to write (no blank line after them). */
  lines: string;
  reason: string;
  /** The answer has its own Date (node:http adds one only without it). */
  dated: boolean;
  /** The answer's Content-Length, when framed by default (it is among `lines`). */
  length: string | undefined;
  /** Lines `_storeHeader` must be shown (it decides with them): Content-Length when not framed by default, Expect. */
  noted: string[] | null;
}

const checkedHead: CheckedHead = { lines: '', reason: '', dated: false, length: undefined, noted: null };

/**
 * The status line and header lines of an answer's raw `[name, value, ...]` list from the lean client (names as it
 * received them, checked by its parser), as `writeHead(status, flatRawHeaders(raw))` would write them: hop-by-hop
 * ones left out, names lower-cased, the upstream's order kept. Null when its `Connection` names other headers (that
 * list is the general path's). `framed`: the response frames a body by default (an HTTP/1.1 client). The one head
 * builder of ProxyResponse and the lean answer (ADR 0082, 0093).
 */
export function checkedHeadLines(status: number, raw: readonly string[], framed: boolean): CheckedHead | null {
  const reason = STATUS_CODES[status] ?? 'unknown';
  let head = (statusLines[status] ??= `HTTP/1.1 ${status} ${reason}\r\n`);
  let dated = false;
  let length: string | undefined = undefined;
  let noted: string[] | null = null;
  for (let i = 0; i < raw.length; i += 2) {
    const name = headerNameToString(raw[i]!);
    const value = raw[i + 1]!;
    if (HOP_BY_HOP.has(name)) {
      // `Connection: close, x-foo` makes x-foo hop-by-hop too: that list is the general path's.
      if (name === 'connection' && value !== 'keep-alive' && value !== 'close' && value !== 'Keep-Alive') return null;
      continue;
    }
    if (name === 'date') dated = true;
    else if (name === 'content-length' && framed) length = value;
    else if (name === 'content-length' || name === 'expect') {
      (noted ??= []).push(name, value);
      continue;
    }
    head += name + ': ' + value + '\r\n';
  }
  const out = checkedHead;
  out.lines = head;
  out.reason = reason;
  out.dated = dated;
  out.length = length;
  out.noted = noted;
  return out;
}

/**
 * The bind servers' `ServerResponse` (node:http's `ServerResponse` option; ADR 0082): one method more, which writes
 * an upstream answer's head that the lean client's parser has already checked (names are tokens, values field
 * characters, the status three digits: the rules node:http's `validateHeaderName`/`validateHeaderValue` apply).
 * `writeHead(status, list)` checks every name and value again and concatenates and lower-cases each name in
 * `matchHeader` (`processHeader`: 10% of the plain route's allocation, docs/perf.md "Plain route server side,
 * session 10"). Everything else is node:http's: the status line as `writeHead` makes it, and `_storeHeader` decides
 * keep-alive, `Connection`/`Keep-Alive`, chunked or length framing, HEAD and 204/304, told what `matchHeader` would
 * have noted of the lines it is not shown (below); `proxy-response.test.ts` holds it to `writeHead`'s head and state.
 */
export class ProxyResponse extends ServerResponse {
  /**
   * `writeHead(status, flatRawHeaders(raw))` for an answer's raw `[name, value, ...]` list from the lean client (names as
   * it received them, hop-by-hop ones and those a `Connection` header names left out, names lower-cased). False when
   * this path does not apply and nothing was written: headers or a reason phrase were already set on the response, or the answer's
   * `Connection` names other headers (the caller then takes the general path).
   */
  writeCheckedHead(status: number, raw: readonly string[]): boolean {
    const self = this as unknown as Outgoing;
    // A reason phrase set before is `writeHead`'s to check.
    if (self._header !== null || this.statusMessage || kOutHeaders === undefined || (this as unknown as Record<symbol, unknown>)[kOutHeaders] != null) return false;
    // With a body framed by default (an HTTP/1.1 client), a Content-Length only stops `_storeHeader` from choosing a
    // framing; for an HTTP/1.0 client it also decides keep-alive, so there node:http is shown the header.
    const checked = checkedHeadLines(status, raw, self.useChunkedEncodingByDefault);
    if (checked === null) return false;
    const { lines: head, reason, dated, length, noted } = checked;
    this.statusCode = status;
    this.statusMessage = reason;
    if (status === 204 || status === 304 || status < 200) self._hasBody = false;
    // As `writeHead`: a client that expects 100 Continue but got a final status may put extra bytes on the wire.
    if (self._expect_continue && !self._sent100) this.shouldKeepAlive = false;
    // node:http adds a Date only when the head has none.
    if (dated) this.sendDate = false;
    if (length === undefined) {
      self._storeHeader(head, noted);
      return true;
    }
    // The head has its Content-Length: `_storeHeader` must not add a framing header. It picks one only for a response
    // with a body (`_hasBody`, read nowhere else in it), so it is told there is none while it runs.
    self._contentLength = +length;
    const hasBody = self._hasBody;
    self._hasBody = false;
    try {
      self._storeHeader(head, noted);
    } finally {
      self._hasBody = hasBody;
    }
    return true;
  }
}

/** A bind server's response: node:http's, made by the `ServerResponse` option as a `ProxyResponse`. */
export function isProxyResponse(res: NodeServerResponse): res is ProxyResponse {
  return res instanceof ProxyResponse;
}
