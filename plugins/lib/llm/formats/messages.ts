// Anthropic Messages (`messages`) and its `count_tokens` (`anthropicTokenCount`): translation to and from the
// canonical form (plugins/lib/llm/completions-messages/), usage, stream events, stream assembly, guarded text and
// prompt insertion (ADR 0032).
import { messagesAnswerEvents } from './answer-events.ts';
import { completionsResponseToMessages, messagesResponseToCompletions } from '../completions-messages/answers.ts';
import { completionsRequestToMessages, messagesRequestToCompletions } from '../completions-messages/requests.ts';
import { CompletionsToMessagesStream, MessagesToCompletionsStream } from '../completions-messages/streams.ts';
import { isObj } from '../json.ts';
import type { Obj } from '../json.ts';
import { usageFromCacheCounts, usageFromMessages } from '../usage.ts';
import { typeOf } from './assembly.ts';
import type { Builder, StreamText, TextRef } from './assembly.ts';
import { MODEL_AND_USAGE, observeModelAndUsage } from './format.ts';
import type { LlmFormat, PromptMessage } from './format.ts';
import { argumentsSlot, CHAT_PARTS, messageListSlots, partSlots, promptContentSlots, slot, stringSlot } from './slots.ts';
import type { TextSlot } from './slots.ts';
import { outputBytes } from '../output-bytes.ts';

// ---------------------------------------------------------------------------------------------------------------
// Anthropic Messages: `message_start`, `content_block_*`, `message_delta`, `message_stop` -> `message`

interface BlockAcc {
  readonly block: Obj;
  text: string;
  json: string | undefined;
  readonly refs: TextRef[];
  /** Text given by `content_block_start` (normally none). */
  start?: TextRef;
}

