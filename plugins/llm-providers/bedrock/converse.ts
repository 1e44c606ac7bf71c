// OpenAI Chat Completions <-> AWS Bedrock Converse: requests, responses and streams (BEHAVIOUR.md §4.6).
import { randomUUID } from 'node:crypto';
import { appendTurn, canonicalExtra, checkChatMessages, imageUrlOf, narrowToAllowedTools, toolCallsOf, walkChatMessages } from '../../lib/llm/chat-messages.ts';
import { addThinking, thinkingBudgetOf } from '../../lib/llm/thinking.ts';
import { DONE } from '../../lib/llm/events.ts';
import type { LlmEvent, StreamTranslator } from '../../lib/llm/events.ts';
import { isObj, nowSeconds, parseArguments, parseDataUrl, textOf } from '../../lib/llm/json.ts';
import type { Obj } from '../../lib/llm/json.ts';
import { stopReasonToFinish } from '../../lib/llm/completions-messages/mapping.ts';
import { DEFAULT_MAX_TOKENS } from '../../lib/llm/completions-messages/requests.ts';
import { completionsUsageFromCounts, usageFromCacheCounts } from '../../lib/llm/usage.ts';
import type { LlmUsage } from '../../lib/llm/usage.ts';
import type { LlmFormat } from '../../lib/slots/ai.ts';
import { outputBytes } from '../../lib/llm/output-bytes.ts';
import { isAnthropicModel, isNova2Model } from './count-tokens.ts';

/** The text of a tool result that had none (a tool with no output). */
const EMPTY_TOOL_RESULT = '(no output)';

const IMAGE_FORMATS: Record<string, string> = { 'image/png': 'png', 'image/jpeg': 'jpeg', 'image/jpg': 'jpeg', 'image/gif': 'gif', 'image/webp': 'webp' };

function userContent(content: unknown): Obj[] {
  if (typeof content === 'string') return content ? [{ text: content }] : [];
  const out: Obj[] = [];
  for (const p of Array.isArray(content) ? content : []) {
    if (typeof p === 'string') out.push({ text: p });
    else if (!isObj(p)) continue;
    else if (p.type === 'text' && typeof p.text === 'string' && p.text) out.push({ text: p.text });
    else if (p.type === 'image_url') {
      const url = imageUrlOf(p);
      const data = typeof url === 'string' ? parseDataUrl(url) : undefined;
      // Converse takes image bytes only (base64 in JSON); remote image URLs cannot be passed on (refused before this,
      // unless the backend drops such parts: unhonoured.ts). An image of a type it does not read is refused: left out,
      // the model would answer without it.
      if (!data) continue;
      if (!Object.hasOwn(IMAGE_FORMATS, data.mediaType)) throw new Error(`Converse takes png, jpeg, gif and webp images, not \`${data.mediaType.slice(0, 64)}\``);
      out.push({ image: { format: IMAGE_FORMATS[data.mediaType], source: { bytes: data.data } } });
    }
  }
  return out;
}

/** Anthropic thinking blocks as Converse `reasoningContent` blocks, signatures and redacted data as they came. */
function reasoningBlocks(thinking: readonly Obj[] | undefined): Obj[] {
  const out: Obj[] = [];
  for (const b of thinking ?? []) {
    if (b.type === 'redacted_thinking') out.push({ reasoningContent: { redactedContent: b.data } });
    else {
      const text: Obj = { text: b.thinking };
      if (typeof b.signature === 'string' && b.signature) text.signature = b.signature;
      out.push({ reasoningContent: { reasoningText: text } });
    }
  }
  return out;
}

/** A Converse `reasoningContent` block (answer or stream delta) as an Anthropic thinking block, or a piece of one. */
function thinkingOf(r: Obj): Obj | undefined {
  if (typeof r.redactedContent === 'string') return { type: 'redacted_thinking', data: r.redactedContent };
  const t: Obj = isObj(r.reasoningText) ? r.reasoningText : r;
  const piece: Obj = { type: 'thinking' };
  if (typeof t.text === 'string') piece.thinking = t.text;
  if (typeof t.signature === 'string') piece.signature = t.signature;
  return piece.thinking !== undefined || piece.signature !== undefined ? piece : undefined;
}

/** OpenAI's efforts as Nova 2's three levels; `none` (or another value) asks for no reasoning, Nova's default. */
const NOVA_EFFORT: Readonly<Record<string, string>> = { minimal: 'low', low: 'low', medium: 'medium', high: 'high', xhigh: 'high' };
const novaEffort = (effort: unknown): string | undefined => (typeof effort === 'string' && Object.hasOwn(NOVA_EFFORT, effort) ? NOVA_EFFORT[effort] : undefined);

