/**
 * `ai.promptCaching` for Anthropic Messages bodies (BEHAVIOUR.md §2.8): `cache_control: {type: ephemeral}` markers
 * on the last block of the system prompt, on the conversation history (the second-to-last message, moved back by
 * `cacheMessageOffset`) and on the last tool, within Anthropic's limit of four markers per request. Markers the
 * client set are kept and count against the limit. Best effort: a body without such a place is left as it is.
 */
import { isObj } from '../llm/json.ts';

/** The `promptCaching` settings with their defaults applied. */
export interface PromptCachingSettings {
  readonly cacheSystem: boolean;
  readonly cacheMessages: boolean;
  readonly cacheTools: boolean;
  /** The system prompt is marked only when it is estimated at this many tokens or more (0: always). */
  readonly minTokens: number;
  readonly cacheMessageOffset: number;
}

/** What a config may write; omitted fields take the defaults. */
export interface PromptCachingConfig {
  cacheSystem?: boolean;
  cacheMessages?: boolean;
  cacheTools?: boolean;
  minTokens?: number;
  cacheMessageOffset?: number;
}

export function promptCachingSettings(config: PromptCachingConfig): PromptCachingSettings {
  return {
    cacheSystem: config.cacheSystem ?? true,
    cacheMessages: config.cacheMessages ?? true,
    cacheTools: config.cacheTools ?? false,
    minTokens: config.minTokens ?? 1024,
    cacheMessageOffset: config.cacheMessageOffset ?? 0,
  };
}

/** Anthropic refuses requests with more than four cache breakpoints. */
const MAX_MARKERS = 4;

/** Block types Anthropic accepts `cache_control` on. A marker on any other type would fail the request. */
const CACHEABLE = new Set(['text', 'image', 'document', 'search_result', 'tool_use', 'tool_result', 'server_tool_use', 'web_search_tool_result']);

type Obj = Record<string, unknown>;
const hasMarker = (v: unknown): boolean => isObj(v) && v.cache_control !== undefined && v.cache_control !== null;
const countIn = (v: unknown): number => (Array.isArray(v) ? v.filter(hasMarker).length : 0);

/** A string content becomes one text block, the form that can carry a marker. */
function blocksOf(holder: Obj, key: string): unknown[] | undefined {
  const value = holder[key];
  if (typeof value === 'string') {
    const blocks = [{ type: 'text', text: value }];
    holder[key] = blocks;
    return blocks;
  }
  return Array.isArray(value) ? value : undefined;
}

/** Mark the last block of an acceptable type; false when there is none or it already has a marker. */
function markLast(blocks: unknown[], accept: (b: Obj) => boolean): boolean {
  for (let i = blocks.length - 1; i >= 0; i--) {
    const b = blocks[i];
    if (!isObj(b) || !accept(b)) continue;
    if (hasMarker(b)) return false;
    b.cache_control = { type: 'ephemeral' };
    return true;
  }
  return false;
}

const cacheable = (b: Obj): boolean => typeof b.type === 'string' && CACHEABLE.has(b.type);

/** Words × 1.3, the same estimate the Bedrock conversion uses, so `minTokens` means one thing everywhere. */
function estimateTokens(system: unknown): number {
  const words = (s: string): number => s.split(/\s+/).filter(Boolean).length;
  let n = 0;
  if (typeof system === 'string') n = words(system);
  else if (Array.isArray(system)) for (const b of system) if (isObj(b) && typeof b.text === 'string') n += words(b.text);
  return Math.floor((n * 13) / 10);
}

/** Add the markers to an Anthropic Messages request body, in place. */
export function applyAnthropicCacheMarkers(body: Record<string, unknown>, settings: PromptCachingSettings): void {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  let used = countIn(body.system) + countIn(body.tools) + messages.reduce<number>((n, m) => n + (isObj(m) ? countIn(m.content) : 0), 0);

  if (settings.cacheSystem && used < MAX_MARKERS && body.system !== undefined && estimateTokens(body.system) >= settings.minTokens) {
    const blocks = blocksOf(body, 'system');
    if (blocks && markLast(blocks, cacheable)) used++;
  }
  if (settings.cacheMessages && used < MAX_MARKERS && messages.length >= 2) {
    // The history is what repeats between turns; the newest message is not worth a breakpoint.
    const target = Math.max(0, messages.length - 2 - settings.cacheMessageOffset);
    const message = messages[target];
    if (isObj(message)) {
      const blocks = blocksOf(message, 'content');
      if (blocks && markLast(blocks, cacheable)) used++;
    }
  }
  if (settings.cacheTools && used < MAX_MARKERS && Array.isArray(body.tools)) {
    // Every tool definition accepts a marker (custom tools have no `type`).
    if (markLast(body.tools, () => true)) used++;
  }
}
