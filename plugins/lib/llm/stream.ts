import { Transform } from 'node:stream';
import type { Readable, TransformCallback } from 'node:stream';
import { formatSseEvent, SseParser } from 'switchyard/sdk';
import type { SseEvent } from 'switchyard/sdk';
import type { LlmRouteType } from './contract.ts';
import { EventStreamDecoder } from './event-stream.ts';
import { formatOf } from './formats/index.ts';
import type { LlmFormat } from './formats/format.ts';
import { DONE } from './events.ts';
import type { LlmEvent, StreamTranslator } from './events.ts';
import { isObj } from './json.ts';
import type { Obj } from './json.ts';

export interface LlmStreamOptions {
  /** How the provider frames its stream. */
  source: 'sse' | 'eventstream';
  /** The client's format, for serializing translated events. */
  client: LlmRouteType;
  /** Translates provider events to client events; undefined when the bytes pass through unchanged. */
  translator: StreamTranslator | undefined;
  /** Each provider event, parsed (usage and model are read here). */
  onEvent(e: LlmEvent): void;
  /**
   * Optional, for streams passed through unchanged: false for an event whose data `onEvent` does not need (it is then
   * not parsed; `onSkipped` is called instead). The wire format's `observes`.
   */
  observes?(event: string | undefined, data: string): boolean;
  onSkipped?(): void;
  /** Every event's raw data, parsed or not (the output relayed so far is counted from it: output-bytes.ts). */
  onData?(data: string): void;
  /** The provider's stream ended (not called when it failed). */
  onEnd?(): void;
  /** The translator halted (an error event sent to the client): the client's stream ends, the provider's is dropped. */
  onHalt?(): void;
  /** Translated events the client did not ask for (a usage chunk it turned off): not sent. */
  omit?(e: LlmEvent): boolean;
}

function parseSse(event: string | undefined, data: string): LlmEvent | undefined {
  if (data === '[DONE]') return DONE;
  try {
    const v = JSON.parse(data) as unknown;
    if (!isObj(v)) return undefined;
    return { type: event ?? (typeof v.type === 'string' ? v.type : undefined), data: v };
  } catch {
    return undefined;
  }
}