/** An OpenAI Chat Completions request as a Bedrock Converse request (the model goes in the path). */
export function completionsRequestToConverse(body: Obj): Obj {
  checkChatMessages(body);
  const claude = typeof body.model === 'string' && isAnthropicModel(body.model);
  const system: Obj[] = [];
  const messages: Obj[] = [];
  walkChatMessages(body, {
    system: (text) => {
      if (text) system.push({ text });
    },
    user: (m) => appendTurn(messages, 'user', 'content', userContent(m.content)),
    assistant: (m) => {
      // Claude's reasoning of the history goes back first, with its signature: a tool-use turn after thinking is
      // refused without it.
      const content: Obj[] = claude ? reasoningBlocks(canonicalExtra(m, 'thinking')) : [];
      const text = textOf(m.content);
      if (text) content.push({ text });
      for (const tc of toolCallsOf(m)) {
        content.push({ toolUse: { toolUseId: tc.id ?? `tooluse_${randomUUID()}`, name: tc.function.name, input: parseArguments(tc.function.arguments) } });
      }
      appendTurn(messages, 'assistant', 'content', content);
    },
    tool: (m) => {
      const text = textOf(m.content);
      // Converse refuses a blank text block (a ValidationException on every later turn of the conversation).
      const result: Obj = { toolUseId: m.tool_call_id, content: [{ text: text.trim() ? text : EMPTY_TOOL_RESULT }] };
      // A failed tool (an Anthropic `is_error` result): Converse's own flag for it.
      if (canonicalExtra(m, 'toolError') === true) result.status = 'error';
      appendTurn(messages, 'user', 'content', [{ toolResult: result }]);
    },
  });
  const out: Obj = { messages };
  if (system.length > 0) out.system = system;
  const inference: Obj = {};
  // Claude's thinking budget must stay below the output limit: one the client did not set is Anthropic's default
  // for translated requests, so the budget has a limit to fit under.
  const asked = body.max_completion_tokens ?? body.max_tokens;
  const max = typeof asked !== 'number' && claude && thinkingBudgetOf(body, undefined) !== undefined ? DEFAULT_MAX_TOKENS : asked;
  if (typeof max === 'number') inference.maxTokens = max;
  if (typeof body.temperature === 'number') inference.temperature = body.temperature;
  if (typeof body.top_p === 'number') inference.topP = body.top_p;
  if (typeof body.stop === 'string') inference.stopSequences = [body.stop];
  else if (Array.isArray(body.stop)) inference.stopSequences = body.stop;
  if (Object.keys(inference).length > 0) out.inferenceConfig = inference;
  // Claude's `top_k` (an Anthropic client's, kept beside the canonical body, or one an OpenAI client sent) is a model
  // field on Converse; another model refuses it.
  const topK = typeof body.top_k === 'number' ? body.top_k : canonicalExtra(body, 'topK');
  const fields: Obj = {};
  if (topK !== undefined && claude) fields.top_k = topK;
  // Claude's extended thinking is a model field on Converse, spelt as the Messages API spells it.
  const budget = claude ? thinkingBudgetOf(body, max) : undefined;
  if (budget !== undefined) fields.thinking = budget === 'adaptive' ? { type: 'adaptive' } : { type: 'enabled', budget_tokens: budget };
  // Nova 2's reasoning is a level, not a budget (ADR 0180): an Anthropic client's budget came as its effort bucket.
  const level = typeof body.model === 'string' && isNova2Model(body.model) ? novaEffort(body.reasoning_effort) : undefined;
  if (level !== undefined) fields.reasoningConfig = { type: 'enabled', maxReasoningEffort: level };
  if (Object.keys(fields).length > 0) out.additionalModelRequestFields = fields;
  const { tools: declared, choice } = narrowToAllowedTools(body);
  // `none` has no Converse form: no tools are declared, so the model cannot call one (a history with tool calls
  // declares those it called, below).
  if (Array.isArray(declared) && choice !== 'none') {
    const tools = declared
      .filter((t: unknown) => isObj(t) && t.type === 'function' && isObj(t.function))
      .map((t: Obj) => {
        const spec: Obj = { name: t.function.name, inputSchema: { json: isObj(t.function.parameters) ? t.function.parameters : { type: 'object', properties: {} } } };
        if (typeof t.function.description === 'string') spec.description = t.function.description;
        return { toolSpec: spec };
      });
    if (tools.length > 0) {
      const config: Obj = { tools };
      if (choice === 'auto') config.toolChoice = { auto: {} };
      else if (choice === 'required') config.toolChoice = { any: {} };
      else if (isObj(choice) && isObj(choice.function)) config.toolChoice = { tool: { name: choice.function.name } };
      out.toolConfig = config;
    }
  }
  // Converse refuses toolUse/toolResult blocks without a toolConfig (a last turn sent without tools, say): the tools
  // the history called are declared, with no schema beyond an object.
  if (out.toolConfig === undefined) {
    const called = new Set<string>();
    for (const m of messages) for (const c of m.content as Obj[]) if (isObj(c.toolUse) && typeof c.toolUse.name === 'string') called.add(c.toolUse.name);
    if (called.size > 0) out.toolConfig = { tools: [...called].map((name) => ({ toolSpec: { name, inputSchema: { json: { type: 'object' } } } })) };
  }
  return out;
}

