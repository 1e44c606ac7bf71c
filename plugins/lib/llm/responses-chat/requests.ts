// OpenAI Responses request -> OpenAI Chat Completions request, and the complete answer back, for providers that do
// not speak Responses (docs/llm.md "Formats and translation"). Stateless: nothing is stored between calls.
import { randomUUID } from 'node:crypto';
import { checkMessageList, toolCallsOf } from '../chat-messages.ts';
import type { MessageListRules } from '../chat-messages.ts';
import { copy, isObj, nowSeconds, textOf } from '../json.ts';
import type { Obj } from '../json.ts';

/** An id in OpenAI's style: the prefix, then 24 hex digits. */
export function responsesId(prefix: string): string {
  return `${prefix}_${randomUUID().replace(/-/g, '').slice(0, 24)}`;
}

// ---------------------------------------------------------------------------------------------------------------
// Request

/** A message item's content parts as Chat Completions content parts (text, images, files). */
function contentParts(content: unknown): Obj[] {
  const out: Obj[] = [];
  for (const p of Array.isArray(content) ? content : []) {
    if (!isObj(p)) continue;
    if ((p.type === 'input_text' || p.type === 'output_text' || p.type === 'text') && typeof p.text === 'string' && p.text) out.push({ type: 'text', text: p.text });
    else if (p.type === 'input_image' && typeof p.image_url === 'string') {
      out.push({ type: 'image_url', image_url: p.detail === undefined ? { url: p.image_url } : { url: p.image_url, detail: p.detail } });
    } else if (p.type === 'input_file' && typeof p.file_data === 'string') {
      const file: Obj = { file_data: p.file_data };
      if (typeof p.filename === 'string') file.filename = p.filename;
      out.push({ type: 'file', file });
    }
  }
  return out;
}

/** One `message` item (or a bare `{role, content}`) as a Chat Completions message. */
function messageOf(item: Obj): Obj | undefined {
  const role = item.role === 'assistant' || item.role === 'system' || item.role === 'developer' ? item.role : 'user';
  if (typeof item.content === 'string') return { role, content: item.content };
  // Assistant turns of the history are text (`output_text`, `refusal`); the others may carry images and files.
  if (role === 'assistant') {
    const text = Array.isArray(item.content) ? item.content.map((p: unknown) => (isObj(p) && typeof p.refusal === 'string' ? p.refusal : textOf([p]))).join('') : '';
    return text ? { role, content: text } : undefined;
  }
  const parts = contentParts(item.content);
  if (parts.length === 0) return undefined;
  if (role !== 'user') return { role, content: parts.filter((p) => p.type === 'text').map((p) => p.text).join('\n') };
  return { role, content: parts };
}

function toolChoiceOf(choice: unknown): unknown {
  if (choice === 'auto' || choice === 'none' || choice === 'required') return choice;
  if (isObj(choice) && choice.type === 'function' && typeof choice.name === 'string') return { type: 'function', function: { name: choice.name } };
  if (isObj(choice) && choice.type === 'allowed_tools' && Array.isArray(choice.tools)) {
    const tools = choice.tools.filter((t: unknown) => isObj(t) && t.type === 'function' && typeof t.name === 'string').map((t: Obj) => ({ type: 'function', function: { name: t.name } }));
    return { type: 'allowed_tools', allowed_tools: { mode: choice.mode === 'required' ? 'required' : 'auto', tools } };
  }
  return undefined;
}

/** `text.format` as `response_format`. */
function responseFormatOf(text: unknown): Obj | undefined {
  const format = isObj(text) && isObj(text.format) ? text.format : undefined;
  if (format?.type === 'json_object') return { type: 'json_object' };
  if (format?.type === 'json_schema') {
    const schema: Obj = { name: typeof format.name === 'string' ? format.name : 'response' };
    copy(format, 'schema', schema);
    copy(format, 'strict', schema);
    copy(format, 'description', schema);
    return { type: 'json_schema', json_schema: schema };
  }
  return undefined;
}

const RESPONSES_ROLES: ReadonlySet<unknown> = new Set(['user', 'assistant', 'system', 'developer']);
const RESPONSES_RULES: MessageListRules = {
  entry: 'an item',
  roles: RESPONSES_ROLES,
  rolesText: `a Responses role (${[...RESPONSES_ROLES].join(', ')})`,
  notMessage: (item) => (item.type ?? 'message') !== 'message',
  contentText: 'must be a string or a list of content parts',
};

/** Refuse (throw) an `input` that is neither text nor a list, or an item `checkMessageList` refuses (ADR 0186). */
function checkResponsesInput(input: unknown): void {
  if (input === undefined || input === null || typeof input === 'string') return;
  if (!Array.isArray(input)) throw new Error('`input` must be a string or a list of items');
  checkMessageList(input, 'input', RESPONSES_RULES);
}

/**
 * An OpenAI Responses request as a Chat Completions request: `instructions` and `input` items become messages
 * (function calls join the assistant turn before them, their outputs become tool messages), function tools keep
 * their schema; built-in tools, reasoning items and item references have no Chat Completions form and are left out.
 * A request that continues a stored response (`previous_response_id`, `conversation`) cannot be served: no provider
 * behind the translation keeps responses.
 */
