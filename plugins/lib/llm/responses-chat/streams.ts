// OpenAI Chat Completions stream -> OpenAI Responses stream (`response.created ... response.completed`), for Responses
// clients of providers that do not speak Responses.
import { isObj, nowSeconds } from '../json.ts';
import type { Obj } from '../json.ts';
import type { LlmEvent, StreamTranslator } from '../events.ts';
import { firstChoice, startsAnswer, StreamedToolCallKeys } from '../chunks.ts';
import { functionCallItem, messageItem, responseObject, responsesId, responsesStatusOf, responsesUsageOf } from './requests.ts';

/**
 * Most characters of text and arguments held for the `.done` events and the final response: as much as the gateway
 * reads of a complete answer (32 MiB). A provider that streams on past it ends the stream with an `error` event.
 */
export const MAX_HELD_TEXT = 32 * 1024 * 1024;

/** An output item being streamed: the text (or refusal) of a message, or a function call's arguments. */
interface OpenItem {
  readonly index: number;
  readonly id: string;
  readonly kind: 'message' | 'refusal' | 'function_call';
  text: string;
  readonly callId?: unknown;
  readonly name?: unknown;
  /** The call's `extra_content` (Gemini's thought signature). */
  readonly extra?: unknown;
}

/** A message's one content part: its text, or its refusal. */
function partOf(kind: 'message' | 'refusal', text: string): Obj {
  return kind === 'message' ? { type: 'output_text', text, annotations: [] } : { type: 'refusal', refusal: text };
}

/**
 * `chat.completion.chunk`s (first choice) as Responses events: `response.created` and `response.in_progress` when the
 * answer starts; a `message` item per run of text (`content_part.added`, `output_text.delta` ...) and a
 * `function_call` item per call (`function_call_arguments.delta` ...); at the end every item done and
 * `response.completed` (`response.incomplete` for a length or content-filter stop) with the output and usage. A
 * stream cut before its finish reason is not completed; an error chunk becomes an `error` event.
 */
export class CompletionsToResponsesStream implements StreamTranslator {
  private readonly id = responsesId('resp');
  private readonly createdAt = nowSeconds();
  private model: unknown;
  private seq = 0;
  private started = false;
  private finished = false;
  private nextIndex = 0;
  /** Finished items by output index, for the final response. */
  private readonly done: Obj[] = [];
  private text: OpenItem | undefined = undefined;
  private readonly calls = new Map<number | string, OpenItem>();
  private readonly toolKeys = new StreamedToolCallKeys();
  private finish: unknown = null;
  private usage: Obj | null = null;
  /** Characters held in the items' text so far. */
  private held = 0;
  /** Past the limit: the client has its error event and the provider's stream is not read further. */
  halted = false;

  constructor(model: string) {
    this.model = model;
  }

  private ev(type: string, data: Obj): LlmEvent {
    return { type, data: { type, sequence_number: this.seq++, ...data } };
  }

  private response(inProgress: boolean): Obj {
    const output = this.done.filter((item) => item !== undefined);
    return responseObject(this.id, this.createdAt, this.model, output, this.finish, inProgress ? null : this.usage, inProgress);
  }

  event(e: LlmEvent): LlmEvent[] {
    // `complete` ends the response once; nothing follows it.
    if (e.done) return this.complete();
    const d = e.data;
    if (this.finished) return [];
    if (isObj(d.error)) return this.fail(d.error);
    if (isObj(d.usage)) this.usage = responsesUsageOf(d.usage);
    const choice = firstChoice(d);
    if (!this.started && !startsAnswer(d, choice)) return [];
    const out: LlmEvent[] = [];
    if (!this.started) {
      this.started = true;
      if (typeof d.model === 'string' && d.model) this.model = d.model;
      out.push(this.ev('response.created', { response: this.response(true) }), this.ev('response.in_progress', { response: this.response(true) }));
    }
    if (!choice) return out;
    const delta: Obj = isObj(choice.delta) ? choice.delta : {};
    if (typeof delta.content === 'string' && delta.content) this.textDelta(delta.content, 'message', out);
    // A refusal (structured outputs): a message whose part is a `refusal`, as in a complete answer.
    if (typeof delta.refusal === 'string' && delta.refusal) this.textDelta(delta.refusal, 'refusal', out);
    for (const tc of Array.isArray(delta.tool_calls) ? delta.tool_calls : []) if (isObj(tc)) this.callDelta(tc, out);
    if (this.held > MAX_HELD_TEXT) {
      this.halted = true;
      this.text = undefined;
      this.calls.clear();
      this.done.length = 0;
      return [...out, ...this.fail({ code: 'response_too_large', message: `the response is longer than ${MAX_HELD_TEXT} characters` })];
    }
    if (choice.finish_reason) this.finish = choice.finish_reason;
    return out;
  }