const assembleMessages: Builder = (events) => {
  let message: Obj | undefined;
  const blocks = new Map<number, BlockAcc>();
  events.forEach((e, at) => {
    const d = e.data;
    if (!d) return;
    switch (typeOf(e)) {
      case 'message_start':
        if (isObj(d.message)) message = structuredClone(d.message);
        break;
      case 'content_block_start': {
        if (typeof d.index !== 'number' || !isObj(d.content_block)) break;
        const cb = d.content_block;
        const acc: BlockAcc = { block: structuredClone(cb), text: typeof cb.text === 'string' ? cb.text : '', json: undefined, refs: [] };
        blocks.set(d.index, acc);
        // Text given at the start (normally none) is kept apart: the masked text goes to the first delta when there is one.
        const startInput = (cb.type === 'tool_use' || cb.type === 'server_tool_use') && isObj(cb.input) && Object.keys(cb.input).length > 0;
        if (startInput) {
          // A tool call's input given whole at its start (no deltas): a masked one is written back there.
          acc.json = JSON.stringify(cb.input);
          acc.start = {
            at,
            set(text) {
              cb.input = JSON.parse(text) as unknown;
            },
            clear() {
              cb.input = {};
              return false;
            },
          };
        } else if (cb.type === 'text' && typeof cb.text === 'string' && cb.text) {
          acc.start = {
            at,
            set(text) {
              cb.text = text;
            },
            clear() {
              cb.text = '';
              return false;
            },
          };
        }
        break;
      }
      case 'content_block_delta': {
        const acc = typeof d.index === 'number' ? blocks.get(d.index) : undefined;
        const delta = d.delta;
        if (!acc || !isObj(delta)) break;
        // Each guarded text (ADR 0165) is carried by deltas of one kind; a masked one goes whole in the first.
        const key = delta.type === 'text_delta' ? 'text' : delta.type === 'thinking_delta' ? 'thinking' : delta.type === 'input_json_delta' ? 'partial_json' : undefined;
        if (key !== undefined && typeof delta[key] === 'string') {
          if (key === 'text') acc.text += delta.text;
          else if (key === 'thinking') acc.block.thinking = (typeof acc.block.thinking === 'string' ? acc.block.thinking : '') + delta.thinking;
          // Deltas after an input given at the start replace it (as the SDKs put it together).
          else acc.json = (acc.refs.length ? (acc.json ?? '') : '') + delta.partial_json;
          acc.refs.push({
            at,
            set(text) {
              delta[key] = text;
            },
            clear: () => true,
          });
        } else if (delta.type === 'signature_delta' && typeof delta.signature === 'string') acc.block.signature = delta.signature;
        break;
      }
      case 'message_delta': {
        message ??= {};
        if (isObj(d.delta)) {
          if (d.delta.stop_reason !== undefined) message.stop_reason = d.delta.stop_reason;
          if (d.delta.stop_sequence !== undefined) message.stop_sequence = d.delta.stop_sequence;
        }
        if (isObj(d.usage)) {
          const usage: Obj = isObj(message.usage) ? message.usage : (message.usage = {});
          for (const [k, v] of Object.entries(d.usage)) if (v !== null && v !== undefined) usage[k] = v;
        }
        break;
      }
      default:
        break;
    }
  });
  const ordered = [...blocks.entries()].sort(([a], [b]) => a - b).map(([, acc]) => acc);
  const content = ordered.map((acc) => {
    const block = acc.block;
    if (block.type === 'text') block.text = acc.text;
    if (acc.json !== undefined) {
      try {
        block.input = acc.json.trim() ? (JSON.parse(acc.json) as unknown) : {};
      } catch {
        // Input cut off (at max_tokens) stays the text that was streamed: the guards still read it (ADR 0165).
        block.input = acc.json;
      }
    }
    return block;
  });
  const body: Obj = { type: 'message', role: 'assistant', ...(message ?? {}), content };
  const texts: StreamText[] = [];
  ordered.forEach((acc, k) => {
    const block = body.content[k];
    if (block.type === 'text') texts.push({ read: () => block.text, refs: acc.start ? [...acc.refs, acc.start] : acc.refs, snapshots: [] });
    else if (block.type === 'thinking' && acc.refs.length) texts.push({ read: () => block.thinking, refs: acc.refs, snapshots: [] });
    // The input as its JSON text, as guards see it; a masked one is streamed whole in the first delta.
    else if (acc.json !== undefined) {
      const read = (): string => (typeof block.input === 'string' ? block.input : JSON.stringify(block.input));
      texts.push({ read, refs: acc.start ? [...acc.refs, acc.start] : acc.refs, snapshots: [] });
    }
  });
  return { body, texts, bodyEvents: [] };
};


// ---------------------------------------------------------------------------------------------------------------

const isSystem = (role: string): boolean => role === 'system' || role === 'developer';

/**
 * Anthropic Messages: `system`/`developer` entries go into the top-level `system` (as text blocks around the
 * client's own system prompt; a lone string stays a string), the others into `messages`.
 */
export function messagesPrompts(body: Obj, prepend: readonly PromptMessage[], append: readonly PromptMessage[]): void {
  const before = prepend.filter((m) => isSystem(m.role)).map((m) => m.content);
  const after = append.filter((m) => isSystem(m.role)).map((m) => m.content);
  if (before.length || after.length) {
    const existing = body.system;
    const own: unknown[] = typeof existing === 'string' ? [{ type: 'text', text: existing }] : Array.isArray(existing) ? existing : [];
    const blocks = [...before.map((text) => ({ type: 'text', text })), ...own, ...after.map((text) => ({ type: 'text', text }))];
    body.system = existing === undefined && blocks.length === 1 ? (blocks[0] as { text: string }).text : blocks;
  }
  const turn = (m: PromptMessage) => ({ role: m.role, content: m.content });
  const pre = prepend.filter((m) => !isSystem(m.role)).map(turn);
  const post = append.filter((m) => !isSystem(m.role)).map(turn);
  if (pre.length || post.length) body.messages = [...pre, ...(Array.isArray(body.messages) ? body.messages : []), ...post];
}

