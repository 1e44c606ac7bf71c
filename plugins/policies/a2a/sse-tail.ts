import { SseParser } from 'switchyard/sdk';

/** Longest event kept; a longer one is skipped, never buffered without bound. */
const MAX_EVENT = 1024 * 1024;

/**
 * Longest event kept as text until the stream ends. A longer one (an artifact with a file in it) is summarised as
 * it arrives and only its summary kept, so a long-lived stream holds kilobytes, not the megabytes of its last event.
 */
const KEEP_TEXT = 64 * 1024;

/** An event kept for the end: its text until summarised, then its summary. */
interface Kept<T> {
  text: string | undefined;
  summary: T | undefined;
}

/**
 * Follows a `text/event-stream` as it passes and keeps only the last event and the last event that mentions a task
 * `state`, so the outcome of a stream is known at its end without reading every event: `summarise` (a JSON parse)
 * runs on those two when asked, and on an event over 64 KiB as it arrives.
 */
export class SseTail<T> {
  private lastKept: Kept<T> | undefined = undefined;
  private stateKept: Kept<T> | undefined = undefined;
  private readonly parser = new SseParser({
    onEvent: ({ data }) => {
      const kept: Kept<T> = data.length > KEEP_TEXT ? { text: undefined, summary: this.summarise(data) } : { text: data, summary: undefined };
      this.lastKept = kept;
      if (data.includes('"state"')) this.stateKept = kept;
    },
    maxEventSize: MAX_EVENT,
    onOverflow: 'skip',
  });

  private readonly summarise: (data: string) => T | undefined;

  constructor(summarise: (data: string) => T | undefined) {
    this.summarise = summarise;
  }

  push(chunk: Buffer): void {
    this.parser.push(chunk);
  }

  /** The stream ended: a last event not closed by a blank line still counts. */
  end(): void {
    this.parser.end();
  }

  /** The summary of the last complete event. */
  last(): T | undefined {
    return this.read(this.lastKept);
  }

  /** The summary of the last complete event whose text contains `"state"` (a task or status update). */
  lastWithState(): T | undefined {
    return this.read(this.stateKept);
  }

  private read(kept: Kept<T> | undefined): T | undefined {
    if (kept === undefined) return undefined;
    if (kept.text !== undefined) {
      kept.summary = this.summarise(kept.text);
      kept.text = undefined;
    }
    return kept.summary;
  }
}
