// One HTTP/2 exchange on a node:http2 client session, for tests of the gateway's h2 side.
import type { ClientHttp2Session, IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http2';

export interface H2Result {
  /** The answer's head, `:status` included. */
  readonly headers: IncomingHttpHeaders;
  readonly text: string;
  /** The answer's trailers, if any came. */
  readonly trailers: IncomingHttpHeaders | undefined;
}

/** Send `headers` (and `body`, else the stream ends with them) on `session`: the answer read whole. */
export function h2Exchange(session: ClientHttp2Session, headers: OutgoingHttpHeaders, body?: string | Buffer): Promise<H2Result> {
  return new Promise((resolve, reject) => {
    const stream = session.request(headers, { endStream: body === undefined });
    let head: IncomingHttpHeaders = {};
    let trailers: IncomingHttpHeaders | undefined;
    const chunks: Buffer[] = [];
    stream.on('response', (h) => (head = h));
    stream.on('trailers', (t) => (trailers = t));
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => resolve({ headers: head, text: Buffer.concat(chunks).toString(), trailers }));
    stream.on('error', reject);
    if (body !== undefined) stream.end(body);
  });
}
