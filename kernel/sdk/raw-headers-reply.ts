import type { Readable } from 'node:stream';
import type { HeaderMap, Reply } from './reply.ts';

/**
 * An upstream's answer as a `Reply` whose header object is made only when something reads `headers` (a response
 * hook, a backend that edits them): until then it holds the raw `[name, value, ...]` list the HTTP client gave, and the
 * reply writer sends that list as the plain route does, without an object made and walked again (docs/perf.md "The
 * ai row, session 8"). `replyHeader` reads one name from either. The kernel's upstream code makes these; how a raw
 * name becomes a lower-case string and the list an object is the HTTP client's (`nameOf`, `parse`).
 */
export abstract class RawHeadersReply implements Reply {
  status: number;
  body?: Readable | Uint8Array | string | null;
  readonly local = false;
  private raw: readonly (Buffer | string)[] | null;
  private map: HeaderMap | undefined = undefined;

  constructor(status: number, raw: readonly (Buffer | string)[], body: Readable | Uint8Array | string | null) {
    this.status = status;
    this.raw = raw;
    this.body = body;
  }

  get headers(): HeaderMap {
    if (this.map === undefined) {
      this.map = this.parse(this.raw!);
      this.raw = null;
    }
    return this.map;
  }

  set headers(headers: HeaderMap) {
    this.map = headers;
    this.raw = null;
  }

  /** The raw list while no header object was made (then it is what the reply's headers are), else undefined. */
  get rawHeaders(): readonly (Buffer | string)[] | undefined {
    return this.map === undefined ? this.raw! : undefined;
  }

  /** One header as the object would hold it (a repeated name: its values in order), without making the object. */
  header(name: string): string | string[] | number | undefined {
    if (this.map !== undefined) return this.map[name];
    const raw = this.raw!;
    let found: string | string[] | undefined;
    for (let i = 0; i < raw.length; i += 2) {
      if (this.nameOf(raw[i]!) !== name) continue;
      const v = raw[i + 1]!;
      const value = typeof v === 'string' ? v : v.toString('latin1');
      if (found === undefined) found = value;
      else if (typeof found === 'string') found = [found, value];
      else found.push(value);
    }
    return found;
  }

  /** A raw header name as the lower-case string the header object is keyed by. */
  protected abstract nameOf(name: Buffer | string): string;
  /** The raw list as the header object. */
  protected abstract parse(raw: readonly (Buffer | string)[]): HeaderMap;
}

/** One header of a reply, read without making an upstream reply's header object (`RawHeadersReply`). */
export function replyHeader(reply: Reply, name: string): string | string[] | number | undefined {
  return reply instanceof RawHeadersReply ? reply.header(name) : reply.headers[name];
}
