// Resumable SSE streams of one streamable-HTTP session (MCP "Resumability and Redelivery"): every event the gateway
// writes gets an id `<tag>.<stream>_<seq>` (unique within the session: `tag` is random per session object, `stream`
// is `g` for the GET stream or `p<n>` for the n-th POST response stream), and is kept in a bounded log, so a client
// that reconnects with `GET` + `Last-Event-ID` gets what it missed on that stream and the stream goes on.
import { randomBytes } from 'node:crypto';
import type { Logger } from 'switchyard/sdk';
import type { SseStream } from './sse-stream.ts';

/** Events kept per session (all its streams together), oldest dropped first. */
export const EVENT_LOG_MAX_EVENTS = 256;
/** Bytes of event data kept per session; an event larger than this is sent but not kept. */
export const EVENT_LOG_MAX_BYTES = 1024 * 1024;
/** Streams whose ids are still recognised per session (ended POST streams are forgotten oldest first). */
const MAX_STREAMS = 64;
/** How long a POST response whose client went away keeps its calls running, waiting for a resume. */
export const RESUME_GRACE_MS = 5000;

interface Entry {
  readonly stream: LoggedStream;
  readonly seq: number;
  readonly data: string;
}

/** One logical SSE stream: outlives the HTTP responses (connections) that carry it. */
export class LoggedStream {
  readonly id: string;
  private readonly log: EventLog;
  /** Last sequence number handed out (events and priming events). */
  seq = 0;
  /** Highest sequence number dropped from the log (0: none). */
  evictedUpTo = 0;
  /** Entries of this stream in the log. */
  kept = 0;
  ended = false;
  /** The response carrying the stream now, if any. */
  live: SseStream | undefined;
  /** The client went away and did not resume within RESUME_GRACE_MS (POST streams). */
  onGone: (() => void) | undefined;
  private grace: NodeJS.Timeout | undefined;
  /** Cancel in-flight work when the connection drops (POST streams); the GET stream just waits for the next GET. */
  private readonly graceful: boolean;

  constructor(log: EventLog, id: string, graceful: boolean) {
    this.log = log;
    this.id = id;
    this.graceful = graceful;
  }

  /** Something was sent with an id: the client holds a cursor it can resume from. */
  get resumable(): boolean {
    return this.seq > 0 && !this.ended;
  }

  /** Send one message (kept in the log), on the live response if there is one. */
  send(message: unknown): void {
    const seq = ++this.seq;
    const data = JSON.stringify(message);
    this.log.record(this, seq, data);
    this.live?.sendData(data, `${this.id}_${seq}`);
  }

  /** Send a priming event: an id with empty data (clients of 2025-11-25 and later). */
  prime(): void {
    this.live?.prime(`${this.id}_${++this.seq}`);
  }

  /** Whether events after `seq` are still kept. */
  hasAfter(seq: number): boolean {
    return this.log.after(this, seq).length > 0;
  }

  /**
   * Carry the stream on `sse` from now on. With `afterSeq`, first replay the kept events after it (a resume); an
   * ended stream's response ends after the replay.
   */
  attach(sse: SseStream, afterSeq?: number): void {
    if (this.grace) clearTimeout(this.grace);
    this.grace = undefined;
    const previous = this.live;
    this.live = sse;
    if (previous && previous !== sse) previous.end();
    const before = sse.onClose;
    sse.onClose = () => {
      before?.();
      this.detached(sse);
    };
    if (afterSeq !== undefined) {
      if (this.evictedUpTo > afterSeq) this.log.logger.warn('resumed an MCP stream whose oldest missed events were dropped from the event log', { stream: this.id, lastEventId: `${this.id}_${afterSeq}`, dropped: this.evictedUpTo - afterSeq });
      sse.comment('stream resumed');
      for (const e of this.log.after(this, afterSeq)) sse.sendData(e.data, `${this.id}_${e.seq}`);
      if (this.ended) sse.end();
    }
  }

  private detached(sse: SseStream): void {
    if (this.live !== sse) return;
    this.live = undefined;
    if (!this.graceful || !this.resumable || !this.onGone) return;
    this.grace = setTimeout(() => {
      this.grace = undefined;
      if (this.live || this.ended) return;
      const gone = this.onGone;
      this.onGone = undefined;
      gone?.();
    }, RESUME_GRACE_MS);
    this.grace.unref?.();
  }

  /** The stream is complete (its last answer sent, or its calls abandoned). */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.onGone = undefined;
    if (this.grace) clearTimeout(this.grace);
    this.grace = undefined;
    this.live?.end();
  }

  dispose(): void {
    if (this.grace) clearTimeout(this.grace);
    this.grace = undefined;
    this.onGone = undefined;
  }
}

/** The event log of one session: its streams and the recent events of all of them, bounded by count and bytes. */
export class EventLog {
  readonly tag = randomBytes(4).toString('hex');
  readonly logger: Logger;
  /** The session's GET (server-to-client) stream; one logical stream across reconnections. */
  readonly get: LoggedStream;
  private entries: Entry[] = [];
  private head = 0;
  private bytes = 0;
  private posts = 0;
  private readonly streams = new Map<string, LoggedStream>();

  constructor(logger: Logger) {
    this.logger = logger;
    this.get = new LoggedStream(this, `${this.tag}.g`, false);
    this.streams.set(this.get.id, this.get);
  }

  /** A new POST response stream. */
  post(): LoggedStream {
    const stream = new LoggedStream(this, `${this.tag}.p${++this.posts}`, true);
    this.streams.set(stream.id, stream);
    if (this.streams.size > MAX_STREAMS) {
      for (const [id, s] of this.streams) {
        if (this.streams.size <= MAX_STREAMS) break;
        if (s.ended && s !== this.get) this.streams.delete(id);
      }
    }
    return stream;
  }

  /** The stream and position an event id names, if this log made it (another replica's or session's ids are not). */
  find(eventId: string): { stream: LoggedStream; seq: number } | undefined {
    const cut = eventId.lastIndexOf('_');
    if (cut <= 0) return undefined;
    const stream = this.streams.get(eventId.slice(0, cut));
    const digits = eventId.slice(cut + 1);
    if (!stream || !/^\d{1,15}$/.test(digits)) return undefined;
    const seq = Number(digits);
    return seq <= stream.seq ? { stream, seq } : undefined;
  }

  record(stream: LoggedStream, seq: number, data: string): void {
    this.entries.push({ stream, seq, data });
    stream.kept++;
    this.bytes += data.length;
    while (this.entries.length - this.head > EVENT_LOG_MAX_EVENTS || (this.bytes > EVENT_LOG_MAX_BYTES && this.entries.length > this.head)) {
      const old = this.entries[this.head]!;
      this.entries[this.head++] = undefined as never;
      this.bytes -= old.data.length;
      old.stream.kept--;
      if (old.seq > old.stream.evictedUpTo) old.stream.evictedUpTo = old.seq;
    }
    if (this.head > 1024 && this.head * 2 > this.entries.length) {
      this.entries = this.entries.slice(this.head);
      this.head = 0;
    }
  }

  /** Kept events of `stream` after `seq`, oldest first. */
  after(stream: LoggedStream, seq: number): Entry[] {
    const out: Entry[] = [];
    if (stream.kept === 0) return out;
    for (let i = this.head; i < this.entries.length; i++) {
      const e = this.entries[i]!;
      if (e.stream === stream && e.seq > seq) out.push(e);
    }
    return out;
  }

  dispose(): void {
    for (const s of this.streams.values()) s.dispose();
    this.entries = [];
    this.head = 0;
    this.bytes = 0;
  }
}
