import type { CompileContext } from 'switchyard/sdk';
import type { GuardInstance, GuardMessage, GuardVerdict } from '../../lib/llm/contract.ts';
import { compilePattern, maskParts, patternSpans } from '../../lib/llm-guard/mask.ts';
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
 * What the texts of one content list (read as one text: parts `joined`) become: unchanged, masked, or a reason to
 * reject. Each rule matches the joined text and the joined text as a model reads it (fold.ts; its matches mapped back
 * onto the text), folded again only once a mask changed it.
 */
function scan(texts: readonly string[], rules: readonly Rule[], reject: boolean): string[] | true | undefined {
  let working: string[] | undefined;
  let joined = texts.join('');
  let folded = foldText(joined);
  for (const rule of rules) {
    const spans = spansOf(rule, joined);
    if (folded) for (const s of spansOf(rule, folded.text)) spans.push(folded.back(s));
    if (spans.length === 0) continue;
    if (reject) return true;
    working = maskParts(working ?? texts, spans, rule.kind === 'builtin' ? `<${ENTITY[rule.builtin]}>` : '<masked>');
    joined = working.join('');
    folded = foldText(joined);
  }
  return working;
}

/**
 * What a JSON text (tool-call arguments, a function response; `GuardMessage.json`) becomes, masked where its text is
 * (ADR 0165): each string, key and number is scanned as the text it decodes to (an escape such as `\u0053` hides
 * nothing), a masked one is written back as a JSON string, so the answer stays valid JSON of the same shape. The JSON
 * text as a whole is scanned too, for a rejection (a pattern written against the JSON). Null when it is no JSON
 * (scanned as plain text then), undefined when unchanged.
 */
function scanJson(text: string, rules: readonly Rule[], reject: boolean): string | true | undefined | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (reject && scan([text], rules, true) === true) return true;
  let changed = false;
  let rejected = false;
  const leaf = (s: string): string => {
    const r = rejected ? undefined : scan([s], rules, reject);
    if (r === true) rejected = true;
    else if (r !== undefined) {
      changed = true;
      return r[0]!;
    }
    return s;
  };
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return leaf(v);
    if (typeof v === 'number') {
      const s = String(v);
      const masked = leaf(s);
      return masked === s ? v : masked;
    }
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, inner] of Object.entries(v)) out[leaf(k)] = walk(inner);
      return out;
    }
    return v;
  };
  const masked = walk(value);
  if (rejected) return true;
  return changed ? JSON.stringify(masked) : undefined;
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
      for (let i = 0; i < messages.length; ) {
        // A message and the parts joined to it are one text.
        let j = i + 1;
        while (j < messages.length && messages[j]!.joined === true) j++;
        const json = j === i + 1 && messages[i]!.json === true ? scanJson(messages[i]!.content, rules, reject) : null;
        const result = json !== null ? (typeof json === 'string' ? [json] : json) : scan(messages.slice(i, j).map((m) => m.content), rules, reject);
        if (result === true) return { action: 'reject', reason: 'regex' };
        if (result !== undefined) {
          masked ??= messages.map((m) => ({ ...m }));
          result.forEach((text, k) => (masked![i + k]!.content = text));
        }
        i = j;
      }
      return masked ? { action: 'mask', messages: masked } : { action: 'pass' };
    },
  };
}