/** Converse usage as OpenAI usage (prompt tokens include cache reads and writes). */
export function converseUsageToCompletions(u: unknown): Obj | undefined {
  return isObj(u) ? completionsUsageFromCounts(u.inputTokens, u.outputTokens, u.cacheReadInputTokens, u.cacheWriteInputTokens) : undefined;
}

/** A Converse response as an OpenAI Chat Completions response (Converse names no model: the request's is used). */
export function converseResponseToCompletions(resp: Obj, model: string): Obj {
  const content: Obj[] = isObj(resp.output) && isObj(resp.output.message) && Array.isArray(resp.output.message.content) ? resp.output.message.content : [];
  let text = '';
  const toolCalls: Obj[] = [];
  const thinking: Obj[] = [];
  for (const c of content) {
    if (!isObj(c)) continue;
    if (typeof c.text === 'string') text += c.text;
    else if (isObj(c.reasoningContent)) {
      const block = thinkingOf(c.reasoningContent);
      if (block) thinking.push(block.type === 'thinking' ? { type: 'thinking', thinking: block.thinking ?? '', signature: block.signature ?? '' } : block);
    } else if (isObj(c.toolUse)) toolCalls.push({ id: c.toolUse.toolUseId, type: 'function', function: { name: c.toolUse.name, arguments: JSON.stringify(c.toolUse.input ?? {}) } });
  }
  const message: Obj = { role: 'assistant', content: text || toolCalls.length === 0 ? text : null };
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  if (thinking.length > 0) addThinking(message, thinking);
  const out: Obj = {
    id: `chatcmpl-${randomUUID()}`,
    object: 'chat.completion',
    created: nowSeconds(),
    model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: stopReasonToFinish(resp.stopReason) ?? 'stop' }],
  };
  const usage = converseUsageToCompletions(resp.usage);
  if (usage) out.usage = usage;
  return out;
}

/** Converse stream events (`messageStart ... metadata`) as `chat.completion.chunk`s, ending with `[DONE]`. */
export class ConverseToCompletionsStream implements StreamTranslator {
  private readonly id = `chatcmpl-${randomUUID()}`;
  private readonly created = nowSeconds();
  private readonly model: string;
  private readonly toolIndex = new Map<number, number>();
  /** Tool blocks that have had no input yet: a tool without arguments streams none, and `{}` is sent at its stop. */
  private readonly noInput = new Set<number>();
  private nextTool = 0;
  private stopped = false;
  private finished = false;

  constructor(model: string) {
    this.model = model;
  }

