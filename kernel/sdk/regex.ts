import { setFlagsFromString } from 'node:v8';

// docs/adr/0021: a user's regular expression runs on V8's backtracking engine, which falls back to V8's linear-time
// engine when one execution backtracks too much. Both flags are read when a regex is compiled (lazily, on first
// use), so setting them here, before any user pattern runs, covers the CLI, tests and `createGateway` alike.
// `--enable-experimental-regexp-engine` only makes the `l` flag known, which the load-time check below uses.
setFlagsFromString('--enable-experimental-regexp-engine');
setFlagsFromString('--enable-experimental-regexp-engine-on-excessive-backtracks');

/** Whether this V8 took the flags: without them every pattern is refused rather than left unprotected. */
const LINEAR_ENGINE = ((): boolean => {
  try {
    new RegExp('a', 'l');
    return true;
  } catch {
    return false;
  }
})();

/** How a user's pattern is used. */
export interface UserRegexOptions {
  /** The pattern must match the whole value (route matches: BEHAVIOUR.md DECIDED 2). Default: a search. */
  readonly whole?: boolean;
  /** Add the `g` flag, for `matchAll` / `replace` of every match. */
  readonly global?: boolean;
}

/** Constructs the linear-time engine cannot run, found by {@link findUnsupported}. */
interface Unsupported {
  readonly construct: string;
  readonly offset: number;
}

/**
 * Compile a regular expression written by a user (a config value, a CEL argument, a guard rule) so that no input
 * can make it run for more than linear time (docs/adr/0021). The syntax is JavaScript's, without the `u` flag; a
 * leading inline flag group as other dialects write it (`(?i)`, `(?s)`, `(?m)`, `(?is)`) sets those flags.
 * Constructs that need backtracking (lookahead, backreferences) or Unicode mode (`\p{...}`, `\u{...}`) are refused.
 *
 * Returns the compiled expression, or a message that names the problem and its offset in the pattern
 * (`invalid regular expression `(a)\1`: backreference `\1` at offset 3 is not supported ...`), for `ctx.fail`.
 * Compile once at config load; never per request.
 */
export function compileUserRegex(pattern: string, options: UserRegexOptions = {}): RegExp | string {
  const fail = (why: string): string => `invalid regular expression \`${pattern}\`: ${why}`;
  let body = pattern;
  let flags = '';
  const inline = /^\(\?([imsx]+)\)/.exec(body);
  if (inline) {
    if (inline[1]!.includes('x')) return fail('`(?x)` (extended mode) is not supported; remove the whitespace and comments');
    flags = [...new Set(inline[1]!)].join('');
    body = body.slice(inline[0].length);
  }
  // The syntax must be valid JavaScript, in Unicode mode or (for patterns such as `a\-b`) without it.
  try {
    new RegExp(body, 'u');
  } catch {
    try {
      new RegExp(body);
    } catch (err) {
      const message = String((err as Error).message);
      const prefix = `Invalid regular expression: /${body}/: `;
      return fail(message.startsWith(prefix) ? message.slice(prefix.length) : message);
    }
  }
  const unsupported = findUnsupported(body);
  if (unsupported) return fail(`${unsupported.construct} at offset ${unsupported.offset + (inline?.[0].length ?? 0)} is not supported (regular expressions run in linear time; docs/security.md)`);
  if (!LINEAR_ENGINE) return fail('this Node.js did not enable its linear-time regular expression engine, so no pattern is accepted');
  // The linear engine has no case-insensitive mode: `i` becomes explicit case variants.
  if (flags.includes('i')) {
    body = foldCase(body);
    flags = flags.replace('i', '');
  }
  const source = options.whole ? `^(?:${body})$` : body;
  if (options.global) flags += 'g';
  try {
    new RegExp(source, `${flags}l`);
  } catch {
    return fail('it cannot run in linear time (a counted repetition inside another, such as `(a{1,100}){1,100}`, is the usual cause)');
  }
  return new RegExp(source, flags);
}

/** The reason `compileUserRegex` refuses a pattern, or undefined when it compiles. */
export function userRegexProblem(pattern: string, options: UserRegexOptions = {}): string | undefined {
  const re = compileUserRegex(pattern, options);
  return typeof re === 'string' ? re : undefined;
}

/**
 * The first construct the linear engine cannot run, with a name a user recognises. Character classes are skipped
 * over (`[(?=]` is three characters); the pattern is already known to be valid.
 */
