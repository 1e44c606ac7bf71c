import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { RETRY_BUFFER_LIMIT } from '../exchange/upstream-plan.ts';
import { copyRequestBody } from '../exchange/body-peek.ts';

/** Why a retry of a streamed body is not sent, as the access log's `retry.skipped` says it (after Envoy's stats). */
export type ReplaySkip = 'buffer_limit' | 'request_not_complete';

/**
 * A streamed request body on a route with `retry` (ADR 0152): it goes to the first attempt as it arrives, as Envoy
 * sends it, and a copy of it is taken on the way (`copyRequestBody`, `Exchange.copyBody`'s, ADR 0148) for a
 * retry. The copy is the body once it ended within the 64 KiB replay buffer; a body past it (a declared length, or
 * the copy passing it) or one still arriving when a retry is due is not sent again, unless the attempt never reached
 * the upstream: then the rest is let in (`arrive`, ADR 0156).
 */
export class ReplayCopy {
  private readonly req: IncomingMessage;
  /** The whole body once it ended within the buffer, or why there is none. */
  private body: Buffer | ReplaySkip = 'buffer_limit';
  private settled = false;
  /** Set once the attempts are over: the copy stops at its next chunk, nothing is held for no retry. */
  private over = false;
  /** While `arrive` waits: told of each chunk copied, and of the copy settling. */
  private progress: (() => void) | undefined = undefined;
  private whenSettled: (() => void) | undefined = undefined;

  constructor(req: IncomingMessage, headers: IncomingHttpHeaders) {
    this.req = req;
    // A declared length here is past the buffer (a smaller one was read whole before, `readsFirst`).
    if (headers['content-length'] !== undefined) {
      this.settled = true;
      return;
    }
    const take = (): boolean => {
      this.progress?.();
      return !this.over;
    };
    void copyRequestBody(req, RETRY_BUFFER_LIMIT, take).then((body) => {
      this.settled = true;
      // No copy of a stream cut short (the attempt's failure destroyed it, the client left) is no body to replay,
      // whatever its length; one still readable was past the buffer.
      if (this.over) this.body = 'request_not_complete';
      else this.body = body ?? (req.destroyed && !req.complete ? 'request_not_complete' : 'buffer_limit');
      this.whenSettled?.();
    });
  }

  /** The body to send again, or why there is none. */
  replay(): Buffer | ReplaySkip {
    return this.settled ? this.body : 'request_not_complete';
  }

  /**
   * After an attempt that took nothing to the upstream (it never connected), the body's reader is gone: the rest of
   * the body is let in and copied as it comes, until it ended (`replay` then has it), passed the buffer, the client
   * left or `signal` aborted (the route's deadline). True when the client sent nothing for `idleMs` (0: no limit),
   * the stream idle deadline an upload has while it streams upstream.
   */
  arrive(idleMs: number, signal: AbortSignal): Promise<boolean> {
    if (this.settled || this.over || signal.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = (stalled: boolean): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', aborted);
        this.progress = this.whenSettled = undefined;
        resolve(stalled);
      };
      const aborted = (): void => done(false);
      const timer = idleMs > 0 ? setTimeout(() => done(true), idleMs) : undefined;
      this.progress = () => timer?.refresh();
      this.whenSettled = () => done(false);
      signal.addEventListener('abort', aborted, { once: true });
      // Nobody reads the stream now: it flows, each byte going through the copy on its way.
      this.req.resume();
    });
  }

  /** The copy when it is whole (the pipeline's retry to another backend sends it) or why not; no more copying. */
  end(): Buffer | ReplaySkip {
    const body = this.replay();
    this.over = true;
    return body;
  }
}