  private chunk(delta: Obj, finish: string | null = null): LlmEvent {
    return { type: undefined, data: { id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] } };
  }

  private done(usage: Obj | undefined): LlmEvent[] {
    if (this.finished) return [];
    this.finished = true;
    const out: LlmEvent[] = [];
    if (usage) out.push({ type: undefined, data: { id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.model, choices: [], usage } });
    out.push(DONE);
    return out;
  }

  event(e: LlmEvent): LlmEvent[] {
    if (this.finished) return [];
    const d = e.data;
    switch (e.type) {
      case 'messageStart':
        return [this.chunk({ role: 'assistant', content: '' })];
      case 'contentBlockStart': {
        const start: Obj = isObj(d.start) ? d.start : {};
        if (!isObj(start.toolUse)) return [];
        const index = this.nextTool++;
        this.toolIndex.set(d.contentBlockIndex, index);
        this.noInput.add(d.contentBlockIndex);
        return [this.chunk({ tool_calls: [{ index, id: start.toolUse.toolUseId, type: 'function', function: { name: start.toolUse.name, arguments: '' } }] })];
      }
      case 'contentBlockDelta': {
        const delta: Obj = isObj(d.delta) ? d.delta : {};
        if (typeof delta.text === 'string') return delta.text ? [this.chunk({ content: delta.text })] : [];
        if (isObj(delta.reasoningContent)) {
          const piece = thinkingOf(delta.reasoningContent);
          if (!piece) return [];
          const chunk: Obj = {};
          addThinking(chunk, [piece]);
          return [this.chunk(chunk)];
        }
        if (isObj(delta.toolUse)) {
          const index = this.toolIndex.get(d.contentBlockIndex);
          const input = delta.toolUse.input;
          if (index === undefined || typeof input !== 'string' || !input) return [];
          this.noInput.delete(d.contentBlockIndex);
          return [this.chunk({ tool_calls: [{ index, function: { arguments: input } }] })];
        }
        return [];
      }
      case 'contentBlockStop':
        // OpenAI clients parse a call's arguments as JSON: an empty text is not JSON.
        if (!this.noInput.delete(d.contentBlockIndex)) return [];
        return [this.chunk({ tool_calls: [{ index: this.toolIndex.get(d.contentBlockIndex), function: { arguments: '{}' } }] })];
      case 'messageStop':
        this.stopped = true;
        return [this.chunk({}, stopReasonToFinish(d.stopReason) ?? 'stop')];
      case 'metadata':
        return this.done(converseUsageToCompletions(d.usage));
      default:
        if (e.type?.startsWith('exception:')) {
          this.finished = true;
          const exception = streamException(e.type, d);
          return [{ type: undefined, data: { error: { message: exception.message ?? 'upstream error', type: exception.type, param: null, code: exception.status ?? null } } }];
        }
        return [];
    }
  }

  end(): LlmEvent[] {
    return this.stopped ? this.done(undefined) : [];
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Converse as an LLM format (ADR 0032): the Bedrock provider's own wire format, carried by its instance
// (`LlmProviderInstance.formats`), so the `ai` backend and the format registry need not know it.

/** Bedrock Converse `usage` (input normalised to include cache reads and writes). */
export function usageFromConverse(u: unknown): LlmUsage | undefined {
  return isObj(u) ? usageFromCacheCounts(u.inputTokens, u.outputTokens, u.cacheReadInputTokens, u.cacheWriteInputTokens) : undefined;
}

/**
 * The HTTP status of a ConverseStream exception message (`:exception-type`, lowerCamel in the event stream), as the
 * Bedrock Runtime API answers the same exception before a stream: what a failed call is counted by.
 */
const EXCEPTION_STATUS: Readonly<Record<string, number>> = {
  validationException: 400,
  accessDeniedException: 403,
  resourceNotFoundException: 404,
  modelTimeoutException: 408,
  modelErrorException: 424,
  modelStreamErrorException: 424,
  throttlingException: 429,
  modelNotReadyException: 429,
  internalServerException: 500,
  serviceUnavailableException: 503,
};

/** A ConverseStream exception as the error object the call's failure is read from (its status, when known). */
function streamException(type: string, data: Obj): Obj {
  const name = type.slice('exception:'.length);
  const key = name.charAt(0).toLowerCase() + name.slice(1);
  return { type: name, status: Object.hasOwn(EXCEPTION_STATUS, key) ? EXCEPTION_STATUS[key] : undefined, message: data.message ?? data.Message };
}

export const converseFormat: LlmFormat = {
  name: 'converse',
  family: 'aws',
  operation: 'chat',
  requestFromCanonical: completionsRequestToConverse,
  responseToCanonical: (b, model) => converseResponseToCompletions(b, model),
  streamToCanonical: (model) => new ConverseToCompletionsStream(model),
  observeResponse: (body, call) => call.addUsage(usageFromConverse(body.usage)),
  observedMembers: ['usage'],
  // Converse answers carry no id (AWS's request id is a header).
  outcomeOfResponse: (body, sink) => sink.addFinishReason(body.stopReason),
  outcomeMembers: ['stopReason'],
  outcomeOfEvent: (e, sink) => e.type === 'messageStop' && sink.addFinishReason(e.data.stopReason),
  observeEvent(e, call) {
    if (e.done) return;
    if (e.type === 'metadata') call.addUsage(usageFromConverse(e.data.usage));
    // An exception message ends the stream: the call failed (ADR 0135), as an error event of the other APIs does.
    else if (e.type?.startsWith('exception:')) call.streamError?.(streamException(e.type, e.data));
  },
  // `contentBlockDelta`: text, a tool call's `input` as partial JSON, reasoning text.
  outputBytes: (data) => outputBytes(data, ['text', 'input']),
};
