// A prompt guard: a variant of the `guard` slot that the `ai` policy owns, written only against the published
// `switchyard/slots/ai` module. The compiler checks that `compile` returns a `GuardInstance`.
import { defineGuard } from 'switchyard/slots/ai';
import type { GuardMessage, GuardVerdict } from 'switchyard/slots/ai';

/** The validated value of `denylist` in a `promptGuard` list item. */
export interface DenylistConfig {
  readonly words: readonly string[];
  /** `reject` (default) refuses the prompt; `mask` replaces each hit with `replacement` and lets it through. */
  readonly action?: 'reject' | 'mask';
  /** Match whole words only (`\b` on both sides); default false, so `secret` also hits `secrets`. */
  readonly wholeWords?: boolean;
  readonly replacement?: string;
}

const escape = (word: string): string => word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export default defineGuard<DenylistConfig>({
  key: 'denylist',
  description: 'Reject (or mask) prompts and answers that contain one of the listed words, case-insensitively.',
  schema: {
    type: 'object',
    additionalProperties: false,
    required: ['words'],
    properties: {
      words: { type: 'array', minItems: 1, items: { type: 'string', minLength: 1 }, description: 'Words (or phrases) that trip the guard.' },
      action: { enum: ['reject', 'mask'], description: '`reject` (default): the entry\'s `rejection` answers. `mask`: hits are replaced and the text goes on.' },
      wholeWords: { type: 'boolean', description: 'Match whole words only. Default false.' },
      replacement: { type: 'string', description: 'What a masked word becomes. Default `***`. Only with `action: mask`.' },
    },
  },
  compile(config, ctx) {
    if (config.replacement !== undefined && config.action !== 'mask') ctx.fail('`replacement` needs `action: mask`', ['replacement']);
    // One regular expression per config load: nothing is built per request.
    const edge = config.wholeWords ? '\\b' : '';
    const pattern = new RegExp(`${edge}(?:${config.words.map(escape).join('|')})${edge}`, 'iu');
    const global = new RegExp(pattern.source, 'giu');
    const replacement = config.replacement ?? '***';
    return {
      check(_ex, _phase, messages: readonly GuardMessage[]): GuardVerdict {
        const hit = messages.find((m) => pattern.test(m.content));
        if (!hit) return { action: 'pass' };
        if (config.action !== 'mask') return { action: 'reject', reason: `denied word ${pattern.exec(hit.content)![0].toLowerCase()}` };
        return { action: 'mask', messages: messages.map((m) => ({ ...m, content: m.content.replace(global, replacement) })) };
      },
    };
  },
});
