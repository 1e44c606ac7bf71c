import type { Logger } from 'switchyard/sdk';
import { EventLog } from './event-log.ts';
import type { RpcMessage } from './jsonrpc.ts';
import type { SseStream } from './sse-stream.ts';

/** Messages kept for a client that has no stream open yet (the GET stream comes after `initialize`). */
const QUEUE_LIMIT = 256;
/**
 * And their bytes as JSON (as the event log's, EVENT_LOG_MAX_BYTES): a target's messages may each be up to its body
 * limit (32 MiB), and 256 of them were held per session for a client that never opens its GET stream.
 */
export const QUEUE_MAX_BYTES = 1024 * 1024;
export const KEEP_ALIVE_MS = 25_000;

/**
 * The streams from one session to its client that belong to no request: the GET stream of streamable HTTP (with
 * its event log when the session is resumable), the one stream of the legacy SSE transport, and the queue of
 * messages waiting for a GET stream to open. POST response streams are the responders' (responder.ts).
 */
export class ClientStreams {
  getStream: SseStream | undefined;
  legacyStream: SseStream | undefined;
  /** Resumable SSE streams (`Last-Event-ID`) of a stateful streamable-HTTP session. */
  readonly events: EventLog | undefined;
  private queue: RpcMessage[] = [];
  /** The JSON size of each queued message, in step with `queue`, and their sum. */
  private queueSizes: number[] = [];
  private queueBytes = 0;
  private queueWarned = false;
  /** The `list_changed` notification methods waiting for the end of this turn ({@link onceThisTurn}). */
  private readonly changes = new Set<string>();
  private closed = false;
  private readonly logger: Logger;
  /** Clients of 2025-11-25 and later get priming events (an id with empty data) when a resumable stream opens. */
  private readonly primes: () => boolean;
  private readonly touch: () => void;

  constructor(resumable: boolean, logger: Logger, primes: () => boolean, touch: () => void) {
    this.events = resumable ? new EventLog(logger) : undefined;
    this.logger = logger;
    this.primes = primes;
    this.touch = touch;
  }

  /** A stream is open that keeps the session busy. */
  get open(): boolean {
    return this.getStream?.open === true || this.legacyStream !== undefined;
  }

  /**
   * A message for no request: the GET stream, else kept until it opens (the oldest dropped past QUEUE_LIMIT messages
   * or QUEUE_MAX_BYTES; one larger than that alone is not kept).
   */
  unrelated(m: RpcMessage): void {
    if (this.getStream?.open) {
      if (this.events) this.events.get.send(m);
      else this.getStream.send(m);
      return;
    }
    const size = JSON.stringify(m).length;
    if (size > QUEUE_MAX_BYTES) {
      this.dropped();
      return;
    }
    this.queue.push(m);
    this.queueSizes.push(size);
    this.queueBytes += size;
    while (this.queue.length > QUEUE_LIMIT || this.queueBytes > QUEUE_MAX_BYTES) {
      this.queue.shift();
      this.queueBytes -= this.queueSizes.shift()!;
      this.dropped();
    }
  }

  private dropped(): void {
    if (this.queueWarned) return;
    this.queueWarned = true;
    this.logger.warn('MCP client has no stream open; dropping queued server messages', { limit: QUEUE_LIMIT, maxBytes: QUEUE_MAX_BYTES });
  }

  /** Open the server-to-client stream (GET). Only one at a time; false when one is open already. */
  openGet(stream: SseStream): boolean {
    if (this.getStream?.open) return false;
    this.attachGet(stream, undefined);
    return true;
  }

  /**
   * `GET` with `Last-Event-ID`: resume the stream that event belongs to. The GET stream replaces its previous
   * response (the client reconnected) and gets the kept events after the id, then what was queued, then live
   * messages. A POST response stream gets its kept events after the id and then the rest of its calls' messages and
   * answers, ending after the last answer; `finished` when it had ended and nothing is left to send. `unknown` for
   * an id this session object did not make (another replica's, expired, malformed): the caller opens a fresh stream.
   */
  resume(lastEventId: string, stream: SseStream): 'resumed' | 'finished' | 'unknown' {
    const found = this.events?.find(lastEventId);
    if (!found) return 'unknown';
    const { stream: logged, seq } = found;
    if (logged === this.events!.get) {
      const previous = this.getStream;
      this.getStream = undefined;
      previous?.end();
      this.attachGet(stream, seq);
      return 'resumed';
    }
    if (logged.ended && !logged.hasAfter(seq)) return 'finished';
    logged.attach(stream, seq);
    if (stream.open) stream.startKeepAlive(KEEP_ALIVE_MS);
    return 'resumed';
  }

  private attachGet(stream: SseStream, resumeAfter: number | undefined): void {
    this.getStream = stream;
    stream.onClose = () => {
      if (this.getStream === stream) this.getStream = undefined;
      this.touch();
    };
    const logged = this.events?.get;
    if (logged) {
      logged.attach(stream, resumeAfter);
      if (resumeAfter === undefined) {
        if (this.primes()) logged.prime();
        else stream.flushHeaders();
      }
    } else stream.flushHeaders();
    stream.startKeepAlive(KEEP_ALIVE_MS);
    const queued = this.queue;
    this.queue = [];
    this.queueSizes = [];
    this.queueBytes = 0;
    for (const m of queued) {
      if (logged) logged.send(m);
      else stream.send(m);
    }
  }

  /**
   * Run `send` at the end of this event-loop turn, unless a `method` waits already: several targets telling one change
   * at once (two `openapi` targets of one document, ADR 0143) reach the client as one `list_changed`, which says
   * only that a list is worth reading again.
   */
  onceThisTurn(method: string, send: () => void): void {
    if (this.changes.has(method)) return;
    this.changes.add(method);
    setImmediate(() => {
      this.changes.delete(method);
      if (!this.closed) send();
    });
  }

  close(): void {
    this.closed = true;
    this.getStream?.end();
    this.legacyStream?.end();
    this.queue = [];
    this.queueSizes = [];
    this.queueBytes = 0;
    this.events?.dispose();
  }
}