export function responsesRequestToCompletions(body: Obj): Obj {
  for (const field of ['previous_response_id', 'conversation']) {
    if (body[field] !== undefined && body[field] !== null) throw new Error(`\`${field}\` needs a provider that stores responses (openAI, azureOpenAI)`);
  }
  checkResponsesInput(body.input);
  const messages: Obj[] = [];
  if (typeof body.instructions === 'string' && body.instructions) messages.push({ role: 'system', content: body.instructions });
  const input = body.input;
  if (typeof input === 'string') messages.push({ role: 'user', content: input });
  for (const item of Array.isArray(input) ? input : []) {
    if (!isObj(item)) continue;
    const type = item.type ?? 'message';
    if (type === 'message') {
      const m = messageOf(item);
      if (m) messages.push(m);
    } else if (type === 'function_call') {
      const call: Obj = { id: item.call_id, type: 'function', function: { name: item.name, arguments: typeof item.arguments === 'string' ? item.arguments : '{}' } };
      if (isObj(item.extra_content)) call.extra_content = item.extra_content;
      const last = messages[messages.length - 1];
      // Parallel calls are one assistant turn in Chat Completions.
      if (last?.role === 'assistant') (last.tool_calls ??= []).push(call);
      else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
    } else if (type === 'function_call_output') {
      messages.push({ role: 'tool', tool_call_id: item.call_id, content: typeof item.output === 'string' ? item.output : textOf(contentParts(item.output), '\n') });
    }
  }
  const out: Obj = { model: body.model, messages };
  copy(body, 'max_output_tokens', out, 'max_completion_tokens');
  copy(body, 'temperature', out);
  copy(body, 'top_p', out);
  copy(body, 'user', out);
  copy(body, 'parallel_tool_calls', out);
  if (isObj(body.reasoning) && typeof body.reasoning.effort === 'string') out.reasoning_effort = body.reasoning.effort;
  const format = responseFormatOf(body.text);
  if (format) out.response_format = format;
  if (Array.isArray(body.tools)) {
    const tools = body.tools
      .filter((t: unknown) => isObj(t) && t.type === 'function' && typeof t.name === 'string')
      .map((t: Obj) => {
        const fn: Obj = { name: t.name };
        copy(t, 'description', fn);
        copy(t, 'parameters', fn);
        copy(t, 'strict', fn);
        return { type: 'function', function: fn };
      });
    if (tools.length > 0) {
      out.tools = tools;
      const choice = toolChoiceOf(body.tool_choice);
      if (choice !== undefined) out.tool_choice = choice;
    }
  }
  if (body.stream === true) {
    out.stream = true;
    out.stream_options = { include_usage: true };
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Answer

/** Chat Completions usage as Responses usage. */
export function responsesUsageOf(u: unknown): Obj | null {
  if (!isObj(u)) return null;
  const input = typeof u.prompt_tokens === 'number' ? u.prompt_tokens : 0;
  const output = typeof u.completion_tokens === 'number' ? u.completion_tokens : 0;
  const cached = isObj(u.prompt_tokens_details) && typeof u.prompt_tokens_details.cached_tokens === 'number' ? u.prompt_tokens_details.cached_tokens : 0;
  const reasoning = isObj(u.completion_tokens_details) && typeof u.completion_tokens_details.reasoning_tokens === 'number' ? u.completion_tokens_details.reasoning_tokens : 0;
  return { input_tokens: input, input_tokens_details: { cached_tokens: cached }, output_tokens: output, output_tokens_details: { reasoning_tokens: reasoning }, total_tokens: input + output };
}

/** The response's `status` and `incomplete_details` for a Chat Completions finish reason. */
export function responsesStatusOf(finish: unknown): { status: string; incomplete_details: Obj | null } {
  if (finish === 'length') return { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } };
  if (finish === 'content_filter') return { status: 'incomplete', incomplete_details: { reason: 'content_filter' } };
  return { status: 'completed', incomplete_details: null };
}

/** A `message` output item with one `output_text` part. */
export function messageItem(id: string, text: string, status: string): Obj {
  return { id, type: 'message', status, role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }] };
}

/** A `function_call` output item. */
/**
 * A `function_call` output item. `extra`: the call's `extra_content` (Gemini's thought signature), kept on the item
 * so that a client replaying its output items sends it back (Gemini refuses a call of its own without it).
 */
export function functionCallItem(id: string, callId: unknown, name: unknown, args: string, status: string, extra?: unknown): Obj {
  const item: Obj = { id, type: 'function_call', status, call_id: callId, name, arguments: args };
  if (isObj(extra)) item.extra_content = extra;
  return item;
}

/** The `response` object around its output. */
export function responseObject(id: string, createdAt: number, model: unknown, output: Obj[], finish: unknown, usage: Obj | null, inProgress = false): Obj {
  const { status, incomplete_details } = inProgress ? { status: 'in_progress', incomplete_details: null } : responsesStatusOf(finish);
  return { id, object: 'response', created_at: createdAt, status, error: null, incomplete_details, model, output, usage };
}

/** A Chat Completions answer (its first choice) as a Responses `response`. */
export function completionsResponseToResponses(resp: Obj, model: string): Obj {
  const choice: Obj = Array.isArray(resp.choices) && isObj(resp.choices[0]) ? resp.choices[0] : {};
  const msg: Obj = isObj(choice.message) ? choice.message : {};
  const output: Obj[] = [];
  const text = textOf(msg.content);
  if (text) output.push(messageItem(responsesId('msg'), text, 'completed'));
  else if (typeof msg.refusal === 'string' && msg.refusal) {
    output.push({ id: responsesId('msg'), type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'refusal', refusal: msg.refusal }] });
  }
  for (const tc of toolCallsOf(msg)) {
    const args = typeof tc.function.arguments === 'string' && tc.function.arguments ? tc.function.arguments : '{}';
    output.push(functionCallItem(responsesId('fc'), tc.id ?? responsesId('call'), tc.function.name, args, 'completed', tc.extra_content));
  }
  const createdAt = typeof resp.created === 'number' ? resp.created : nowSeconds();
  return responseObject(responsesId('resp'), createdAt, resp.model ?? model, output, choice.finish_reason, responsesUsageOf(resp.usage));
}