  /** A provider error in the stream: Responses' `error` event, and nothing after it. */
  private fail(error: Obj): LlmEvent[] {
    this.finished = true;
    // Responses' `code` is a name: the provider's status number only when it gave no name (OpenRouter).
    const code = typeof error.code === 'string' ? error.code : (error.type ?? error.code ?? null);
    return [this.ev('error', { code, message: error.message ?? 'upstream error', param: error.param ?? null })];
  }

  private textDelta(text: string, kind: 'message' | 'refusal', out: LlmEvent[]): void {
    let item = this.text;
    if (item && item.kind !== kind) this.close(item, out);
    if (!item || item.kind !== kind) {
      item = this.text = { index: this.nextIndex++, id: responsesId('msg'), kind, text: '' };
      out.push(
        this.ev('response.output_item.added', { output_index: item.index, item: { id: item.id, type: 'message', status: 'in_progress', role: 'assistant', content: [] } }),
        this.ev('response.content_part.added', { item_id: item.id, output_index: item.index, content_index: 0, part: partOf(kind, '') }),
      );
    }
    item.text += text;
    this.held += text.length;
    const at = { item_id: item.id, output_index: item.index, content_index: 0 };
    out.push(kind === 'message' ? this.ev('response.output_text.delta', { ...at, delta: text, logprobs: [] }) : this.ev('response.refusal.delta', { ...at, delta: text }));
  }

  private callDelta(tc: Obj, out: LlmEvent[]): void {
    const key = this.toolKeys.key(tc);
    let item = this.calls.get(key);
    if (!item) {
      // Text before a call is a message of its own: closed, and text after the calls starts another.
      if (this.text) this.close(this.text, out);
      const fn: Obj = isObj(tc.function) ? tc.function : {};
      item = { index: this.nextIndex++, id: responsesId('fc'), kind: 'function_call', text: '', callId: tc.id ?? responsesId('call'), name: fn.name, extra: tc.extra_content };
      this.calls.set(key, item);
      out.push(this.ev('response.output_item.added', { output_index: item.index, item: functionCallItem(item.id, item.callId, item.name, '', 'in_progress', item.extra) }));
    }
    const args = isObj(tc.function) ? tc.function.arguments : undefined;
    if (typeof args === 'string' && args) {
      item.text += args;
      this.held += args.length;
      out.push(this.ev('response.function_call_arguments.delta', { item_id: item.id, output_index: item.index, delta: args }));
    }
  }

  /** The events that finish one item; the item joins the output. */
  private close(item: OpenItem, out: LlmEvent[]): void {
    let done: Obj;
    if (item.kind !== 'function_call') {
      this.text = undefined;
      const part = partOf(item.kind, item.text);
      const at = { item_id: item.id, output_index: item.index, content_index: 0 };
      done = { ...messageItem(item.id, item.text, 'completed'), content: [part] };
      out.push(
        item.kind === 'message' ? this.ev('response.output_text.done', { ...at, text: item.text, logprobs: [] }) : this.ev('response.refusal.done', { ...at, refusal: item.text }),
        this.ev('response.content_part.done', { ...at, part }),
      );
    } else {
      // A call streamed without arguments has `{}`, as in a complete answer.
      const args = item.text || '{}';
      done = functionCallItem(item.id, item.callId, item.name, args, 'completed', item.extra);
      out.push(this.ev('response.function_call_arguments.done', { item_id: item.id, output_index: item.index, arguments: args }));
    }
    this.done[item.index] = done;
    out.push(this.ev('response.output_item.done', { output_index: item.index, item: done }));
  }

  private complete(): LlmEvent[] {
    if (this.finished || !this.started) return [];
    this.finished = true;
    const out: LlmEvent[] = [];
    if (this.text) this.close(this.text, out);
    for (const item of this.calls.values()) this.close(item, out);
    const { status } = responsesStatusOf(this.finish);
    out.push(this.ev(status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response: this.response(false) }));
    return out;
  }

  /** A provider that ends its stream without `[DONE]` after the finish reason still gets a complete response. */
  end(): LlmEvent[] {
    return this.finish !== null ? this.complete() : [];
  }
}
