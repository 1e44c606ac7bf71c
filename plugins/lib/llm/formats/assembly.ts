// Stream assembly: a held stream's events put together into the complete response the client would have got
// without `stream: true` (response guards on streams, `promptGuard.streaming: Enabled`; plugins/backends/ai/
// stream-guard.ts). Each format module that can do it implements `assembleStream` with these types.
import type { Obj } from '../json.ts';

/** One held event: its SSE `event:` name, its data as received, and the data parsed (undefined: `[DONE]`, not JSON). */
export interface HeldEvent {
  readonly event: string | undefined;
  readonly raw: string;
  readonly data: Obj | undefined;
  /** Changed by masking: serialized again from `data`. */
  changed: boolean;
  /** Left out by masking: it carried only text that another event now carries. */
  dropped: boolean;
}

/** One event carrying part of a text, as a delta. */
export interface TextRef {
  readonly at: number;
  /** Carry the whole text. */
  set(text: string): void;
  /** Carry none of it; true when the event then says nothing else and is left out. */
  clear(): boolean;
}

/**
 * Another event to update when a text is masked: one repeating the whole text (Responses `output_text.done`,
 * `content_part.done`, `output_item.done`), or one with log probabilities of the original tokens (Chat Completions).
 */
export interface Snapshot {
  readonly at: number;
  set(text: string): void;
}

/** A guarded text of the reconstructed response and the events it came from. */
export interface StreamText {
  /** The text in the reconstructed body (after the guards: possibly masked). */
  read(): string;
  readonly refs: TextRef[];
  readonly snapshots: Snapshot[];
}

export interface Reconstruction {
  /** The complete response in the client's format, as guards see non-streamed ones. */
  readonly body: Obj;
  readonly texts: StreamText[];
  /** Events that are the body itself (Responses `response.completed`): changed whenever a text is masked. */
  readonly bodyEvents: number[];
}

export type Builder = (events: HeldEvent[]) => Reconstruction;

/** The type of a held event: its data's `type`, else its SSE `event:` name. */
export const typeOf = (e: HeldEvent): unknown => e.data?.type ?? e.event;
