import { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { ChunkList, SMALL_CHUNK } from '../sdk/chunk-list.ts';
import { AnswerHandler } from './answer-handler.ts';
import type { RawHeaders } from './direct-forward.ts';
import type { H1Handler } from './h1-connection.ts';
import type { WholeResponse } from './whole-answer.ts';
import { kBodyTrailers } from './trailers.ts';
import type { TrailerBody, UpstreamTrailers } from './trailers.ts';

/**
 * An undici dispatch handler for a streamed answer that keeps the upstream's raw header list (`ForwardOptions.
 * rawHeaders`, docs/perf.md "The ai row's streams, session 9"): it settles one promise when the headers arrive, with
 * the body as a {@link StreamBody} the chunks are pushed into. `request()` made a `RequestHandler`, its
 * `BodyReadable` and the header object (`parseHeaders`) per answer, and the reply writer flattened that object
 * again. Rejects as `request()` does when the request fails before the answer starts; after that a failure (the
 * upstream breaking off, the body deadline, an abort) destroys the body with the error, as `request()`'s body did.
 */
export class StreamAnswer extends AnswerHandler<WholeResponse> implements Dispatcher.DispatchHandler, H1Handler {
  /** undici's resume, from `onHeaders`: called when the body is read again after `push` said stop. */
  resume: (() => void) | null = null;
  private body: StreamBody | null = null;
  /**
   * Small chunks of this tick, pushed joined at its end (a microtask; ADR 0153): one socket read of 1-byte chunk frames
   * is one chunk for the reader, not a Buffer per byte in the body's buffer and a write per byte to the client.
   */
  private held: ChunkList | undefined = undefined;

  onHeaders(statusCode: number, rawHeaders: RawHeaders, resume: () => void): boolean {
    if (statusCode < 200) return true; // 1xx informational answers are not relayed (as with `request()`)
    this.resume = resume;
    const body = new StreamBody(this);
    this.body = body;
    this.onStarted?.();
    this.resolve({ statusCode, rawHeaders, body, answeredAt: performance.now() });
    return true;
  }

  onData(chunk: Buffer): boolean {
    const body = this.body!;
    // False: undici pauses the socket until the body is read again (`_read` calls `resume`).
    if (this.held === undefined && chunk.length >= SMALL_CHUNK) return body.push(chunk);
    if (this.held === undefined) {
      this.held = new ChunkList();
      queueMicrotask(this.pushHeld);
    }
    this.held.add(chunk);
    return body.readableLength + this.held.size < body.readableHighWaterMark;
  }

  private readonly pushHeld = (): void => {
    const held = this.held;
    if (held === undefined) return;
    this.held = undefined;
    for (const part of held.list()) this.body!.push(part);
  };

  onComplete(trailers?: UpstreamTrailers | null): void {
    if (this.ended) return;
    this.done();
    // Read by the reply writer when the body ends, for an HTTP/2 client (ADR 0141).
    if (trailers != null) this.body![kBodyTrailers] = trailers;
    this.pushHeld();
    this.body!.push(null);
  }

  /** The lean client's last body bytes (ADR 0084): `onData` and `onComplete` in one. */
  onEnd(last: Buffer): void {
    this.pushHeld();
    this.body!.push(last);
    this.onComplete();
  }

  onError(err: Error): void {
    if (this.ended) return;
    this.done();
    this.held = undefined;
    if (this.body === null) this.reject(this.beforeAnswer(err));
    else this.body.destroy(err);
  }
}


/** The body of a {@link StreamAnswer}: read by whoever takes the reply; destroyed early, it aborts the request. */
class StreamBody extends Readable implements TrailerBody {
  private readonly answer: StreamAnswer;
  declare [kBodyTrailers]?: UpstreamTrailers | null;

  constructor(answer: StreamAnswer) {
    super();
    this.answer = answer;
  }

  override _read(): void {
    this.answer.resume?.();
  }

  override _destroy(err: Error | null, callback: (error?: Error | null) => void): void {
    // Destroyed before the answer ended (the client left, a reader gave up): the upstream request goes too.
    const abort = this.answer.abortRequest;
    if (abort !== null) abort(err ?? new Error('aborted'));
    callback(err);
  }
}
