import { SseParser } from 'switchyard/sdk';

/** Longest event kept; a longer one is skipped, never buffered without bound. */
const MAX_EVENT = 1024 * 1024;

/**
 * Follows a `text/event-stream` as it passes and keeps only the `data` of the last event and of the last event
 * that mentions a task `state`, so the outcome of a stream is known at its end without parsing every event.
 */
export class SseTail {
  /** Data of the last complete event. */
  last: string | undefined = undefined;
  /** Data of the last complete event whose text contains `"state"` (a task or status update). */
  lastWithState: string | undefined = undefined;
  private readonly parser = new SseParser({
    onEvent: ({ data }) => {
      this.last = data;
      if (data.includes('"state"')) this.lastWithState = data;
    },
    maxEventSize: MAX_EVENT,
    onOverflow: 'skip',
  });

  push(chunk: Buffer): void {
    this.parser.push(chunk);
  }

  /** The stream ended: a last event not closed by a blank line still counts. */
  end(): void {
    this.parser.end();
  }
}
