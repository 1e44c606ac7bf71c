// Usage and model read from provider answers, in the provider's (wire) format: each format module knows its own.
import type { LlmEvent } from './events.ts';
import type { LlmFormat, UsageSink } from './formats/format.ts';
import { formatOf } from './formats/index.ts';
import type { Obj } from './json.ts';

const of = (format: string | LlmFormat): LlmFormat | undefined => (typeof format === 'string' ? formatOf(format) : format);

/** Read the model and usage of a complete (non-streamed) response. */
export function observeResponse(format: string | LlmFormat, body: Obj, call: UsageSink): void {
  of(format)?.observeResponse?.(body, call);
}

/** Read the model and usage carried by one stream event. */
export function observeEvent(format: string | LlmFormat, e: LlmEvent, call: UsageSink): void {
  of(format)?.observeEvent?.(e, call);
}
