// A complete answer as its format's stream (`LlmFormat.answerEvents`): for a client that asked for a stream when the
// provider answered with a whole body (it ignored `stream: true`, or answered from a cache). The events are those a
// provider streaming the same answer would send, so the SDKs' stream helpers put the same answer together.
import { DONE } from '../events.ts';
import type { LlmEvent } from '../events.ts';
import { isObj } from '../json.ts';
import type { Obj } from '../json.ts';

const list = (v: unknown): Obj[] => (Array.isArray(v) ? v.filter(isObj) : []);

/** OpenAI Chat Completions: a chunk with each choice's message, one with its finish reason, the usage, `[DONE]`. */
export function completionsAnswerEvents(body: Obj): LlmEvent[] {
  const { choices, usage, object: _object, ...head } = body;
  const chunk = (fields: Obj): LlmEvent => ({ type: undefined, data: { ...head, object: 'chat.completion.chunk', ...fields } });
  const all = list(choices);
  const deltas = all.map((c) => {
    const { tool_calls: calls, ...message } = isObj(c.message) ? c.message : {};
    // A streamed call says which call its deltas continue: its position in the message.
    const delta: Obj = Array.isArray(calls) ? { ...message, tool_calls: calls.map((tc, index) => (isObj(tc) ? { index, ...tc } : tc)) } : message;
    return { index: c.index ?? 0, delta, logprobs: c.logprobs ?? null, finish_reason: null };
  });
  const out = [chunk({ choices: deltas }), chunk({ choices: all.map((c) => ({ index: c.index ?? 0, delta: {}, logprobs: null, finish_reason: c.finish_reason ?? 'stop' })) })];
  if (isObj(usage)) out.push(chunk({ choices: [], usage }));
  out.push(DONE);
  return out;
}

const anthropicEvent = (type: string, data: Obj): LlmEvent => ({ type, data: { type, ...data } });

/** Anthropic Messages: `message_start`, each content block started, its content as one delta, stopped; the stop. */
export function messagesAnswerEvents(body: Obj): LlmEvent[] {
  const { content, stop_reason: stopReason, stop_sequence: stopSequence, usage } = body;
  const out = [anthropicEvent('message_start', { message: { ...body, content: [], stop_reason: null, stop_sequence: null } })];
  list(content).forEach((block, index) => {
    const delta = (d: Obj): void => void out.push(anthropicEvent('content_block_delta', { index, delta: d }));
    if (block.type === 'text' && typeof block.text === 'string') {
      out.push(anthropicEvent('content_block_start', { index, content_block: { ...block, text: '' } }));
      if (block.text) delta({ type: 'text_delta', text: block.text });
    } else if ((block.type === 'tool_use' || block.type === 'server_tool_use') && block.input !== undefined) {
      out.push(anthropicEvent('content_block_start', { index, content_block: { ...block, input: {} } }));
      delta({ type: 'input_json_delta', partial_json: JSON.stringify(block.input) });
    } else if (block.type === 'thinking' && typeof block.thinking === 'string') {
      out.push(anthropicEvent('content_block_start', { index, content_block: { ...block, thinking: '', signature: '' } }));
      if (block.thinking) delta({ type: 'thinking_delta', thinking: block.thinking });
      if (typeof block.signature === 'string') delta({ type: 'signature_delta', signature: block.signature });
    } else {
      // Blocks without deltas of their own (redacted thinking, tool results) start whole.
      out.push(anthropicEvent('content_block_start', { index, content_block: block }));
    }
    out.push(anthropicEvent('content_block_stop', { index }));
  });
  out.push(anthropicEvent('message_delta', { delta: { stop_reason: stopReason ?? 'end_turn', stop_sequence: stopSequence ?? null }, usage: isObj(usage) ? usage : {} }));
  out.push(anthropicEvent('message_stop', {}));
  return out;
}

/** OpenAI Responses: created, each output item added, its text or arguments as one delta, done; completed. */
export function responsesAnswerEvents(body: Obj): LlmEvent[] {
  let seq = 0;
  const out: LlmEvent[] = [];
  const ev = (type: string, data: Obj): void => void out.push({ type, data: { type, sequence_number: seq++, ...data } });
  const open = { ...body, status: 'in_progress', output: [], usage: null, incomplete_details: null };
  ev('response.created', { response: open });
  ev('response.in_progress', { response: open });
  list(body.output).forEach((item, output_index) => {
    const item_id = item.id;
    if (item.type === 'message') {
      ev('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', content: [] } });
      list(item.content).forEach((part, content_index) => {
        const at = { item_id, output_index, content_index };
        if (part.type === 'output_text' && typeof part.text === 'string') {
          ev('response.content_part.added', { ...at, part: { ...part, text: '', annotations: [] } });
          ev('response.output_text.delta', { ...at, delta: part.text, logprobs: [] });
          ev('response.output_text.done', { ...at, text: part.text, logprobs: [] });
        } else if (part.type === 'refusal' && typeof part.refusal === 'string') {
          ev('response.content_part.added', { ...at, part: { ...part, refusal: '' } });
          ev('response.refusal.delta', { ...at, delta: part.refusal });
          ev('response.refusal.done', { ...at, refusal: part.refusal });
        } else {
          ev('response.content_part.added', { ...at, part });
        }
        ev('response.content_part.done', { ...at, part });
      });
    } else if (item.type === 'function_call' && typeof item.arguments === 'string') {
      ev('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', arguments: '' } });
      ev('response.function_call_arguments.delta', { item_id, output_index, delta: item.arguments });
      ev('response.function_call_arguments.done', { item_id, output_index, arguments: item.arguments });
    } else {
      ev('response.output_item.added', { output_index, item });
    }
    ev('response.output_item.done', { output_index, item });
  });
  const end = body.status === 'incomplete' ? 'response.incomplete' : body.status === 'failed' ? 'response.failed' : 'response.completed';
  ev(end, { response: body });
  return out;
}

/** Gemini: a stream of `GenerateContentResponse`s, the whole answer being one. */
export function geminiAnswerEvents(body: Obj): LlmEvent[] {
  return [{ type: undefined, data: body }];
}
