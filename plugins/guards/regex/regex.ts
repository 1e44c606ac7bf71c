import type { CompileContext } from 'switchyard/sdk';
import type { GuardInstance, GuardMessage, GuardVerdict } from '../../lib/llm/contract.ts';
import { compilePattern, maskSpans, patternSpans } from '../../lib/llm-guard/mask.ts';
import { ENTITY, findBuiltin } from '../../lib/llm-guard/pii.ts';
import type { Builtin } from '../../lib/llm-guard/pii.ts';

export interface RegexGuardConfig {
  action?: 'mask' | 'reject';
  rules: ({ builtin: Builtin } | { pattern: string })[];
}

type Rule = { readonly kind: 'builtin'; readonly builtin: Builtin } | { readonly kind: 'pattern'; readonly re: RegExp };

/** What one text becomes: unchanged, masked, or a reason to reject. */
function scan(text: string, rules: readonly Rule[], reject: boolean): string | true | undefined {
  let working: string | undefined;
  for (const rule of rules) {
    const current = working ?? text;
    const spans = rule.kind === 'builtin' ? findBuiltin(rule.builtin, current) : patternSpans(rule.re, current);
    if (spans.length === 0) continue;
    if (reject) return true;
    working = maskSpans(current, spans, rule.kind === 'builtin' ? `<${ENTITY[rule.builtin]}>` : '<masked>');
  }
  return working;
}

/**
 * The `regex` guard (BEHAVIOUR.md §2.9): rules in order over each text; `mask` (default) replaces builtin matches
 * with `<ENTITY>` and pattern matches with `<masked>`, `reject` rejects on the first match.
 */
export function compileRegexGuard(config: RegexGuardConfig, ctx: CompileContext): GuardInstance {
  const reject = config.action === 'reject';
  const rules: Rule[] = config.rules.map((r, i): Rule => {
    if ('builtin' in r) return { kind: 'builtin', builtin: r.builtin };
    const re = compilePattern(r.pattern);
    if (typeof re === 'string') ctx.fail(re, ['rules', i, 'pattern']);
    return { kind: 'pattern', re };
  });
  if (rules.length === 0) ctx.warn('no rules: this guard never matches', ['rules']);
  return {
    check(_ex, _phase, messages: readonly GuardMessage[]): GuardVerdict {
      let masked: GuardMessage[] | undefined;
      for (let i = 0; i < messages.length; i++) {
        const result = scan(messages[i]!.content, rules, reject);
        if (result === true) return { action: 'reject', reason: 'regex' };
        if (result !== undefined) {
          masked ??= messages.map((m) => ({ role: m.role, content: m.content }));
          masked[i]!.content = result;
        }
      }
      return masked ? { action: 'mask', messages: masked } : { action: 'pass' };
    },
  };
}
