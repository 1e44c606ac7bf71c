import type { Exchange } from 'switchyard/sdk';
import type { LlmRouteType } from '../../lib/llm/contract.ts';
import { isObj } from '../../lib/llm/json.ts';
import type { Obj } from '../../lib/llm/json.ts';

/** Content block types only Anthropic Messages uses. */
const ANTHROPIC_BLOCKS = new Set(['tool_use', 'tool_result', 'thinking', 'redacted_thinking', 'document']);

function anthropicShaped(body: Obj): boolean {
  if (body.system !== undefined) return true;
  for (const m of Array.isArray(body.messages) ? body.messages : []) {
    if (!isObj(m) || !Array.isArray(m.content)) continue;
    for (const b of m.content) {
      if (!isObj(b)) continue;
      if (ANTHROPIC_BLOCKS.has(b.type)) return true;
      if (b.type === 'image' && isObj(b.source)) return true;
    }
  }
  return false;
}

/**
 * The format of a `detect` request, told from its path, headers and body: Gemini native (`:generateContent`,
 * `:streamGenerateContent`, `:countTokens`, or a body with `contents`), Anthropic (`/messages`,
 * `anthropic-version`, a top-level `system`, Anthropic content blocks), OpenAI Responses or Embeddings (`input`),
 * else Chat Completions.
 */
export function detectFormat(ex: Exchange, body: Obj): LlmRouteType {
  const path = ex.path;
  if (path.endsWith(':generateContent') || path.endsWith(':streamGenerateContent')) return 'generateContent';
  if (path.endsWith(':countTokens')) return 'geminiCountTokens';
  if (path.endsWith('/count_tokens')) return 'anthropicTokenCount';
  if (path.endsWith('/messages') || ex.headers['anthropic-version'] !== undefined) return 'messages';
  if (path.endsWith('/embeddings')) return 'embeddings';
  if (path.endsWith('/responses')) return 'responses';
  if (Array.isArray(body.messages)) return anthropicShaped(body) ? 'messages' : 'completions';
  if (body.input !== undefined) return 'responses';
  if (Array.isArray(body.contents)) return 'generateContent';
  return 'completions';
}
