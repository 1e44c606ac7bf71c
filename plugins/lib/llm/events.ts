import type { Obj } from './json.ts';

/**
 * One event of a streamed LLM response, in some API format: the SSE `event:` name or the AWS `:event-type` (or
 * undefined for OpenAI Chat Completions chunks), the parsed JSON payload, and `done` for the `data: [DONE]` end
 * marker of OpenAI streams.
 */
export interface LlmEvent {
  type: string | undefined;
  data: Obj;
  done?: boolean;
}

export const DONE: LlmEvent = Object.freeze({ type: undefined, data: {}, done: true }) as LlmEvent;

/** Translates a stream of events of one format into events of another, chunk by chunk. */
export interface StreamTranslator {
  /** Events to send for one incoming event (often one, sometimes none or several). */
  event(e: LlmEvent): LlmEvent[];
  /** Events to send when the incoming stream ended. */
  end(): LlmEvent[];
  /**
   * True once the translator will send nothing more although the provider may (a held text past its limit): the
   * client's stream then ends after what was sent, and the rest of the provider's is not read.
   */
  readonly halted?: boolean;
}
