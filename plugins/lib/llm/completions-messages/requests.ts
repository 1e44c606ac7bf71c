// OpenAI Chat Completions <-> Anthropic Messages requests, both directions (BEHAVIOUR.md §4.6).
import { canonicalExtra, checkChatMessages, checkMessageList, imageUrlOf, narrowToAllowedTools, setCanonicalExtra, toolCallsOf, walkChatMessages } from '../chat-messages.ts';
import type { MessageListRules } from '../chat-messages.ts';
import { copy, isObj, parseDataUrl, textOf } from '../json.ts';
import type { Obj } from '../json.ts';
import { toolUseBlock } from './mapping.ts';
import { anthropicThinking, thinkingBudgetOf, thinkingBlocksOf } from '../thinking.ts';

/** Anthropic requires `max_tokens`; a Chat Completions request may omit it. */
export const DEFAULT_MAX_TOKENS = 4096;

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
      // Anthropic refuses empty text blocks; an empty part says nothing.
      else if (p.type === 'text' && typeof p.text === 'string' && p.text) blocks.push({ type: 'text', text: p.text });
      else if (p.type === 'image_url') {
        const b = imagePartToBlock(p);
        if (b) blocks.push(b);
      } else if (p.type === 'file' && isObj(p.file) && typeof p.file.file_data === 'string') {
        // A PDF (a data URL; file ids name OpenAI's storage, which Anthropic cannot read) as a document.
        const data = parseDataUrl(p.file.file_data);
        if (data) {
          const doc: Obj = { type: 'document', source: { type: 'base64', media_type: data.mediaType, data: data.data } };
          if (typeof p.file.filename === 'string') doc.title = p.file.filename;
          blocks.push(doc);
        }
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
  checkChatMessages(body);
  const system: string[] = [];
  const messages: Obj[] = [];
  walkChatMessages(body, {
    system: (text) => system.push(text),
    user: (m) => {
      const c = userBlocks(m.content);
      if (c.length > 0) pushMessage(messages, 'user', c);
    },
    assistant: (m) => {
      // Thinking comes first in an Anthropic turn; its signature lets a tool-use turn after it be accepted.
      const blocks: Obj[] = [...(canonicalExtra(m, 'thinking') ?? [])];
      const text = textOf(m.content);
      if (text) blocks.push({ type: 'text', text });
      blocks.push(...toolCallsOf(m).map(toolUseBlock));
      if (blocks.length > 0) pushMessage(messages, 'assistant', blocks);
    },
    tool: (m) => {
      // A blank result (a tool with no output) has no content: Anthropic refuses a blank text.
      const text = textOf(m.content);
      pushMessage(messages, 'user', [text.trim() ? { type: 'tool_result', tool_use_id: m.tool_call_id, content: text } : { type: 'tool_result', tool_use_id: m.tool_call_id }]);
    },
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
  const { tools: declared, choice: toolChoice } = narrowToAllowedTools(body);
  if (Array.isArray(declared)) {
    const tools = declared
      .filter((t: unknown) => isObj(t) && t.type === 'function' && isObj(t.function))
      .map((t: Obj) => {
        const tool: Obj = { name: t.function.name, input_schema: isObj(t.function.parameters) ? t.function.parameters : { type: 'object', properties: {} } };
        if (typeof t.function.description === 'string') tool.description = t.function.description;
        return tool;
      });
    if (tools.length > 0) out.tools = tools;
  }
  const choice = toolChoiceToAnthropic(toolChoice, body.parallel_tool_calls);
  if (choice && out.tools) out.tool_choice = choice;
  if (typeof body.user === 'string') out.metadata = { user_id: body.user };
  // An OpenAI client's effort (a Chat Completions body has no adaptive thinking).
  const budget = thinkingBudgetOf(body, out.max_tokens);
  if (typeof budget === 'number') out.thinking = { type: 'enabled', budget_tokens: budget };
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Messages request -> Completions request

function blockToPart(b: Obj): Obj | undefined {
  if (b.type === 'text' && typeof b.text === 'string') return { type: 'text', text: b.text };
  if (b.type === 'image' && isObj(b.source)) {
    if (b.source.type === 'base64') return { type: 'image_url', image_url: { url: `data:${b.source.media_type};base64,${b.source.data}` } };
    if (b.source.type === 'url') return { type: 'image_url', image_url: { url: b.source.url } };
  }
  if (b.type === 'document' && isObj(b.source)) {
    // A PDF as Chat Completions' file part; a plain-text document as its text.
    if (b.source.type === 'base64') {
      const file: Obj = { file_data: `data:${b.source.media_type};base64,${b.source.data}` };
      if (typeof b.title === 'string') file.filename = b.title;
      return { type: 'file', file };
    }
    if (b.source.type === 'text' && typeof b.source.data === 'string' && b.source.data) return { type: 'text', text: b.source.data };
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

/** Anthropic's roles: a system prompt goes in `system` only, so a `system` message would become a user turn. */
const MESSAGES_RULES: MessageListRules = {
  entry: 'a message',
  roles: new Set(['user', 'assistant']),
  rolesText: 'a Messages role (user, assistant; a system prompt goes in `system`)',
  contentText: 'must be a string or a list of content blocks',
};

/** An Anthropic Messages request as an OpenAI Chat Completions request (usage requested on streams). */
export function messagesRequestToCompletions(body: Obj): Obj {
  checkMessageList(Array.isArray(body.messages) ? body.messages : [], 'messages', MESSAGES_RULES);
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
      const thinking = thinkingBlocksOf(blocks);
      if (thinking.length > 0) setCanonicalExtra(msg, 'thinking', thinking);
      // A turn of thinking alone (an answer cut at its limit) has no Chat Completions form.
      if (text || toolCalls.length > 0) messages.push(msg);
      continue;
    }
    const parts: Obj[] = [];
    for (const b of blocks) {
      if (b.type === 'tool_result') {
        const result: Obj = { role: 'tool', tool_call_id: b.tool_use_id, content: toolResultText(b.content) };
        if (b.is_error === true) setCanonicalExtra(result, 'toolError', true);
        messages.push(result);
        // A tool message carries text only: the result's images follow the tool messages in the user turn.
        for (const c of Array.isArray(b.content) ? b.content : []) {
          const image = isObj(c) && c.type === 'image' ? blockToPart(c) : undefined;
          if (image) parts.push(image);
        }
      } else {
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
  if (typeof body.top_k === 'number') setCanonicalExtra(out, 'topK', body.top_k);
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
  // Extended thinking: the budget as it is for the APIs that take one (Converse, Gemini), as an effort for OpenAI's.
  const thinking = anthropicThinking(body);
  if (thinking !== undefined) {
    setCanonicalExtra(out, 'thinkingBudget', thinking.budget);
    out.reasoning_effort = thinking.effort;
  }
  return out;
}
