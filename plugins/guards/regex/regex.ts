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

/**
 * A compiled rule. `contextFree`: it finds in a text joined by newlines every match it finds in each piece alone (no
 * anchors, lookarounds or word boundaries, which read what is around a match; the builtins only look for word, digit
 * and punctuation characters there, which a newline is not).
 */
type Rule = { readonly kind: 'builtin'; readonly builtin: Builtin; readonly contextFree: true } | { readonly kind: 'pattern'; readonly re: RegExp; readonly contextFree: boolean };

const CONTEXT = /[$^]|\(\?<|\(\?[=!]|\\[bB]/;

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

/** The strings, keys and numbers (as their text) of a JSON value, in the order `rebuild` meets them. */
function leavesOf(v: unknown, out: string[]): string[] {
  if (typeof v === 'string') out.push(v);
  else if (typeof v === 'number') out.push(String(v));
  else if (Array.isArray(v)) for (const inner of v) leavesOf(inner, out);
  else if (v !== null && typeof v === 'object') {
    for (const [k, inner] of Object.entries(v)) {
      out.push(k);
      leavesOf(inner, out);
    }
  }
  return out;
}

/** `v` with each leaf replaced by `next(leaf)` (a number whose text changed becomes a string). */
function rebuild(v: unknown, next: (leaf: string) => string): unknown {
  if (typeof v === 'string') return next(v);
  if (typeof v === 'number') {
    const s = String(v);
    const changed = next(s);
    return changed === s ? v : changed;
  }
  if (Array.isArray(v)) return v.map((inner) => rebuild(inner, next));
  if (v !== null && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, inner] of Object.entries(v)) {
      const key = next(k);
      out[key] = rebuild(inner, next);
    }
    return out;
  }
  return v;
}

/**
 * The leaves a rule may match: the ones a match in all of them joined by newlines touches, found in one pass per rule
 * (a JSON of many small strings is not scanned string by string). Every leaf when a rule reads a match's context.
 */
function leavesToScan(leaves: readonly string[], rules: readonly Rule[]): (i: number) => boolean {
  if (!rules.every((r) => r.contextFree)) return () => true;
  const joined = leaves.join('\n');
  const starts: number[] = [];
  let at = 0;
  for (const leaf of leaves) {
    starts.push(at);
    at += leaf.length + 1;
  }
  const folded = foldText(joined);
  const hit = new Set<number>();
  for (const rule of rules) {
    const spans = spansOf(rule, joined);
    if (folded) for (const s of spansOf(rule, folded.text)) spans.push(folded.back(s));
    for (const span of spans) {
      // The last leaf starting at or before the span, then each one it reaches into.
      let lo = 0;
      let hi = starts.length - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (starts[mid]! <= span.start) lo = mid;
        else hi = mid - 1;
      }
      for (let i = lo; i < starts.length && starts[i]! < span.end; i++) hit.add(i);
    }
  }
  return (i) => hit.has(i);
}

/**
 * What a JSON text (tool-call arguments, a function response; `GuardMessage.json`) becomes, masked where its text is
 * (ADR 0165): each string, key and number is scanned as the text it decodes to (an escape such as `\u0053` hides
 * nothing), a masked one is written back as a JSON string, so the answer stays valid JSON of the same shape. The JSON
 * text as a whole is scanned too, for a rejection (a pattern written against the JSON). Null when it is no JSON
 * (scanned as plain text then), undefined when unchanged.
 */
function scanJson(text: string, rules: readonly Rule[], reject: boolean): string | true | undefined | null {
  // Without escapes each string and key is in the JSON text as it is (between quotes, which no rule reads as part of
  // a word): when no rule matches the text, none matches a leaf, and nothing is parsed.
  const plain = !text.includes('\\') && rules.every((r) => r.contextFree);
  if (reject || plain) {
    const whole = scan([text], rules, true);
    if (whole === true && reject) return true;
    // Nothing matched: unchanged, JSON or not.
    if (whole === undefined && plain) return undefined;
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  const leaves = leavesOf(value, []);
  const wanted = leavesToScan(leaves, rules);
  const results = leaves.map((leaf, i) => (wanted(i) ? scan([leaf], rules, reject) : undefined));
  if (results.includes(true)) return true;
  if (results.every((r) => r === undefined)) return undefined;
  let k = 0;
  return JSON.stringify(
    rebuild(value, (leaf) => {
      const r = results[k++];
      return Array.isArray(r) ? r[0]! : leaf;
    }),
  );
}

/**
 * The `regex` guard (BEHAVIOUR.md §2.9): rules in order over each text; `mask` (default) replaces builtin matches
 * with `<ENTITY>` and pattern matches with `<masked>`, `reject` rejects on the first match.
 */
export function compileRegexGuard(config: RegexGuardConfig, ctx: CompileContext): GuardInstance {
  const reject = config.action === 'reject';
  const rules: Rule[] = config.rules.map((r, i): Rule => {
    if ('builtin' in r) return { kind: 'builtin', builtin: r.builtin, contextFree: true };
    const re = compilePattern(r.pattern);
    if (typeof re === 'string') ctx.fail(re, ['rules', i, 'pattern']);
    return { kind: 'pattern', re, contextFree: !CONTEXT.test(re.source) };
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
