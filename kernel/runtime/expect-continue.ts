import type { Readable } from 'node:stream';

/** The response side continueWhenRead needs: node:http's ServerResponse or node:http2's compatibility one. */
interface Continuable {
  readonly headersSent: boolean;
  readonly writableEnded: boolean;
  writeContinue(): void;
}

/**
 * node:http's and node:http2's 'checkContinue': `Expect: 100-continue` is answered when the body is first wanted, not
 * on arrival (node's default). A request answered without its body (a 401, 403 or 429 of a policy, a redirect, a
 * direct response) gets its final answer alone: node:http closes the connection after it, node:http2 ends the
 * stream. The client never sends the body it would have been invited to (RFC 9110 10.1.1; the reference does the
 * same). ADR 0185.
 */
export function continueWhenRead(req: Readable, res: Continuable): void {
  const read = req._read;
  let asked = false;
  // Every reader of the body (a pipe, 'data', read()) asks the stream for bytes through _read.
  req._read = function (this: Readable, size: number): void {
    if (!asked) {
      asked = true;
      // After the final answer's head (node:http dumps an unread body once it is sent) no 100 may follow it.
      if (!res.headersSent && !res.writableEnded) res.writeContinue();
      req._read = read;
    }
    read.call(this, size);
  };
}
