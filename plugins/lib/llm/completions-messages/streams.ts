// OpenAI Chat Completions <-> Anthropic Messages streams, both directions (BEHAVIOUR.md §4.6).
import { randomUUID } from 'node:crypto';
import { DONE } from '../events.ts';
import type { LlmEvent, StreamTranslator } from '../events.ts';
import { canonicalExtra } from '../chat-messages.ts';
import { isObj, nowSeconds } from '../json.ts';
import { firstChoice, startsAnswer, StreamedToolCallKeys } from '../chunks.ts';
import { MAX_HELD_TEXT } from '../responses-chat/streams.ts';
import { signedCallsThinking } from '../thinking.ts';
import type { Obj } from '../json.ts';
import { anthropicErrorTypeOf, stopReasonToFinish, completionsUsageToMessages, finishToAnthropicStop, messagesUsageToCompletions } from './mapping.ts';

// ---------------------------------------------------------------------------------------------------------------
// Messages stream -> Completions stream

/** Anthropic `message_start ... message_stop` events as `chat.completion.chunk`s, ending with `[DONE]`. */
export class MessagesToCompletionsStream implements StreamTranslator {
  private id = `chatcmpl-${randomUUID()}`;
  private model: unknown = undefined;
  private readonly created = nowSeconds();
  private readonly toolIndex = new Map<number, number>();
  /** Tool blocks (by Anthropic index) that have had no input yet: a tool without arguments streams none. */
  private readonly noInput = new Set<number>();
  private nextTool = 0;
  private usage: Obj = {};
  private finished = false;

