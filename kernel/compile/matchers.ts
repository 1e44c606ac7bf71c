import type { IncomingHttpHeaders } from 'node:http';
import { compileUserRegex } from '../sdk/regex.ts';

/** What route matching looks at. */
export interface MatchInput {
  readonly method: string;
  readonly path: string;
  readonly query: string;
  readonly headers: IncomingHttpHeaders;
  /** Parsed query, created on first use by a query matcher. */
  params: URLSearchParams | undefined;
}

export type ValueTest = (value: string) => boolean;

interface StringMatchConfig {
  exact?: string;
  regex?: string;
}

/**
 * `regex` must match the whole value (BEHAVIOUR.md DECIDED 2). Built once at load, in linear time whatever the
 * input (docs/adr/0021); the schema's `format: regex` has already refused a pattern this cannot compile.
 */
export function compileValueTest(spec: StringMatchConfig): ValueTest {
  if (spec.exact !== undefined) {
    const exact = spec.exact;
    return (v) => v === exact;
  }
  const re = compileUserRegex(spec.regex!, { whole: true });
  if (typeof re === 'string') throw new Error(re);
  return (v) => re.test(v);
}

/** Segment-aware prefix test: `/foo` matches `/foo`, `/foo/`, `/foo/bar`, never `/foobar`. */
export function compilePrefixTest(prefix: string): (path: string) => boolean {
  const p = prefix.replace(/\/+$/, '');
  if (p === '') return () => true;
  const len = p.length;
  return (path) => path.startsWith(p) && (path.length === len || path.charCodeAt(len) === 47 /* / */);
}

export interface MatchConfig {
  method?: string;
  path?: { exact?: string; pathPrefix?: string; regex?: string };
  headers?: { name: string; value: StringMatchConfig }[];
  query?: { name: string; value: StringMatchConfig }[];
}

export interface CompiledMatch {
  readonly test: (input: MatchInput) => boolean;
  /** The `pathPrefix` of this match (for prefix rewrites), `/` when the match has no path condition. */
  readonly prefix: string | undefined;
  /**
   * The first path segment every path this match accepts starts with (`/api` for `exact: /api/v1` or `pathPrefix:
   * /api/v1`), undefined when it may accept any path (no path condition, `pathPrefix: /`, a regex that does not spell
   * its first segment out): route-index.ts.
   */
  readonly firstSegment: string | undefined;
}

/**
 * The first segment of every path a whole-path regex accepts, when the regex spells it out: `/svc-2/[0-9]+` gives
 * `/svc-2`. Only a plain run of letters, digits, `_`, `-`, `~` after the leading `/`, followed by a `/` that no
 * quantifier follows, in a regex without `|`; undefined for anything else (the route is then tried for every path).
 */
function literalFirstSegment(regex: string): string | undefined {
  if (regex.charCodeAt(0) !== 47 /* / */ || regex.includes('|')) return undefined;
  const run = /^\/[A-Za-z0-9_~-]+/.exec(regex)?.[0];
  if (run === undefined) return undefined;
  const next = regex.charAt(run.length);
  if (next === '') return run;
  if (next !== '/' || '*?+{'.includes(regex.charAt(run.length + 1) || 'x')) return undefined;
  return run;
}

/** A path's first segment: up to the second `/` (`/api` of `/api/v1`; `/` of `/`; the whole path without one). */
export function firstSegmentOf(path: string): string {
  const end = path.indexOf('/', 1);
  return end === -1 ? path : path.slice(0, end);
}

/** Compile one match object: every condition in it must hold. */
export function compileMatch(match: MatchConfig): CompiledMatch {
  const tests: ((input: MatchInput) => boolean)[] = [];
  if (match.method) {
    const method = match.method.toUpperCase();
    tests.push((i) => i.method === method);
  }
  let prefix: string | undefined = '/';
  let firstSegment: string | undefined;
  if (match.path) {
    if (match.path.exact !== undefined) {
      const exact = match.path.exact;
      prefix = undefined;
      firstSegment = firstSegmentOf(exact);
      tests.push((i) => i.path === exact);
    } else if (match.path.pathPrefix !== undefined) {
      const test = compilePrefixTest(match.path.pathPrefix);
      prefix = match.path.pathPrefix;
      // Segment-aware: `/api/v1` accepts `/api/v1` and `/api/v1/x`, all of them in the segment `/api`.
      const literal = match.path.pathPrefix.replace(/\/+$/, '');
      if (literal !== '') firstSegment = firstSegmentOf(literal);
      tests.push((i) => test(i.path));
    } else if (match.path.regex !== undefined) {
      const test = compileValueTest({ regex: match.path.regex });
      prefix = undefined;
      firstSegment = literalFirstSegment(match.path.regex);
      tests.push((i) => test(i.path));
    }
  }
  for (const h of match.headers ?? []) {
    const name = h.name.toLowerCase();
    const test = compileValueTest(h.value);
    tests.push((i) => {
      const v = i.headers[name];
      if (v === undefined) return false;
      return Array.isArray(v) ? v.some(test) : test(v);
    });
  }
  for (const q of match.query ?? []) {
    const name = q.name;
    const test = compileValueTest(q.value);
    tests.push((i) => {
      if (i.query.length < 2) return false;
      const params = (i.params ??= new URLSearchParams(i.query.slice(1)));
      const v = params.get(name);
      return v !== null && test(v);
    });
  }
  const count = tests.length;
  const test =
    count === 0
      ? () => true
      : count === 1
        ? tests[0]!
        : (input: MatchInput) => {
            for (let k = 0; k < count; k++) if (!tests[k]!(input)) return false;
            return true;
          };
  return { test, prefix, firstSegment };
}

/** Hostname pattern test: exact, or `*.suffix` matching one or more labels before the suffix (never the bare suffix). */
export function compileHostnameTest(patterns: readonly string[]): (hostname: string) => boolean {
  const exact = new Set<string>();
  const suffixes: string[] = [];
  for (const raw of patterns) {
    const p = raw.toLowerCase();
    if (p.startsWith('*.')) suffixes.push(p.slice(1));
    else exact.add(p);
  }
  return (hostname) => {
    if (exact.has(hostname)) return true;
    for (const s of suffixes) if (hostname.length > s.length && hostname.endsWith(s)) return true;
    return false;
  };
}