/** The model's JSON object in a Bedrock `chunk` (its `bytes`, base64); undefined when it is not one. */
function modelChunk(bytes: string): Obj | undefined {
  try {
    const v = JSON.parse(Buffer.from(bytes, 'base64').toString('utf8')) as unknown;
    return isObj(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

/** A client event as SSE, for a format that does not say otherwise: with its `event:` name. */
function defaultSerialize(e: LlmEvent): string {
  if (e.done) return 'data: [DONE]\n\n';
  return formatSseEvent({ event: e.type, data: JSON.stringify(e.data) });
}

/** How a format's events are written as SSE for its clients. */
export function serializerOf(format: LlmFormat | undefined): (e: LlmEvent) => string {
  return format?.serializeEvent ?? defaultSerialize;
}

/** Most characters one streamed event may hold (a whole tool-call argument can arrive in one). */
export const MAX_LLM_EVENT = 8 * 1024 * 1024;

/**
 * The provider's stream read event by event: parsed as it arrives (never buffered whole) and observed for usage.
 * Passed through (no translator), each event is handed to `onEvent` as soon as it is parsed; translated, `feed` and
 * `finish` return the events for the translator.
 */
/** What the reader needs of {@link LlmStreamOptions}. */
type ReaderOptions = Pick<LlmStreamOptions, 'source' | 'onEvent' | 'observes' | 'onSkipped' | 'onData'> & { readonly translator?: StreamTranslator };

class LlmStreamReader {
  private readonly options: ReaderOptions;
  private readonly sse: SseParser | undefined;
  /** Translated: the events of the chunk being read, for the translator (passed through, each goes to `onEvent`). */
  private events: LlmEvent[] = NONE;
  private readonly frames: EventStreamDecoder | undefined;

  constructor(options: ReaderOptions) {
    this.options = options;
    // Each event is taken as the parser dispatches it: no list of parsed events per chunk.
    if (options.source === 'sse') this.sse = new SseParser({ onEvent: (e) => this.take(e), maxEventSize: MAX_LLM_EVENT });
    else this.frames = new EventStreamDecoder();
  }

  private take(ev: SseEvent): void {
    const { observes, translator, onSkipped, onEvent, onData } = this.options;
    onData?.(ev.data);
    // Passed through unchanged: an event the observer does not need is not parsed at all.
    if (!translator && observes && !observes(ev.event, ev.data)) {
      onSkipped?.();
      return;
    }
    const e = parseSse(ev.event, ev.data);
    if (!e) return;
    // Passed through, an event is observed at once: what it taught (the model) decides whether the next events of
    // the same chunk need parsing (a whole stream can arrive in one chunk).
    if (!translator) onEvent(e);
    else if (this.events === NONE) this.events = [e];
    else this.events.push(e);
  }

  /** The events taken since the last call (translated only; passed through they went to `onEvent`). */
  private taken(): LlmEvent[] {
    const events = this.events;
    this.events = NONE;
    return events;
  }

  /** The events of one chunk (those not yet handed to `onEvent`). */
  feed(chunk: Buffer): LlmEvent[] {
    if (this.sse) {
      this.sse.push(chunk);
      return this.taken();
    }
    const events: LlmEvent[] = [];
    for (const m of this.frames!.feed(chunk)) {
      const kind = m.headers[':message-type'];
      let data: unknown;
      const text = m.payload.toString('utf8');
      if (kind === 'event') this.options.onData?.(text);
      try {
        data = JSON.parse(text);
      } catch {
        data = { message: text };
      }
      if (!isObj(data)) continue;
      // Bedrock's InvokeModelWithResponseStream: each `chunk` carries the model's own event, base64 in `bytes`.
      if (kind === 'event' && m.headers[':event-type'] === 'chunk' && typeof data.bytes === 'string') {
        const inner = modelChunk(data.bytes);
        if (inner !== undefined) events.push({ type: typeof inner.type === 'string' ? inner.type : undefined, data: inner });
        continue;
      }
      if (kind === 'event') events.push({ type: m.headers[':event-type'], data });
      else if (kind === 'exception' || kind === 'error') events.push({ type: `exception:${m.headers[':exception-type'] ?? m.headers[':error-code'] ?? 'error'}`, data });
    }
    return events;
  }

  /** The events left when the stream ended. */
  finish(): LlmEvent[] {
    if (!this.sse) return NONE;
    this.sse.end();
    return this.taken();
  }
}

/** No events (shared: never added to). */
const NONE: LlmEvent[] = [];

/**
 * A streamed LLM response on its way to the client: parsed event by event as it arrives (never buffered whole),
 * observed for usage, and either passed through byte for byte or translated to the client's format.
 */
export class LlmResponseStream extends Transform {
  private readonly options: LlmStreamOptions;
  private readonly reader: LlmStreamReader;
  /** The client format's serialisation of translated events. */
  private readonly serialize: (e: LlmEvent) => string;

  constructor(options: LlmStreamOptions) {
    super();
    this.options = options;
    const serialize = serializerOf(formatOf(options.client));
    const omit = options.omit;
    this.serialize = omit ? (e) => (omit(e) ? '' : serialize(e)) : serialize;
    this.reader = new LlmStreamReader(options);
  }

  /** The translator halted: the client's stream has ended, the provider's is dropped until it is cut. */
  private cut = false;

  private handle(events: LlmEvent[]): void {
    const { translator, onEvent } = this.options;
    let out = '';
    for (const e of events) {
      onEvent(e);
      if (translator) for (const t of translator.event(e)) out += this.serialize(t);
      if (translator?.halted) break;
    }
    if (out) this.push(out);
    if (translator?.halted && !this.cut) {
      this.cut = true;
      this.options.onHalt?.();
      this.push(null);
      // Once the client has read the end, closing this stream destroys the provider's (pipeWithTeardown).
      this.once('end', () => this.destroy());
    }
  }

  /**
   * The provider's stream failed after the client got some of it: `last` (an error event in the client's API) is
   * sent and the client's stream ends, so its SDK raises the error rather than a bare connection error (ADR 0199).
   * False when the stream already ended.
   */
  endWith(last: string): boolean {
    if (this.cut || this.writableEnded || this.destroyed) return false;
    this.cut = true;
    this.push(last);
    this.push(null);
    return true;
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, callback: TransformCallback): void {
    if (this.cut) return callback();
    try {
      if (!this.options.translator) this.push(chunk);
      this.handle(this.reader.feed(chunk));
      callback();
    } catch (err) {
      callback(err as Error);
    }
  }

  override _flush(callback: TransformCallback): void {
    if (this.cut) return callback();
    try {
      this.handle(this.reader.finish());
      const { translator } = this.options;
      if (translator) {
        let out = '';
        for (const t of translator.end()) out += this.serialize(t);
        if (out) this.push(out);
      }
      this.options.onEnd?.();
      callback();
    } catch (err) {
      callback(err as Error);
    }
  }
}

/**
 * A stream passed through unchanged, observed beside the runtime's pipe to the client instead of through a
 * {@link LlmResponseStream} in between: one Transform, one pipe and their per-chunk work fewer per request
 * (docs/perf.md "The ai row, session 6"). The observer listens to `body`'s chunks; `body` stays paused until the
 * runtime pipes it (the pipe resumes it), so no chunk goes by before the client's side listens. A chunk that
 * cannot be read (an event over MAX_LLM_EVENT) fails `body`, which cuts the client's response, as the Transform's
 * error did. Returns `body`.
 */
export function observeBeside(body: Readable, options: Omit<LlmStreamOptions, 'translator' | 'client'>): Readable {
  const reader = new LlmStreamReader(options);
  const { onEvent } = options;
  const onData = (chunk: Buffer): void => {
    try {
      for (const e of reader.feed(chunk)) onEvent(e);
    } catch (err) {
      body.off('data', onData);
      body.destroy(err as Error);
    }
  };
  body.on('data', onData);
  body.pause();
  body.once('end', () => {
    try {
      for (const e of reader.finish()) onEvent(e);
      options.onEnd?.();
    } catch {
      // The client already has every byte: what could not be read is only not observed.
    }
  });
  return body;
}