  private chunk(delta: Obj, finish: string | null = null): LlmEvent {
    return {
      type: undefined,
      data: { id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] },
    };
  }

  event(e: LlmEvent): LlmEvent[] {
    const d = e.data;
    switch (e.type ?? d.type) {
      case 'message_start': {
        const m: Obj = isObj(d.message) ? d.message : {};
        if (typeof m.id === 'string') this.id = m.id;
        this.model = m.model;
        if (isObj(m.usage)) Object.assign(this.usage, m.usage);
        return [this.chunk({ role: 'assistant', content: '' })];
      }
      case 'content_block_start': {
        const b: Obj = isObj(d.content_block) ? d.content_block : {};
        if (b.type === 'tool_use') {
          const index = this.nextTool++;
          this.toolIndex.set(d.index, index);
          this.noInput.add(d.index);
          return [this.chunk({ tool_calls: [{ index, id: b.id, type: 'function', function: { name: b.name, arguments: '' } }] })];
        }
        if (b.type === 'text' && typeof b.text === 'string' && b.text) return [this.chunk({ content: b.text })];
        return [];
      }
      case 'content_block_delta': {
        const delta: Obj = isObj(d.delta) ? d.delta : {};
        if (delta.type === 'text_delta') return [this.chunk({ content: delta.text })];
        // Claude's reasoning as DeepSeek's and vLLM's member (signatures have no Chat Completions form).
        if (delta.type === 'thinking_delta' && typeof delta.thinking === 'string' && delta.thinking) return [this.chunk({ reasoning_content: delta.thinking })];
        if (delta.type === 'input_json_delta') {
          const index = this.toolIndex.get(d.index);
          if (index === undefined || !delta.partial_json) return [];
          this.noInput.delete(d.index);
          return [this.chunk({ tool_calls: [{ index, function: { arguments: delta.partial_json } }] })];
        }
        return [];
      }
      case 'content_block_stop':
        return this.emptyArguments(d.index);
      case 'message_delta': {
        if (isObj(d.usage)) for (const [k, v] of Object.entries(d.usage)) if (v !== null && v !== undefined) this.usage[k] = v;
        const finish = stopReasonToFinish(isObj(d.delta) ? d.delta.stop_reason : undefined);
        return finish ? [this.chunk({}, finish)] : [];
      }
      case 'message_stop': {
        if (this.finished) return [];
        this.finished = true;
        const usage = messagesUsageToCompletions(this.usage);
        return [{ type: undefined, data: { id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.model, choices: [], usage } }, DONE];
      }
      case 'error': {
        this.finished = true;
        const err: Obj = isObj(d.error) ? d.error : {};
        return [{ type: undefined, data: { error: { message: err.message ?? 'upstream error', type: err.type ?? 'api_error', param: null, code: null } } }];
      }
      default:
        return []; // ping
    }
  }

  /**
   * A tool call whose block ended without input gets `{}` as its arguments, as a complete answer's has: OpenAI
   * clients parse the arguments as JSON, and an empty text is not JSON.
   */
  private emptyArguments(block: unknown): LlmEvent[] {
    if (typeof block !== 'number' || !this.noInput.delete(block)) return [];
    return [this.chunk({ tool_calls: [{ index: this.toolIndex.get(block), function: { arguments: '{}' } }] })];
  }

  end(): LlmEvent[] {
    return [];
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Completions stream -> Messages stream

/** A call held until the message ends (not the one streamed live): its block is sent whole then. */
interface HeldCall {
  readonly id: unknown;
  readonly name: unknown;
  args: string;
}

/**
 * `chat.completion.chunk`s as Anthropic `message_start ... message_stop` events. Anthropic streams one content block
 * at a time (started, its deltas, stopped), while Chat Completions may interleave the deltas of parallel calls: the
 * first call streams live, later calls and text after a call are held and sent as whole blocks when the message
 * ends (a call is only complete then anyway; Chat Completions puts no order between text and calls).
 */
export class CompletionsToMessagesStream implements StreamTranslator {
  private started = false;
  /** A call's Gemini signature was sent (as a thinking block): later ones of the answer are not. */
  private signed = false;
  private finished = false;
  private block = -1;
  private open: 'text' | 'tool' | 'thinking' | undefined = undefined;
  /** The call streamed live, by its key (`StreamedToolCallKeys`: its `index`, else its id's). */
  private live: number | string | undefined = undefined;
  /** The other calls, in the order they began. */
  private readonly held = new Map<number | string, HeldCall>();
  /** Text that came after the first call. */
  private heldText = '';
  /** Characters held (bounded as a translated Responses stream's are). */
  private heldSize = 0;
  private readonly toolKeys = new StreamedToolCallKeys();
  /** The provider's finish reason, mapped when the message ends (when tools were called it may become `tool_use`). */
  private finish: unknown = null;
  /** The model refused: the stop reason is `refusal`. */
  private refused = false;
  private usage: Obj | undefined = undefined;
  /** The request's model, for a provider whose chunks name none. */
  private readonly model: string | undefined;
  /** Past the hold limit: the client has its error event and the provider's stream is not read further. */
  halted = false;

  constructor(model?: string) {
    this.model = model;
  }

  private ev(type: string, data: Obj): LlmEvent {
    return { type, data: { type, ...data } };
  }

  private start(d: Obj): LlmEvent[] {
    if (this.started) return [];
    this.started = true;
    const id = typeof d.id === 'string' && d.id ? d.id : `msg_${randomUUID()}`;
    const model = typeof d.model === 'string' && d.model ? d.model : this.model;
    const message = { id, type: 'message', role: 'assistant', content: [], model, stop_reason: null, stop_sequence: null, usage: { input_tokens: 0, output_tokens: 0 } };
    return [this.ev('message_start', { message })];
  }

  private close(out: LlmEvent[]): void {
    if (this.open !== undefined) out.push(this.ev('content_block_stop', { index: this.block }));
    this.open = undefined;
  }

  /** A new block, the open one closed first. */
  private openBlock(out: LlmEvent[], kind: 'text' | 'tool' | 'thinking', content: Obj): void {
    this.close(out);
    this.open = kind;
    out.push(this.ev('content_block_start', { index: ++this.block, content_block: content }));
  }

  private toolBlock(id: unknown, name: unknown): Obj {
    return { type: 'tool_use', id: id ?? `toolu_${randomUUID()}`, name: name ?? '', input: {} };
  }

  event(e: LlmEvent): LlmEvent[] {
    if (this.finished) return [];
    if (e.done) return this.finishMessage();
    const d = e.data;
    if (isObj(d.error)) return this.fail(d.error);
    const choice = firstChoice(d);
    if (!this.started && !startsAnswer(d, choice)) return [];
    const out = this.start(d);
    if (isObj(d.usage)) this.usage = d.usage;
    if (!choice) return out;
    const delta: Obj = isObj(choice.delta) ? choice.delta : {};
    for (const piece of canonicalExtra(delta, 'thinking') ?? []) this.thinking(piece, out);
    // A call signed by Gemini's OpenAI-compatible API (ADR 0180): the signature as a thinking block before it, once.
    if (!this.signed && Array.isArray(delta.tool_calls)) {
      const signed = signedCallsThinking(delta.tool_calls.filter(isObj));
      if (signed !== undefined) {
        this.signed = true;
        this.thinking(signed, out);
      }
    }
    // A refusal (structured outputs) is the answer's text, and the message's stop reason.
    if (typeof delta.refusal === 'string' && delta.refusal) this.refused = true;
    const text = typeof delta.content === 'string' && delta.content ? delta.content : typeof delta.refusal === 'string' ? delta.refusal : '';
    if (text) {
      if (this.live !== undefined) this.hold(text.length, () => (this.heldText += text));
      else {
        if (this.open !== 'text') this.openBlock(out, 'text', { type: 'text', text: '' });
        out.push(this.ev('content_block_delta', { index: this.block, delta: { type: 'text_delta', text } }));
      }
    }
    for (const tc of Array.isArray(delta.tool_calls) ? delta.tool_calls : []) if (isObj(tc)) this.callDelta(tc, out);
    if (this.heldSize > MAX_HELD_TEXT) {
      this.halted = true;
      this.held.clear();
      this.heldText = '';
      return [...out, ...this.fail({ type: 'api_error', message: `the response holds more than ${MAX_HELD_TEXT} characters of parallel calls` })];
    }
    if (choice.finish_reason) this.finish = choice.finish_reason;
    return out;
  }

  /**
   * A piece of the provider's reasoning: its text and signature as a `thinking` block's deltas (one block until
   * another kind starts), a redacted one as a whole `redacted_thinking` block. Providers stream reasoning before the
   * text and calls it leads to, so the block goes out as it comes.
   */
  private thinking(piece: Obj, out: LlmEvent[]): void {
    if (piece.type === 'redacted_thinking') {
      this.openBlock(out, 'thinking', { type: 'redacted_thinking', data: piece.data });
      this.close(out);
      return;
    }
    if (this.open !== 'thinking') this.openBlock(out, 'thinking', { type: 'thinking', thinking: '', signature: '' });
    if (typeof piece.thinking === 'string' && piece.thinking) out.push(this.ev('content_block_delta', { index: this.block, delta: { type: 'thinking_delta', thinking: piece.thinking } }));
    if (typeof piece.signature === 'string' && piece.signature) out.push(this.ev('content_block_delta', { index: this.block, delta: { type: 'signature_delta', signature: piece.signature } }));
  }

  private callDelta(tc: Obj, out: LlmEvent[]): void {
    const key = this.toolKeys.key(tc);
    const fn: Obj = isObj(tc.function) ? tc.function : {};
    const args = typeof fn.arguments === 'string' ? fn.arguments : '';
    if (this.live === undefined) {
      this.live = key;
      this.openBlock(out, 'tool', this.toolBlock(tc.id, fn.name));
    }
    if (key === this.live) {
      if (args) out.push(this.ev('content_block_delta', { index: this.block, delta: { type: 'input_json_delta', partial_json: args } }));
      return;
    }
    const call = this.held.get(key) ?? { id: tc.id, name: fn.name, args: '' };
    this.held.set(key, call);
    this.hold(args.length, () => (call.args += args));
  }

  private hold(size: number, add: () => void): void {
    this.heldSize += size;
    if (this.heldSize <= MAX_HELD_TEXT) add();
  }

  /** A provider error in the stream: Anthropic's `error` event, and nothing after it. */
  private fail(error: Obj): LlmEvent[] {
    this.finished = true;
    // The chunk's `code` is the provider's status when it gave one (Gemini, OpenRouter, Bedrock's exceptions).
    return [this.ev('error', { error: { type: anthropicErrorTypeOf(error.type, error.code), message: error.message ?? 'upstream error' } })];
  }

  private finishMessage(): LlmEvent[] {
    if (this.finished || !this.started) return [];
    this.finished = true;
    const out: LlmEvent[] = [];
    this.close(out);
    for (const call of this.held.values()) {
      this.openBlock(out, 'tool', this.toolBlock(call.id, call.name));
      if (call.args) out.push(this.ev('content_block_delta', { index: this.block, delta: { type: 'input_json_delta', partial_json: call.args } }));
    }
    if (this.heldText) {
      this.openBlock(out, 'text', { type: 'text', text: '' });
      out.push(this.ev('content_block_delta', { index: this.block, delta: { type: 'text_delta', text: this.heldText } }));
    }
    this.close(out);
    const u = completionsUsageToMessages(this.usage);
    const stop = this.refused ? 'refusal' : (finishToAnthropicStop(this.finish, this.live !== undefined) ?? 'end_turn');
    out.push(this.ev('message_delta', { delta: { stop_reason: stop, stop_sequence: null }, usage: u }));
    out.push(this.ev('message_stop', {}));
    return out;
  }

  /** A provider that ends its stream without `[DONE]` after the finish reason still gets a complete message. */
  end(): LlmEvent[] {
    return this.finish !== null ? this.finishMessage() : [];
  }
}
