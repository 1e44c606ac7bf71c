import type { CompileContext } from 'switchyard/sdk';
import type { GuardInstance, GuardMessage, GuardVerdict } from '../../lib/llm/contract.ts';
import { compilePattern, maskSpans, patternSpans } from '../../lib/llm-guard/mask.ts';
import { foldText } from '../../lib/llm-guard/fold.ts';
import { ENTITY, findBuiltin } from '../../lib/llm-guard/pii.ts';
import type { Builtin, Span } from '../../lib/llm-guard/pii.ts';

export interface RegexGuardConfig {
  action?: 'mask' | 'reject';
  rules: ({ builtin: Builtin } | { pattern: string })[];
}

type Rule = { readonly kind: 'builtin'; readonly builtin: Builtin } | { readonly kind: 'pattern'; readonly re: RegExp };

function spansOf(rule: Rule, text: string): Span[] {
  return rule.kind === 'builtin' ? findBuiltin(rule.builtin, text) : patternSpans(rule.re, text);
}

/**
 * What one text becomes: unchanged, masked, or a reason to reject. Each rule matches the text and the text as a
 * model reads it (fold.ts; its matches mapped back onto the text), folded again only once a mask changed it.
 */
function scan(text: string, rules: readonly Rule[], reject: boolean): string | true | undefined {
  let working: string | undefined;
  let folded = foldText(text);
  for (const rule of rules) {
    const current = working ?? text;
    const spans = spansOf(rule, current);
    if (folded) for (const s of spansOf(rule, folded.text)) spans.push(folded.back(s));
    if (spans.length === 0) continue;
    if (reject) return true;
    working = maskSpans(current, spans, rule.kind === 'builtin' ? `<${ENTITY[rule.builtin]}>` : '<masked>');
    folded = foldText(working);
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
