/** `path` of urlRewrite and requestRedirect: replace the whole path, or the matched prefix. */
export interface PathRewriteConfig {
  full?: string;
  prefix?: string;
}

/** Why a prefix rewrite could not run (the route matched without a `pathPrefix`). */
export const PREFIX_NEEDS_PREFIX_MATCH = 'a `path.prefix` rewrite needs the route to match with `pathPrefix`';

/** `value` without trailing slashes (no regex: runs per request for the matched prefix). */
function trimSlashes(value: string): string {
  let end = value.length;
  while (end > 0 && value.charCodeAt(end - 1) === 47) end--;
  return end === value.length ? value : value.slice(0, end);
}

/** A compiled path rewrite: the rewritten path, or undefined when a prefix rewrite meets a route matched without a prefix. */
export type PathRewriter = (path: string, matchedPrefix: string | undefined) => string | undefined;

/**
 * Compile a path rewrite once, at config load. Prefix rewriting is segment-aware: the matched prefix (trailing `/`
 * trimmed) is removed, the replacement put in front, with exactly one `/` at the join (BEHAVIOUR.md §2.4).
 * The kernel normalises the request path before routes are chosen (docs/adr/0013-path-normalisation.md), so the
 * rest of the path carries no dot segments that could climb out of the replacement.
 */
export function compilePathRewrite(config: PathRewriteConfig): PathRewriter {
  if (config.full !== undefined) {
    const full = config.full === '' ? '/' : config.full;
    return () => full;
  }
  if (config.prefix === undefined) return (path) => path;
  const replacement = trimSlashes(config.prefix);
  const bare = replacement === '' ? '/' : replacement.startsWith('/') ? replacement : `/${replacement}`;
  return (path, matchedPrefix) => {
    if (matchedPrefix === undefined) return undefined;
    const matched = trimSlashes(matchedPrefix);
    const rest = path.slice(matched.length);
    if (rest === '' || (rest === '/' && matched === '')) return bare;
    // `/foo/` -> `/bar/`: the trailing slash is the client's, kept as Gateway API's table and Envoy keep it (ADR 0185).
    if (rest === '/') return replacement === '' ? '/' : `${bare}/`;
    const out = `${replacement}${rest.charCodeAt(0) === 47 ? rest : `/${rest}`}`;
    return out.charCodeAt(0) === 47 ? out : `/${out}`;
  };
}

/** Visible ASCII but `#` (a fragment is never sent), with and without `?`. */
const PATH_CHARS_WITH_QUERY = /^[\x21\x22\x24-\x7e]*$/;
const PATH_CHARS = /^[\x21\x22\x24-\x3e\x40-\x7e]*$/;

/**
 * Why `config` is not a path, as `[field, message]`, else undefined. `full` is empty or starts with `/` (`evil.example/x`
 * ran into the authority of a redirect's Location); both hold visible ASCII only (a space reached the HTTP client,
 * which refused it: a 502 blamed on the upstream). `query` allows a `?` in `full` (a redirect's replaces the query).
 */
export function pathRewriteError(config: PathRewriteConfig, query: boolean): ['full' | 'prefix', string] | undefined {
  const what = query ? 'no `#`' : 'no `?` or `#`';
  if (config.full !== undefined) {
    const full = config.full;
    if ((full !== '' && full.charCodeAt(0) !== 47) || !(query ? PATH_CHARS_WITH_QUERY : PATH_CHARS).test(full)) {
      return ['full', `must be a path: empty or starting with \`/\`, visible ASCII characters only, ${what}`];
    }
  }
  if (config.prefix !== undefined && !PATH_CHARS.test(config.prefix)) {
    return ['prefix', 'must be a path prefix: visible ASCII characters only, no `?` or `#`'];
  }
  return undefined;
}

/** One-off form of `compilePathRewrite` (tests, rare callers). */
export function rewritePath(config: PathRewriteConfig, path: string, matchedPrefix: string | undefined): string | undefined {
  return compilePathRewrite(config)(path, matchedPrefix);
}

export const pathRewriteSchema = {
  type: 'object',
  description: 'Exactly one of `full` (replaces the whole path) or `prefix` (replaces the matched `pathPrefix`). The query string is kept.',
  properties: {
    full: { type: 'string', description: 'The new path: empty (`/`) or starting with `/`, visible ASCII, no `#`. A `?` is allowed only in a redirect, whose query it then replaces.' },
    prefix: { type: 'string', description: 'Replacement for the prefix the route matched (segment-aware); visible ASCII, no `?` or `#`.' },
  },
  additionalProperties: false,
  exactlyOneOf: ['full', 'prefix'],
};

/** `host`: a DNS name (one trailing dot allowed) or a bracketed IPv6 literal (an IPv4 address is a name here). */
const HOST = '(?:\\[[0-9A-Fa-f:.]+\\]|[A-Za-z0-9_](?:[A-Za-z0-9._-]*[A-Za-z0-9_])?\\.?)';

/**
 * Schema of a rewritten authority: `host[:port]`, or with `port: false` the host alone. Anything else went out as
 * the upstream's Host or into a redirect's Location (`http://evil.example/x?:8080/...`).
 */
export function authoritySchema(port: boolean, description: string): Record<string, unknown> {
  return {
    type: 'string',
    description,
    pattern: port ? `^${HOST}(?::[0-9]{1,5})?$` : `^${HOST}$`,
    'x-hint': port ? '`host[:port]` (a DNS name or IP address, then an optional port)' : 'a host name (a DNS name or IP address, no port)',
  };
}
