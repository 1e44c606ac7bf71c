// Prompt and completion content for GenAI spans, only when the operator allows it (`config.tracing.
// captureMessageContent`; docs/observability.md "Span: an LLM call"). The OTel GenAI conventions' message shape:
// `[{role, parts: [{type: 'text', content}]}]`, as JSON text (`gen_ai.input.messages`, `gen_ai.output.messages`).
// The text is what prompt guards see of a body (each format's text slots: text parts, tool results, the tool-call
// arguments of a request's history; no images).
import type { HeldEvent } from './formats/assembly.ts';
import type { LlmFormat } from './formats/format.ts';
import type { TextSlot } from './formats/slots.ts';
import type { LlmEvent } from './events.ts';
import type { Obj } from './json.ts';

/**
 * Longest text part kept (longer ones are cut, marked with `...`), and most stream events and bytes of their JSON held to
 * rebuild an answer: a text part is cut at MAX_TEXT anyway, so 4 MiB of events is more than any kept content needs,
 * while an answer's events can each be up to MAX_LLM_EVENT (8 MiB).
 */
const MAX_TEXT = 16 * 1024;
export const MAX_EVENTS = 20_000;
export const MAX_HELD_BYTES = 4 * 1024 * 1024;

interface OtelMessage {
  role: string;
  parts: { type: 'text'; content: string }[];
}

/** Provider roles as OTel names them (`model` is Gemini's assistant, `developer` OpenAI's system). */
const ROLE: Readonly<Record<string, string>> = { model: 'assistant', developer: 'system' };

function messagesOf(slots: TextSlot[]): string | undefined {
  const out: OtelMessage[] = [];
  for (const s of slots) {
    const role = ROLE[s.role] ?? s.role;
    const text = s.text.length > MAX_TEXT ? `${s.text.slice(0, MAX_TEXT)}\u2026` : s.text;
    const last = out.at(-1);
    if (last && last.role === role) last.parts.push({ type: 'text', content: text });
    else out.push({ role, parts: [{ type: 'text', content: text }] });
  }
  return out.length ? JSON.stringify(out) : undefined;
}

/** `gen_ai.input.messages` of a request body in `format`. */
export function inputMessages(format: LlmFormat, body: Obj): string | undefined {
  const slots: TextSlot[] = [];
  format.requestSlots?.(body, slots);
  return messagesOf(slots);
}

/** `gen_ai.output.messages` of a complete response body in `format`. */
export function outputMessages(format: LlmFormat, body: Obj): string | undefined {
  const slots: TextSlot[] = [];
  format.responseSlots?.(body, slots);
  return messagesOf(slots);
}

/** The events of a streamed answer, held (bounded) to rebuild the complete answer when the stream ends. */
export class StreamContent {
  private readonly events: HeldEvent[] = [];
  private readonly format: LlmFormat;
  private bytes = 0;
  constructor(format: LlmFormat) {
    this.format = format;
  }
  add(e: LlmEvent): void {
    if (this.events.length >= MAX_EVENTS || this.bytes >= MAX_HELD_BYTES) return;
    // Measured as JSON: only with content capture on, which serialises the answer at its end anyway.
    if (!e.done) this.bytes += JSON.stringify(e.data).length;
    if (this.bytes <= MAX_HELD_BYTES) this.events.push({ event: e.type, raw: '', data: e.done ? undefined : e.data, changed: false, dropped: false });
  }

  /** Events held so far. */
  get held(): number {
    return this.events.length;
  }
  /** `gen_ai.output.messages` of the stream so far; undefined when the format cannot rebuild its streams. */
  output(): string | undefined {
    const build = this.format.assembleStream;
    if (!build) return undefined;
    try {
      return outputMessages(this.format, build(this.events).body);
    } catch {
      // Telemetry never fails a response.
      return undefined;
    }
  }
}
