// Usage and model read from provider answers, in the provider's (wire) format: each format module knows its own.
import type { LlmEvent } from './events.ts';
import type { LlmFormat, UsageSink } from './formats/format.ts';
import { formatOf } from './formats/index.ts';
import { isObj } from './json.ts';
import type { Obj } from './json.ts';
import { pickTopLevel } from './top-level.ts';

const of = (format: string | LlmFormat): LlmFormat | undefined => (typeof format === 'string' ? formatOf(format) : format);

/** Read the model and usage of a complete (non-streamed) response. */
export function observeResponse(format: string | LlmFormat, body: Obj, call: UsageSink): void {
  of(format)?.observeResponse?.(body, call);
}

/** Read the model and usage carried by one stream event. */
export function observeEvent(format: string | LlmFormat, e: LlmEvent, call: UsageSink): void {
  of(format)?.observeEvent?.(e, call);
}

/**
 * A complete answer's bytes as `observeResponse` needs them (a passed-through answer, sent on untouched): only the
 * members the format reads when it names them (ADR 0060), else (or with `whole`: content capture) the answer parsed
 * whole; undefined when it is not a JSON object. Throws when it is not JSON.
 */
export function answerToObserve(format: LlmFormat, bytes: Buffer, whole: boolean): Obj | undefined {
  const members = whole ? undefined : format.observedMembers;
  const picked = members !== undefined ? pickTopLevel(bytes, members) : undefined;
  if (picked !== undefined) return picked;
  const parsed = JSON.parse(bytes.toString('utf8')) as unknown;
  return isObj(parsed) ? parsed : undefined;
}
