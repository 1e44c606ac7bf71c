// Reading streamed Chat Completions chunks, for the translators that turn them into another format's events
// (Anthropic Messages, OpenAI Responses): the choice they follow, where the answer starts, which call a
// `tool_calls[]` delta continues.
import { isObj } from './json.ts';
import type { Obj } from './json.ts';

/** The chunk's first choice (index 0), the one translated. */
export function firstChoice(d: Obj): Obj | undefined {
  return Array.isArray(d.choices) ? d.choices.find((c: unknown) => isObj(c) && (c.index ?? 0) === 0) : undefined;
}

/**
 * Whether a chunk may start the translated answer: Azure's first chunk carries only the prompt's filter results (no
 * choices, an empty id and model), so the answer starts with the first chunk with a choice or usage.
 */
export function startsAnswer(d: Obj, choice: Obj | undefined): boolean {
  return choice !== undefined || isObj(d.usage);
}

/**
 * The key of the call a `tool_calls[]` delta belongs to: its `index`. Gemini's OpenAI-compatible API sends calls
 * without one, each whole in one chunk with its own id: a new id is a new call, a delta without an id belongs to
 * the last call.
 */
export class StreamedToolCallKeys {
  private last: { id: unknown; key: string } | undefined = undefined;
  private unindexed = 0;

  key(tc: Obj): number | string {
    if (typeof tc.index === 'number') return tc.index;
    if (this.last === undefined || (tc.id !== undefined && tc.id !== this.last.id)) this.last = { id: tc.id, key: `unindexed-${this.unindexed++}` };
    return this.last.key;
  }
}