/** The system prompt (a string or a list of text blocks), then the messages. */
export function messagesRequestSlots(body: Obj, out: TextSlot[]): void {
  promptContentSlots('system', body, 'system', out);
  messageListSlots(body, out);
}

/** An answer's text blocks, thinking text and tool-call inputs (ADR 0165). */
export function messagesResponseSlots(body: Obj, out: TextSlot[]): void {
  if (!Array.isArray(body.content)) return;
  const role = typeof body.role === 'string' ? body.role : 'assistant';
  for (const block of body.content) {
    if (!isObj(block)) continue;
    if (block.type === 'thinking') stringSlot(role, block, 'thinking', out);
    else if (block.type === 'tool_use' || block.type === 'server_tool_use') argumentsSlot(role, block, 'input', out);
    else partSlots(role, [block], CHAT_PARTS, out);
  }
}

export const messages: LlmFormat = {
  name: 'messages',
  family: 'anthropic',
  operation: 'chat',
  requestToCanonical: messagesRequestToCompletions,
  requestFromCanonical: completionsRequestToMessages,
  responseToCanonical: (b) => messagesResponseToCompletions(b),
  responseFromCanonical: (b) => completionsResponseToMessages(b),
  streamToCanonical: () => new MessagesToCompletionsStream(),
  streamFromCanonical: (model) => new CompletionsToMessagesStream(model),
  observeResponse: observeModelAndUsage(usageFromMessages),
  observedMembers: MODEL_AND_USAGE,
  observeEvent(e, call) {
    if (e.done) return;
    const d = e.data;
    const type = e.type ?? d.type;
    if (type === 'message_start' && isObj(d.message)) {
      call.setResponseModel(d.message.model);
      call.addUsage(usageFromMessages(d.message.usage));
    } else if (type === 'message_delta' && isObj(d.usage)) {
      // Later counts are cumulative; input and cache counts appear only when they apply.
      const u = usageFromMessages(d.usage);
      if (u && d.usage.input_tokens === undefined) delete u.inputTokens;
      call.addUsage(u);
    } else if (type === 'error') call.streamError?.(d.error);
    // Bedrock's InvokeModelWithResponseStream ends with its own counts (every model's, Claude's included; ADR 0190).
    const metrics = d['amazon-bedrock-invocationMetrics'];
    if (isObj(metrics)) call.addUsage(usageFromCacheCounts(metrics.inputTokenCount, metrics.outputTokenCount, metrics.cacheReadInputTokenCount, metrics.cacheWriteInputTokenCount));
  },
  observes: (event) => event === undefined || event === 'message_start' || event === 'message_delta' || event === 'error',
  outcomeOfResponse(body, sink) {
    sink.setResponseId(body.id);
    sink.addFinishReason(body.stop_reason);
  },
  outcomeMembers: ['id', 'stop_reason'],
  outcomeOfEvent(e, sink) {
    const d = e.data;
    const type = e.type ?? d.type;
    if (type === 'message_start' && isObj(d.message)) sink.setResponseId(d.message.id);
    else if (type === 'message_delta' && isObj(d.delta)) sink.addFinishReason(d.delta.stop_reason);
  },
  outputBytes: (data) => outputBytes(data, ['text', 'partial_json', 'thinking']),
  assembleStream: assembleMessages,
  requestSlots: messagesRequestSlots,
  responseSlots: messagesResponseSlots,
  insertPrompts: messagesPrompts,
  answerEvents: messagesAnswerEvents,
};

/** `count_tokens`: a Messages request answered with a count (nothing to translate, stream or observe). */
export const anthropicTokenCount: LlmFormat = {
  name: 'anthropicTokenCount',
  family: 'anthropic',
  operation: 'count_tokens',
  requestSlots: messagesRequestSlots,
  insertPrompts: messagesPrompts,
};
