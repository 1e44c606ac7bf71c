// OpenAI Chat Completions <-> Anthropic Messages: requests, responses, streams and errors (BEHAVIOUR.md §4.6).
import { randomUUID } from 'node:crypto';
import { imageUrlOf, toolCallsOf, walkChatMessages } from './chat-messages.ts';
import { DONE } from './events.ts';
import type { LlmEvent, StreamTranslator } from './events.ts';
import { copy, isObj, nowSeconds, parseArguments, parseDataUrl, textOf } from './json.ts';
import type { Obj } from './json.ts';
import { completionsUsageFromCounts } from './usage.ts';

/** Anthropic requires `max_tokens`; a Chat Completions request may omit it. */
export const DEFAULT_MAX_TOKENS = 4096;

// ---------------------------------------------------------------------------------------------------------------
// Stop reasons

export function anthropicStopToFinish(stop: unknown): string | null {
  switch (stop) {
    case undefined:
    case null:
      return null;
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'tool_use':
      return 'tool_calls';
    case 'refusal':
      return 'content_filter';
    default:
      return 'stop'; // end_turn, stop_sequence, pause_turn
  }
}

export function finishToAnthropicStop(finish: unknown): string | null {
  switch (finish) {
    case undefined:
    case null:
      return null;
    case 'length':
      return 'max_tokens';
    case 'tool_calls':
    case 'function_call':
      return 'tool_use';
    case 'content_filter':
      return 'refusal';
    default:
      return 'end_turn';
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Usage

/** Anthropic usage as OpenAI usage: prompt tokens include cache reads and writes. */
export function messagesUsageToCompletions(u: unknown): Obj | undefined {
  return isObj(u) ? completionsUsageFromCounts(u.input_tokens, u.output_tokens, u.cache_read_input_tokens, u.cache_creation_input_tokens) : undefined;
}

/** OpenAI usage as Anthropic usage: cached prompt tokens become `cache_read_input_tokens`. */
export function completionsUsageToMessages(u: unknown): Obj {
  if (!isObj(u)) return { input_tokens: 0, output_tokens: 0 };
  const cached = isObj(u.prompt_tokens_details) && typeof u.prompt_tokens_details.cached_tokens === 'number' ? u.prompt_tokens_details.cached_tokens : 0;
  const prompt = typeof u.prompt_tokens === 'number' ? u.prompt_tokens : 0;
  const out: Obj = { input_tokens: Math.max(0, prompt - cached), output_tokens: typeof u.completion_tokens === 'number' ? u.completion_tokens : 0 };
  if (cached) out.cache_read_input_tokens = cached;
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Completions request -> Messages request

function imagePartToBlock(part: Obj): Obj | undefined {
  const url = imageUrlOf(part);
  if (typeof url !== 'string') return undefined;
  const data = parseDataUrl(url);
  return data
    ? { type: 'image', source: { type: 'base64', media_type: data.mediaType, data: data.data } }
    : { type: 'image', source: { type: 'url', url } };
}

function userBlocks(content: unknown): Obj[] | string {
  if (typeof content === 'string') return content;
  const blocks: Obj[] = [];
  if (Array.isArray(content)) {
    for (const p of content) {
      if (typeof p === 'string') blocks.push({ type: 'text', text: p });
      else if (!isObj(p)) continue;
      else if (p.type === 'text' && typeof p.text === 'string') blocks.push({ type: 'text', text: p.text });
      else if (p.type === 'image_url') {
        const b = imagePartToBlock(p);
        if (b) blocks.push(b);
      }
    }
  }
  return blocks;
}

function toolChoiceToAnthropic(choice: unknown, parallel: unknown): Obj | undefined {
  let out: Obj | undefined;
  if (choice === 'auto') out = { type: 'auto' };
  else if (choice === 'required') out = { type: 'any' };
  else if (choice === 'none') out = { type: 'none' };
  else if (isObj(choice) && isObj(choice.function) && typeof choice.function.name === 'string') out = { type: 'tool', name: choice.function.name };
  if (parallel === false) {
    out ??= { type: 'auto' };
    if (out.type !== 'none') out.disable_parallel_tool_use = true;
  }
  return out;
}

/** An OpenAI tool call as an Anthropic `tool_use` block. */
function toolUseBlock(tc: Obj): Obj {
  return { type: 'tool_use', id: tc.id ?? `toolu_${randomUUID()}`, name: tc.function.name, input: parseArguments(tc.function.arguments) };
}

/** Append a message, merging it into the previous one of the same role (tool results of several calls, say). */
function pushMessage(messages: Obj[], role: string, content: Obj[] | string): void {
  const last = messages[messages.length - 1];
  if (last && last.role === role) {
    const a: Obj[] = typeof last.content === 'string' ? [{ type: 'text', text: last.content }] : last.content;
    const b: Obj[] = typeof content === 'string' ? [{ type: 'text', text: content }] : content;
    last.content = [...a, ...b];
    return;
  }
  messages.push({ role, content });
}

/** An OpenAI Chat Completions request as an Anthropic Messages request. */
export function completionsRequestToMessages(body: Obj): Obj {
  const system: string[] = [];
  const messages: Obj[] = [];
  walkChatMessages(body, {
    system: (text) => system.push(text),
    user: (m) => {
      const c = userBlocks(m.content);
      if (c.length > 0) pushMessage(messages, 'user', c);
    },
    assistant: (m) => {
      const blocks: Obj[] = [];
      const text = textOf(m.content);
      if (text) blocks.push({ type: 'text', text });
      blocks.push(...toolCallsOf(m).map(toolUseBlock));
      if (blocks.length > 0) pushMessage(messages, 'assistant', blocks);
    },
    tool: (m) => pushMessage(messages, 'user', [{ type: 'tool_result', tool_use_id: m.tool_call_id, content: textOf(m.content) }]),
  });
  const out: Obj = { model: body.model, messages };
  if (system.length > 0) out.system = system.join('\n');
  out.max_tokens = body.max_completion_tokens ?? body.max_tokens ?? DEFAULT_MAX_TOKENS;
  copy(body, 'temperature', out);
  copy(body, 'top_p', out);
  copy(body, 'top_k', out);
  if (typeof body.stop === 'string') out.stop_sequences = [body.stop];
  else if (Array.isArray(body.stop)) out.stop_sequences = body.stop;
  if (body.stream === true) out.stream = true;
  if (Array.isArray(body.tools)) {
    const tools = body.tools
      .filter((t: unknown) => isObj(t) && t.type === 'function' && isObj(t.function))
      .map((t: Obj) => {
        const tool: Obj = { name: t.function.name, input_schema: isObj(t.function.parameters) ? t.function.parameters : { type: 'object', properties: {} } };
        if (typeof t.function.description === 'string') tool.description = t.function.description;
        return tool;
      });
    if (tools.length > 0) out.tools = tools;
  }
  const choice = toolChoiceToAnthropic(body.tool_choice, body.parallel_tool_calls);
  if (choice && out.tools) out.tool_choice = choice;
  if (typeof body.user === 'string') out.metadata = { user_id: body.user };
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Messages response -> Completions response

/** An Anthropic Messages response as an OpenAI Chat Completions response. */
export function messagesResponseToCompletions(resp: Obj): Obj {
  const blocks: Obj[] = Array.isArray(resp.content) ? resp.content : [];
  let text = '';
  const toolCalls: Obj[] = [];
  for (const b of blocks) {
    if (!isObj(b)) continue;
    if (b.type === 'text' && typeof b.text === 'string') text += b.text;
    else if (b.type === 'tool_use') toolCalls.push({ id: b.id, type: 'function', function: { name: b.name, arguments: JSON.stringify(b.input ?? {}) } });
  }
  const message: Obj = { role: 'assistant', content: text || toolCalls.length === 0 ? text : null };
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  const out: Obj = {
    id: resp.id ?? `chatcmpl-${randomUUID()}`,
    object: 'chat.completion',
    created: nowSeconds(),
    model: resp.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: anthropicStopToFinish(resp.stop_reason) ?? 'stop' }],
  };
  const usage = messagesUsageToCompletions(resp.usage);
  if (usage) out.usage = usage;
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Messages stream -> Completions stream

/** Anthropic `message_start … message_stop` events as `chat.completion.chunk`s, ending with `[DONE]`. */
export class MessagesToCompletionsStream implements StreamTranslator {
  private id = `chatcmpl-${randomUUID()}`;
  private model: unknown = undefined;
  private readonly created = nowSeconds();
  private readonly toolIndex = new Map<number, number>();
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
          return [this.chunk({ tool_calls: [{ index, id: b.id, type: 'function', function: { name: b.name, arguments: '' } }] })];
        }
        if (b.type === 'text' && typeof b.text === 'string' && b.text) return [this.chunk({ content: b.text })];
        return [];
      }
      case 'content_block_delta': {
        const delta: Obj = isObj(d.delta) ? d.delta : {};
        if (delta.type === 'text_delta') return [this.chunk({ content: delta.text })];
        if (delta.type === 'input_json_delta') {
          const index = this.toolIndex.get(d.index);
          if (index === undefined || !delta.partial_json) return [];
          return [this.chunk({ tool_calls: [{ index, function: { arguments: delta.partial_json } }] })];
        }
        return [];
      }
      case 'message_delta': {
        if (isObj(d.usage)) for (const [k, v] of Object.entries(d.usage)) if (v !== null && v !== undefined) this.usage[k] = v;
        const finish = anthropicStopToFinish(isObj(d.delta) ? d.delta.stop_reason : undefined);
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
        return []; // ping, content_block_stop, thinking
    }
  }

  end(): LlmEvent[] {
    return [];
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Messages request -> Completions request

function blockToPart(b: Obj): Obj | undefined {
  if (b.type === 'text' && typeof b.text === 'string') return { type: 'text', text: b.text };
  if (b.type === 'image' && isObj(b.source)) {
    if (b.source.type === 'base64') return { type: 'image_url', image_url: { url: `data:${b.source.media_type};base64,${b.source.data}` } };
    if (b.source.type === 'url') return { type: 'image_url', image_url: { url: b.source.url } };
  }
  return undefined;
}

function toolResultText(content: unknown): string {
  return typeof content === 'string' ? content : textOf(content, '\n');
}

function toolChoiceToOpenAi(choice: unknown): { choice?: unknown; parallel?: boolean } {
  if (!isObj(choice)) return {};
  const parallel = choice.disable_parallel_tool_use === true ? false : undefined;
  switch (choice.type) {
    case 'auto':
      return { choice: 'auto', parallel };
    case 'any':
      return { choice: 'required', parallel };
    case 'none':
      return { choice: 'none' };
    case 'tool':
      return { choice: { type: 'function', function: { name: choice.name } }, parallel };
    default:
      return {};
  }
}

/** An Anthropic Messages request as an OpenAI Chat Completions request (usage requested on streams). */
export function messagesRequestToCompletions(body: Obj): Obj {
  const messages: Obj[] = [];
  if (typeof body.system === 'string' && body.system) messages.push({ role: 'system', content: body.system });
  else if (Array.isArray(body.system)) {
    const text = textOf(body.system, '\n');
    if (text) messages.push({ role: 'system', content: text });
  }
  for (const m of Array.isArray(body.messages) ? body.messages : []) {
    if (!isObj(m)) continue;
    if (typeof m.content === 'string') {
      messages.push({ role: m.role === 'assistant' ? 'assistant' : 'user', content: m.content });
      continue;
    }
    const blocks: Obj[] = Array.isArray(m.content) ? m.content.filter(isObj) : [];
    if (m.role === 'assistant') {
      let text = '';
      const toolCalls: Obj[] = [];
      for (const b of blocks) {
        if (b.type === 'text' && typeof b.text === 'string') text += b.text;
        else if (b.type === 'tool_use') toolCalls.push({ id: b.id, type: 'function', function: { name: b.name, arguments: JSON.stringify(b.input ?? {}) } });
      }
      const msg: Obj = { role: 'assistant', content: text || null };
      if (toolCalls.length > 0) msg.tool_calls = toolCalls;
      if (text || toolCalls.length > 0) messages.push(msg);
      continue;
    }
    const parts: Obj[] = [];
    for (const b of blocks) {
      if (b.type === 'tool_result') messages.push({ role: 'tool', tool_call_id: b.tool_use_id, content: toolResultText(b.content) });
      else {
        const p = blockToPart(b);
        if (p) parts.push(p);
      }
    }
    if (parts.length === 1 && parts[0]!.type === 'text') messages.push({ role: 'user', content: parts[0]!.text });
    else if (parts.length > 0) messages.push({ role: 'user', content: parts });
  }
  const out: Obj = { model: body.model, messages };
  copy(body, 'max_tokens', out, 'max_completion_tokens');
  copy(body, 'temperature', out);
  copy(body, 'top_p', out);
  if (Array.isArray(body.stop_sequences) && body.stop_sequences.length > 0) out.stop = body.stop_sequences;
  if (body.stream === true) {
    out.stream = true;
    out.stream_options = { include_usage: true };
  }
  if (Array.isArray(body.tools)) {
    // Server tools (web search, code execution) have no schema and no Chat Completions equivalent.
    const tools = body.tools
      .filter((t: unknown) => isObj(t) && typeof t.name === 'string' && (t.type === undefined || t.type === 'custom'))
      .map((t: Obj) => {
        const fn: Obj = { name: t.name, parameters: isObj(t.input_schema) ? t.input_schema : { type: 'object', properties: {} } };
        if (typeof t.description === 'string') fn.description = t.description;
        return { type: 'function', function: fn };
      });
    if (tools.length > 0) out.tools = tools;
  }
  if (out.tools) {
    const { choice, parallel } = toolChoiceToOpenAi(body.tool_choice);
    if (choice !== undefined) out.tool_choice = choice;
    if (parallel !== undefined) out.parallel_tool_calls = parallel;
  }
  if (isObj(body.metadata) && typeof body.metadata.user_id === 'string') out.user = body.metadata.user_id;
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Completions response -> Messages response

/** An OpenAI Chat Completions response as an Anthropic Messages response. */
export function completionsResponseToMessages(resp: Obj): Obj {
  const choice: Obj = Array.isArray(resp.choices) && isObj(resp.choices[0]) ? resp.choices[0] : {};
  const msg: Obj = isObj(choice.message) ? choice.message : {};
  const content: Obj[] = [];
  const text = textOf(msg.content);
  if (text) content.push({ type: 'text', text });
  content.push(...toolCallsOf(msg).map(toolUseBlock));
  return {
    id: resp.id ?? `msg_${randomUUID()}`,
    type: 'message',
    role: 'assistant',
    model: resp.model,
    content,
    stop_reason: finishToAnthropicStop(choice.finish_reason) ?? 'end_turn',
    stop_sequence: null,
    usage: completionsUsageToMessages(resp.usage),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Completions stream -> Messages stream

/** `chat.completion.chunk`s as Anthropic `message_start … message_stop` events. */
export class CompletionsToMessagesStream implements StreamTranslator {
  private started = false;
  private finished = false;
  private block = -1;
  private open: 'text' | 'tool' | undefined = undefined;
  private readonly toolBlocks = new Map<number, number>();
  private stop: string | null = null;
  private usage: Obj | undefined = undefined;

  private ev(type: string, data: Obj): LlmEvent {
    return { type, data: { type, ...data } };
  }

  private start(d: Obj): LlmEvent[] {
    if (this.started) return [];
    this.started = true;
    const message = { id: d.id ?? `msg_${randomUUID()}`, type: 'message', role: 'assistant', content: [], model: d.model, stop_reason: null, stop_sequence: null, usage: { input_tokens: 0, output_tokens: 0 } };
    return [this.ev('message_start', { message })];
  }

  private close(out: LlmEvent[]): void {
    if (this.open !== undefined) out.push(this.ev('content_block_stop', { index: this.block }));
    this.open = undefined;
  }

  event(e: LlmEvent): LlmEvent[] {
    if (this.finished) return [];
    if (e.done) return this.finish();
    const d = e.data;
    if (isObj(d.error)) {
      this.finished = true;
      return [this.ev('error', { error: { type: d.error.type ?? 'api_error', message: d.error.message ?? 'upstream error' } })];
    }
    const out = this.start(d);
    if (isObj(d.usage)) this.usage = d.usage;
    const choice: Obj | undefined = Array.isArray(d.choices) ? d.choices.find((c: Obj) => isObj(c) && (c.index ?? 0) === 0) : undefined;
    if (!choice) return out;
    const delta: Obj = isObj(choice.delta) ? choice.delta : {};
    if (typeof delta.content === 'string' && delta.content) {
      if (this.open !== 'text') {
        this.close(out);
        this.block++;
        this.open = 'text';
        out.push(this.ev('content_block_start', { index: this.block, content_block: { type: 'text', text: '' } }));
      }
      out.push(this.ev('content_block_delta', { index: this.block, delta: { type: 'text_delta', text: delta.content } }));
    }
    for (const tc of Array.isArray(delta.tool_calls) ? delta.tool_calls : []) {
      if (!isObj(tc)) continue;
      const index = typeof tc.index === 'number' ? tc.index : 0;
      let block = this.toolBlocks.get(index);
      if (block === undefined) {
        this.close(out);
        block = ++this.block;
        this.toolBlocks.set(index, block);
        this.open = 'tool';
        const name = isObj(tc.function) ? tc.function.name : undefined;
        out.push(this.ev('content_block_start', { index: block, content_block: { type: 'tool_use', id: tc.id ?? `toolu_${randomUUID()}`, name: name ?? '', input: {} } }));
      }
      const args = isObj(tc.function) ? tc.function.arguments : undefined;
      if (typeof args === 'string' && args) out.push(this.ev('content_block_delta', { index: block, delta: { type: 'input_json_delta', partial_json: args } }));
    }
    if (choice.finish_reason) this.stop = finishToAnthropicStop(choice.finish_reason);
    return out;
  }

  private finish(): LlmEvent[] {
    if (this.finished || !this.started) return [];
    this.finished = true;
    const out: LlmEvent[] = [];
    this.close(out);
    const u = completionsUsageToMessages(this.usage);
    out.push(this.ev('message_delta', { delta: { stop_reason: this.stop ?? 'end_turn', stop_sequence: null }, usage: u }));
    out.push(this.ev('message_stop', {}));
    return out;
  }

  /** A provider that ends its stream without `[DONE]` after the finish reason still gets a complete message. */
  end(): LlmEvent[] {
    return this.stop !== null ? this.finish() : [];
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Errors

/** Anthropic's error `type` for an HTTP status. */
export function anthropicErrorType(status: number): string {
  if (status === 400) return 'invalid_request_error';
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 413) return 'request_too_large';
  if (status === 429) return 'rate_limit_error';
  if (status === 529 || status === 503) return 'overloaded_error';
  return 'api_error';
}

/** OpenAI's error `type` for an HTTP status. */
export function openAiErrorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}
