// A recorded GenAI span's outcome (ADR 0180): the answer's id and its choices' finish reasons, read from what the
// answer's observers already parse (a recorded span only: an untraced call makes none of this).
import type { SpanAttributes } from 'switchyard/sdk';
import type { OutcomeSink } from './formats/format.ts';

/** An answer's id and reasons are the provider's strings: cut, and the reasons counted (a body sizes no span, ADR 0171). */
const MAX_LENGTH = 256;
const MAX_FINISH_REASONS = 16;

export class SpanOutcome implements OutcomeSink {
  private id: string | undefined = undefined;
  private reasons: string[] | undefined = undefined;

  /** `gen_ai.response.id`: the first the answer names (a stream's chunks repeat it). */
  setResponseId(id: unknown): void {
    if (this.id === undefined && typeof id === 'string' && id) this.id = id.slice(0, MAX_LENGTH);
  }

  /** One of `gen_ai.response.finish_reasons`, in the order the choices ended. */
  addFinishReason(reason: unknown): void {
    if (typeof reason !== 'string' || !reason) return;
    const reasons = (this.reasons ??= []);
    if (reasons.length < MAX_FINISH_REASONS) reasons.push(reason.slice(0, MAX_LENGTH));
  }

  attributes(): SpanAttributes {
    return { 'gen_ai.response.id': this.id, 'gen_ai.response.finish_reasons': this.reasons };
  }
}
