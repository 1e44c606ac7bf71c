import { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { BodyTooLargeError, RawHeadersReply } from '../sdk/index.ts';
import { ChunkList } from '../sdk/chunk-list.ts';
import type { HeaderMap } from '../sdk/index.ts';
import { headerNameToString, parseHeaders } from './undici-core.ts';
import type { AbortHook } from '../exchange/abort-hook.ts';
import { AnswerHandler } from './answer-handler.ts';
import type { RawHeaders } from './direct-forward.ts';
import type { H1Handler } from './h1-connection.ts';
import { kBodyTrailers } from './trailers.ts';
import type { TrailerBody, UpstreamTrailers } from './trailers.ts';

/** An upstream answer read whole: `body` is the bytes, or (rarely) a stream that fails as the body did. */
export interface WholeResponse {
  readonly statusCode: number;
  /**
   * The raw `[name, value, ...]` list (undici's Buffers, the lean client's latin1 strings): made an object only if
   * something reads the reply's `headers`.
   */
  readonly rawHeaders: RawHeaders;
  readonly body: Buffer | Readable;
  /** `performance.now()` when the answer's headers arrived: the attempt's span and duration end there, as with `request()`. */
  readonly answeredAt: number;
  /** The upstream's trailers of an answer read whole (a streamed body carries its own, `kBodyTrailers`). */
  readonly trailers?: UpstreamTrailers | null;
}

/**
 * An undici dispatch handler that collects the upstream's status, raw headers and body chunks and settles one promise
 * when the answer ended (ADR 0058): no `BodyReadable`, no `RequestHandler`, no second promise to read the body, which
 * `request()` plus a capped read cost per answer. It speaks the handler API undici's core calls (`onConnect`,
 * `onHeaders`, ...) as `DirectForward` does: the controller API would have undici wrap it per request and make the
 * header object (`parseHeaders`) that the reply writer would flatten again; the lean client of cleartext HTTP/1.1
 * origins calls the same (ADR 0084), its `onEnd` handing the last bytes of a Content-Length body. It rejects as `request()`
 * does when the request fails before the answer starts; once the answer started, a failure (the body over `limit`:
 * `BodyTooLargeError`; the upstream breaking off; an abort) resolves with a stream that fails with that error, so
 * the caller sees it where it read the body before.
 */
export class WholeAnswer extends AnswerHandler<WholeResponse> implements Dispatcher.DispatchHandler, H1Handler {
  private readonly limit: number;
  private statusCode = 0;
  private rawHeaders: RawHeaders | null = null;
  private answeredAt = 0;
  private first: Buffer | undefined = undefined;
  /** Small chunks joined as they come: an answer in 1-byte chunks is not a Buffer per byte (ADR 0153). */
  private rest: ChunkList | undefined = undefined;
  private size = 0;
  private tooLarge = false;

  constructor(limit: number, state: { readonly aborted?: unknown; abortHook(): AbortHook } | null, onStarted?: () => void) {
    super(state, onStarted);
    this.limit = limit;
  }

  onHeaders(statusCode: number, rawHeaders: RawHeaders): boolean {
    if (statusCode < 200) return true; // 1xx informational answers are not relayed (as with `request()`)
    this.statusCode = statusCode;
    this.rawHeaders = rawHeaders;
    this.answeredAt = performance.now();
    this.onStarted?.();
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.tooLarge) return true;
    this.size += chunk.length;
    if (this.size > this.limit) {
      this.tooLarge = true;
      this.first = this.rest = undefined;
      this.abortRequest?.(new BodyTooLargeError(this.limit));
      return true;
    }
    if (this.first === undefined) this.first = chunk;
    else (this.rest ??= new ChunkList()).add(chunk);
    return true;
  }

  onComplete(trailers?: UpstreamTrailers | null): void {
    if (this.ended) return;
    this.done();
    const rest = this.rest;
    const body = rest === undefined ? (this.first ?? EMPTY) : Buffer.concat([this.first!, ...rest.list()], this.size);
    // Kept for an HTTP/2 client (ADR 0158): gRPC's status travels in them.
    this.resolve({ statusCode: this.statusCode, rawHeaders: this.rawHeaders!, body, answeredAt: this.answeredAt, trailers });
  }

  /**
   * The lean client's last body bytes (`onData` and `onComplete` in one). The call is settled by then, so a body over
   * the limit is failed here rather than by the abort `onData` asks for.
   */
  onEnd(last: Buffer): void {
    this.onData(last);
    if (this.tooLarge) this.onError(new BodyTooLargeError(this.limit));
    else this.onComplete();
  }

  onError(err: Error): void {
    if (this.ended) return;
    this.done();
    if (this.rawHeaders === null) return this.reject(this.beforeAnswer(err));
    // The answer had started: the body fails where it is read, as a streamed body would have.
    const failure = this.tooLarge ? new BodyTooLargeError(this.limit) : err;
    // Fails when first read, so whoever reads it has its listeners on by then.
    const failed = new Readable({
      read() {
        this.destroy(failure);
      },
    });
    this.resolve({ statusCode: this.statusCode, rawHeaders: this.rawHeaders, body: failed, answeredAt: this.answeredAt });
  }
}

const EMPTY = Buffer.alloc(0);

/**
 * An upstream's answer (read whole or streamed raw) as a `Reply`: its header object made from the raw list only when
 * read. A list of strings is the lean client's, checked by its parser: the reply writer writes it without node:http
 * checking it again. Its trailers are the answer's, also once a plugin has read a streamed body whole and set the
 * bytes as the body (ADR 0158).
 */
export class WholeReply extends RawHeadersReply implements TrailerBody {
  // Not the whole answer: its bytes (up to the whole-body limit) would outlive a body a plugin replaced.
  private readonly trailers: UpstreamTrailers | null | undefined;
  private readonly stream: TrailerBody | undefined;

  constructor(answer: WholeResponse) {
    super(answer.statusCode, answer.rawHeaders, answer.body);
    this.trailers = answer.trailers;
    this.stream = Buffer.isBuffer(answer.body) ? undefined : (answer.body as TrailerBody);
  }

  /** The trailers of an answer read whole, or those of its stream once it ended (undefined before). */
  get [kBodyTrailers](): UpstreamTrailers | null | undefined {
    return this.trailers ?? this.stream?.[kBodyTrailers];
  }

  protected nameOf(name: Buffer | string): string {
    return headerNameToString(name);
  }

  protected parse(raw: readonly (Buffer | string)[]): HeaderMap {
    return parseHeaders(raw);
  }
}
