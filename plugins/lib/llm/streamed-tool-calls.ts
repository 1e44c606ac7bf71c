// Which call a streamed Chat Completions `tool_calls[]` delta continues: shared by the translators that turn
// chunks into another format's events (Anthropic Messages, OpenAI Responses).
import type { Obj } from './json.ts';

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
