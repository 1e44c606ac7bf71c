import type { ConfigPath } from '../sdk/index.ts';
import { PathRejection, normalizePath } from '../exchange/normalize-path.ts';
import type { PathOptions } from '../exchange/normalize-path.ts';

/** Characters a request path carries as they are (RFC 3986 pchar, `/` and `%`); anything else arrives escaped. */
const AS_IS = /[A-Za-z0-9\-._~!$&'()*+,;=:@/%]/;

/** `text` as a request carries it: characters a path cannot hold raw, UTF-8 percent-escaped (upper case). */
function escapedAsSent(text: string): string {
  let out = '';
  for (const ch of text) out += AS_IS.test(ch) ? ch : encodeURIComponent(ch).replace(/%[0-9a-f]{2}/g, (e) => e.toUpperCase());
  return out;
}

/**
 * Why routes match normalised paths only (ADR 0013): an `exact` or `pathPrefix` no normalised path can equal
 * (`/a/../b`, `/caf\u00e9`, `/a b`, `//x`) never matches, silently. The message for the load's warning, or undefined
 * when the value is a path requests can have.
 */
export function unreachablePathMessage(value: string, options: PathOptions): string | undefined {
  if (value === '' || value.charCodeAt(0) !== 47 /* / */) return 'a path condition starts with `/`; request paths always do, so this never matches';
  const sent = escapedAsSent(value);
  const normal = normalizePath(sent, options);
  if (normal instanceof PathRejection) return `a request with this path is refused before routing (${normal.message}), so this never matches`;
  if (normal === value) return undefined;
  return `never matches: request paths are normalised before routing (\`..\`, \`//\`, escapes) and this is not a normalised path; did you mean \`${normal}\`?`;
}

/** The paths of a route's `matches` that no request can match, each with its message. */
export function unreachableMatchPaths(matches: unknown, options: PathOptions, at: ConfigPath): { path: ConfigPath; message: string }[] {
  const found: { path: ConfigPath; message: string }[] = [];
  if (!Array.isArray(matches)) return found;
  matches.forEach((match: { path?: { exact?: unknown; pathPrefix?: unknown } } | undefined, i) => {
    for (const key of ['exact', 'pathPrefix'] as const) {
      const value = match?.path?.[key];
      if (typeof value !== 'string') continue;
      // A prefix's trailing `/` is how it is written (`/api/` is `/api`), not part of what normalisation sees.
      const written = key === 'pathPrefix' && value.length > 1 ? value.replace(/\/+$/, '') || '/' : value;
      const message = unreachablePathMessage(written, options);
      if (message) found.push({ path: [...at, i, 'path', key], message });
    }
  });
  return found;
}
