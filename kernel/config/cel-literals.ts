import { isSensitiveName, REDACTED } from './secret-marks.ts';

/** Shapes of well-known credentials: auth schemes, provider key prefixes, JWTs, AWS key ids. */
const CREDENTIAL_SHAPE =
  /^(?:(?:bearer|basic|token|digest)\s+\S|(?:sk|pk|rk)[-_][A-Za-z0-9]|(?:ghp|gho|ghu|ghs|ghr|github_pat)_|xox[abprs]-|glpat-|AIza|(?:AKIA|ASIA)[A-Z0-9]{12}|eyJ[A-Za-z0-9_-]+\.)/i;
/** A long run of token characters mixing letters and digits (random keys, UUIDs). */
const TOKEN_LIKE = /^(?=.*[0-9])(?=.*[A-Za-z])[A-Za-z0-9+/=_.-]{20,}$/;
/** A field selection (`apiKey.key`, `basicAuth.password`) outside literals. */
const FIELD = /\.\s*([A-Za-z_][A-Za-z0-9_]*)/g;

/** Whether a string may be a credential by its shape alone. */
export function looksLikeCredential(text: string): boolean {
  return CREDENTIAL_SHAPE.test(text) || TOKEN_LIKE.test(text);
}

interface Literal {
  /** Offsets of the literal's content, quotes excluded. */
  readonly start: number;
  readonly end: number;
  readonly text: string;
  /** Written as a map index, `headers["x-api-key"]`: a name, not a value. */
  readonly index: boolean;
}

/** The string literals of a CEL expression: `'...'`, `"..."`, triple-quoted, with `r`/`b` prefixes. */
function literals(expr: string): Literal[] {
  const out: Literal[] = [];
  let i = 0;
  while (i < expr.length) {
    const c = expr[i]!;
    if (c !== '"' && c !== "'") {
      i++;
      continue;
    }
    const raw = /[rR]/.test(expr[i - 1] ?? '') || /[rR]/.test(expr[i - 2] ?? '');
    const quote = expr.startsWith(c.repeat(3), i) ? c.repeat(3) : c;
    const start = i + quote.length;
    let j = start;
    while (j < expr.length && !expr.startsWith(quote, j)) j += !raw && expr[j] === '\\' ? 2 : 1;
    const end = Math.min(j, expr.length);
    const index = /\[\s*[rRbB]{0,2}$/.test(expr.slice(0, i)) && /^\s*\]/.test(expr.slice(end + quote.length));
    out.push({ start, end, text: expr.slice(start, end), index });
    i = j + quote.length;
  }
  return out;
}

/**
 * The string literals of a CEL expression that must not be shown (ADR 0017): those shaped like credentials, and
 * every literal of an expression that touches a sensitive name (`request.headers["x-api-key"] == "..."`,
 * `apiKey.key == "..."`), except map indexes (the header names themselves).
 */
export function secretCelLiterals(expr: string): string[] {
  if (!expr.includes('"') && !expr.includes("'")) return [];
  const found = literals(expr);
  // The expression with literal contents blanked, to find field selections.
  let outside = expr;
  for (const l of found) outside = outside.slice(0, l.start) + ' '.repeat(l.end - l.start) + outside.slice(l.end);
  let context = found.some((l) => l.index && isSensitiveName(l.text));
  if (!context) for (const m of outside.matchAll(FIELD)) if (isSensitiveName(m[1]!)) context = true;
  return found.filter((l) => l.text !== '' && (looksLikeCredential(l.text) || (context && !l.index))).map((l) => l.text);
}

/** The expression with its secret literals replaced by `<redacted>`. */
export function scrubCelLiterals(expr: string): string {
  const hidden = new Set(secretCelLiterals(expr));
  if (hidden.size === 0) return expr;
  const found = literals(expr);
  let out = '';
  let from = 0;
  for (const l of found) {
    if (!hidden.has(l.text)) continue;
    out += expr.slice(from, l.start) + REDACTED;
    from = l.end;
  }
  return out + expr.slice(from);
}
