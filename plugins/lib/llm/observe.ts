// Usage and model read from provider answers, in the provider's (wire) format: each format module knows its own.
// A call whose span records also reads the answer's id and finish reasons (`outcome`, ADR 0180).
import type { LlmEvent } from './events.ts';
import type { LlmFormat, OutcomeSink, UsageSink } from './formats/format.ts';
import { formatOf } from './formats/index.ts';
import { isObj } from './json.ts';
import type { Obj } from './json.ts';
import { pickTopLevel } from './top-level.ts';

/** A call observed: with `outcome` when its span records. */
export interface ObservedCall extends UsageSink {
  readonly outcome: OutcomeSink | undefined;
}

const of = (format: string | LlmFormat): LlmFormat | undefined => (typeof format === 'string' ? formatOf(format) : format);

/** Read the model and usage of a complete (non-streamed) response. */
export function observeResponse(format: string | LlmFormat, body: Obj, call: ObservedCall): void {
  const f = of(format);
  f?.observeResponse?.(body, call);
  if (call.outcome) f?.outcomeOfResponse?.(body, call.outcome);
}

/** Read the model and usage carried by one stream event. */
export function observeEvent(format: string | LlmFormat, e: LlmEvent, call: ObservedCall): void {
  const f = of(format);
  f?.observeEvent?.(e, call);
  if (call.outcome) f?.outcomeOfEvent?.(e, call.outcome);
}

/**
 * A complete answer's bytes as `observeResponse` needs them (a passed-through answer, sent on untouched): only the
 * members the format reads when it names them (ADR 0060; with `outcome`, those of the span's outcome too), else (or
 * with `whole`: content capture) the answer parsed whole; undefined when it is not a JSON object. Throws when it is
 * not JSON.
 */
export function answerToObserve(format: LlmFormat, bytes: Buffer, whole: boolean, outcome = false): Obj | undefined {
  let members = whole ? undefined : format.observedMembers;
  if (members !== undefined && outcome && format.outcomeMembers !== undefined) members = [...members, ...format.outcomeMembers];
  const picked = members !== undefined ? pickTopLevel(bytes, members) : undefined;
  if (picked !== undefined) return picked;
  const parsed = JSON.parse(bytes.toString('utf8')) as unknown;
  return isObj(parsed) ? parsed : undefined;
}