function findUnsupported(p: string): Unsupported | undefined {
  let inClass = false;
  for (let i = 0; i < p.length; i++) {
    const c = p[i];
    if (c === '\\') {
      const n = p[i + 1];
      if (n === 'p' || n === 'P') return { construct: `Unicode property escape \`\\${n}\``, offset: i };
      if (n === 'u' && p[i + 2] === '{') return { construct: 'code point escape `\\u{\u2026}`', offset: i };
      if (!inClass && n !== undefined && n >= '1' && n <= '9') return { construct: `backreference \`\\${n}\``, offset: i };
      if (!inClass && n === 'k' && p[i + 2] === '<') return { construct: 'named backreference `\\k<\u2026>`', offset: i };
      i++;
    } else if (inClass) {
      if (c === ']') inClass = false;
    } else if (c === '[') {
      inClass = true;
    } else if (c === '(' && p[i + 1] === '?') {
      const n = p[i + 2];
      if (n === '=') return { construct: 'lookahead `(?=`', offset: i };
      if (n === '!') return { construct: 'negative lookahead `(?!`', offset: i };
      const modifier = /^\(\?[ims-]+:/.exec(p.slice(i, i + 8));
      if (modifier) return { construct: `modifier group \`${modifier[0]}\` (put \`(?i)\` at the start of the pattern instead)`, offset: i };
    }
  }
  return undefined;
}

// ---- case folding (the `i` flag, spelled out as character classes) ----

/** Case-equivalence classes of the BMP as non-Unicode `i` matching defines them (ECMA-262 Canonicalize), built on first use. */
let foldClasses: Map<number, readonly number[]> | undefined;

function canonicalize(cp: number): number {
  const upper = String.fromCharCode(cp).toUpperCase();
  if (upper.length !== 1) return cp;
  const u = upper.charCodeAt(0);
  return cp >= 128 && u < 128 ? cp : u;
}

/** Every code unit that matches `cp` case-insensitively (itself included); undefined when it has no other case. */
function caseVariants(cp: number): readonly number[] | undefined {
  if (!foldClasses) {
    const byCanon = new Map<number, number[]>();
    for (let c = 0; c <= 0xffff; c++) {
      const k = canonicalize(c);
      const list = byCanon.get(k);
      if (list) list.push(c);
      else byCanon.set(k, [c]);
    }
    foldClasses = new Map();
    for (const list of byCanon.values()) if (list.length > 1) for (const c of list) foldClasses.set(c, list);
  }
  return foldClasses.get(cp);
}

const hex4 = (cp: number): string => `\\u${cp.toString(16).padStart(4, '0')}`;

/** The code unit an escape stands for (`\x41`, `\u0041`, `\n`, an escaped literal), or undefined for a class escape or another construct. */
function escapeValue(esc: string): number | undefined {
  const n = esc[1]!;
  if (n === 'x' || n === 'u') return esc.length > 2 ? parseInt(esc.slice(2), 16) : n.charCodeAt(0);
  if (n === 'c') return esc.length > 2 ? esc.charCodeAt(2) % 32 : undefined;
  if (/[dDwWsSbB0-9]/.test(n)) return undefined;
  return { t: 9, n: 10, v: 11, f: 12, r: 13 }[n] ?? n.charCodeAt(0);
}

/** The escape starting at `i` (`\x41`, `\u0041`, `\cA`, or a backslash and one character). */
function escapeAt(p: string, i: number): string {
  const n = p[i + 1];
  if (n === 'x' && /^[0-9a-fA-F]{2}$/.test(p.slice(i + 2, i + 4))) return p.slice(i, i + 4);
  if (n === 'u' && /^[0-9a-fA-F]{4}$/.test(p.slice(i + 2, i + 6))) return p.slice(i, i + 6);
  if (n === 'c' && /^[a-zA-Z]$/.test(p[i + 2] ?? '')) return p.slice(i, i + 3);
  return p.slice(i, i + 2);
}

/** Rewrite a pattern so that, without `i`, it matches what it matched with `i`. */
function foldCase(p: string): string {
  let out = '';
  let i = 0;
  while (i < p.length) {
    const c = p[i]!;
    if (c === '\\') {
      const esc = escapeAt(p, i);
      const v = escapeValue(esc);
      const variants = v === undefined ? undefined : caseVariants(v);
      out += variants ? `[${variants.map(hex4).join('')}]` : esc;
      i += esc.length;
    } else if (c === '[') {
      const end = classEnd(p, i);
      out += foldClass(p.slice(i, end));
      i = end;
    } else if (c === '(' && p[i + 1] === '?' && p[i + 2] === '<' && p[i + 3] !== '=' && p[i + 3] !== '!') {
      // A group name is not text to match.
      const close = p.indexOf('>', i);
      out += p.slice(i, close + 1);
      i = close + 1;
    } else {
      const variants = caseVariants(c.charCodeAt(0));
      out += variants ? `[${variants.map(hex4).join('')}]` : c;
      i++;
    }
  }
  return out;
}

/** Index just past the `]` closing the class that opens at `start` (JavaScript: `[]` is an empty class). */
function classEnd(p: string, start: number): number {
  let i = start + 1;
  if (p[i] === '^') i++;
  while (i < p.length && p[i] !== ']') i += p[i] === '\\' ? escapeAt(p, i).length : 1;
  return i + 1;
}

/** A character class with the other case of each of its characters and ranges added. */
function foldClass(cls: string): string {
  const inner = cls.slice(cls[1] === '^' ? 2 : 1, -1);
  const atoms: (number | undefined)[] = [];
  const raw: string[] = [];
  for (let i = 0; i < inner.length; ) {
    const tok = inner[i] === '\\' ? escapeAt(inner, i) : inner[i]!;
    atoms.push(tok.length === 1 ? tok.charCodeAt(0) : tok === '\\b' ? 8 : escapeValue(tok));
    raw.push(tok);
    i += tok.length;
  }
  const extra = new Set<number>();
  const add = (cp: number) => {
    for (const v of caseVariants(cp) ?? []) extra.add(v);
  };
  for (let k = 0; k < atoms.length; k++) {
    const lo = atoms[k];
    if (raw[k + 1] === '-' && k + 2 < atoms.length && lo !== undefined && atoms[k + 2] !== undefined) {
      for (let cp = lo; cp <= atoms[k + 2]!; cp++) add(cp);
      k += 2;
    } else if (lo !== undefined) add(lo);
  }
  if (extra.size === 0) return cls;
  return `${cls.slice(0, -1)}${[...extra].sort((a, b) => a - b).map(hex4).join('')}]`;
}
