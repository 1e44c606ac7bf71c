/** `path` of urlRewrite and requestRedirect: replace the whole path, or the matched prefix. */
export interface PathRewriteConfig {
  full?: string;
  prefix?: string;
}

/** Why a prefix rewrite could not run (the route matched without a `pathPrefix`). */
export const PREFIX_NEEDS_PREFIX_MATCH = 'a `path.prefix` rewrite needs the route to match with `pathPrefix`';

/**
 * Returns the rewritten path, or undefined when a prefix rewrite meets a route matched without a prefix.
 * Prefix rewriting is segment-aware: the matched prefix (trailing `/` trimmed) is removed, the replacement
 * put in front, with exactly one `/` at the join (BEHAVIOUR.md §2.4).
 */
export function rewritePath(config: PathRewriteConfig, path: string, matchedPrefix: string | undefined): string | undefined {
  if (config.full !== undefined) return config.full === '' ? '/' : config.full;
  if (config.prefix === undefined) return path;
  if (matchedPrefix === undefined) return undefined;
  const matched = matchedPrefix.replace(/\/+$/, '');
  const rest = path.slice(matched.length);
  const replacement = config.prefix.replace(/\/+$/, '');
  let out = rest === '' || rest === '/' ? replacement || '/' : `${replacement}${rest.startsWith('/') ? rest : `/${rest}`}`;
  if (!out.startsWith('/')) out = `/${out}`;
  return out;
}

export const pathRewriteSchema = {
  type: 'object',
  description: 'Exactly one of `full` (replaces the whole path) or `prefix` (replaces the matched `pathPrefix`). The query string is kept.',
  properties: {
    full: { type: 'string', description: 'The new path.' },
    prefix: { type: 'string', description: 'Replacement for the prefix the route matched (segment-aware).' },
  },
  additionalProperties: false,
  exactlyOneOf: ['full', 'prefix'],
};
