import { Transform } from 'node:stream';
import type { Readable, TransformCallback } from 'node:stream';
import type { LlmRouteType } from './contract.ts';
import { EventStreamDecoder } from './event-stream.ts';
import { formatOf } from './formats/index.ts';
import { DONE } from './events.ts';
import type { LlmEvent, StreamTranslator } from './events.ts';
import { isObj } from './json.ts';
import { formatSse, SseParser } from './sse.ts';

export interface LlmStreamOptions {
  /** How the provider frames its stream. */
  source: 'sse' | 'eventstream';
  /** The client's format, for serializing translated events. */
  client: LlmRouteType;
  /** Translates provider events to client events; undefined when the bytes pass through unchanged. */
  translator: StreamTranslator | undefined;
  /** Each provider event, parsed (usage and model are read here). */
  onEvent(e: LlmEvent): void;
  /** The provider's stream ended (not called when it failed). */
  onEnd?(): void;
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

/** A client event as SSE, for a format that does not say otherwise: with its `event:` name. */
function defaultSerialize(e: LlmEvent): string {
  if (e.done) return 'data: [DONE]\n\n';
  return formatSse(e.type, JSON.stringify(e.data));
}

/**
 * A streamed LLM response on its way to the client: parsed event by event as it arrives (never buffered whole),
 * observed for usage, and either passed through byte for byte or translated to the client's format.
 */
export class LlmResponseStream extends Transform {
  private readonly options: LlmStreamOptions;
  private readonly sse: SseParser | undefined;
  private readonly frames: EventStreamDecoder | undefined;
  /** The client format's serialisation of translated events. */
  private readonly serialize: (e: LlmEvent) => string;

  constructor(options: LlmStreamOptions) {
    super();
    this.options = options;
    this.serialize = formatOf(options.client)?.serializeEvent ?? defaultSerialize;
    if (options.source === 'sse') this.sse = new SseParser();
    else this.frames = new EventStreamDecoder();
  }

  private handle(events: LlmEvent[]): void {
    const { translator, onEvent } = this.options;
    let out = '';
    for (const e of events) {
      onEvent(e);
      if (translator) for (const t of translator.event(e)) out += this.serialize(t);
    }
    if (out) this.push(out);
  }

  private decode(chunk: Buffer): LlmEvent[] {
    const events: LlmEvent[] = [];
    if (this.sse) {
      for (const ev of this.sse.feed(chunk)) {
        const e = parseSse(ev.event, ev.data);
        if (e) events.push(e);
      }
      return events;
    }
    for (const m of this.frames!.feed(chunk)) {
      const kind = m.headers[':message-type'];
      let data: unknown;
      try {
        data = JSON.parse(m.payload.toString('utf8'));
      } catch {
        data = { message: m.payload.toString('utf8') };
      }
      if (!isObj(data)) continue;
      if (kind === 'event') events.push({ type: m.headers[':event-type'], data });
      else if (kind === 'exception' || kind === 'error') events.push({ type: `exception:${m.headers[':exception-type'] ?? m.headers[':error-code'] ?? 'error'}`, data });
    }
    return events;
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, callback: TransformCallback): void {
    try {
      if (!this.options.translator) this.push(chunk);
      this.handle(this.decode(chunk));
      callback();
    } catch (err) {
      callback(err as Error);
    }
  }

  override _flush(callback: TransformCallback): void {
    try {
      const events: LlmEvent[] = [];
      if (this.sse) {
        for (const ev of this.sse.end()) {
          const e = parseSse(ev.event, ev.data);
          if (e) events.push(e);
        }
      }
      this.handle(events);
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
 * Passes a body through unchanged while keeping a copy of up to `limit` bytes, handed to `onEnd` when the body
 * ended (undefined when it was larger): usage of a non-streamed response is read without holding the client back.
 */
export class CollectingStream extends Transform {
  private chunks: Buffer[] | undefined = [];
  private size = 0;
  private readonly limit: number;
  private readonly onEnd: (body: Buffer | undefined) => void;

  constructor(limit: number, onEnd: (body: Buffer | undefined) => void) {
    super();
    this.limit = limit;
    this.onEnd = onEnd;
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, callback: TransformCallback): void {
    if (this.chunks) {
      this.size += chunk.length;
      if (this.size > this.limit) this.chunks = undefined;
      else this.chunks.push(chunk);
    }
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    try {
      this.onEnd(this.chunks ? Buffer.concat(this.chunks, this.size) : undefined);
    } catch {
      // Telemetry never fails a response.
    }
    callback();
  }
}

/**
 * Pipe `src` into `dst` with the error handling the proxy path needs (ARCHITECTURE.md §6): an upstream failure
 * destroys `dst` (the client sees a cut response), and `dst` going away (the client left) releases `src`.
 */
export function pipeInto<T extends Transform>(src: Readable, dst: T): T {
  src.on('error', (err) => dst.destroy(err));
  dst.on('close', () => {
    if (!src.readableEnded && !src.destroyed) src.destroy();
  });
  src.pipe(dst);
  return dst;
}

/** Read a whole body, failing beyond `limit` bytes. */
export function readAll(src: Readable, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    src.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        src.destroy();
        reject(new RangeError(`body exceeds ${limit} bytes`));
        return;
      }
      chunks.push(c);
    });
    src.on('end', () => resolve(Buffer.concat(chunks, size)));
    src.on('error', reject);
  });
}
