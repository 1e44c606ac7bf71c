/** Tests an Origin header against `allowOrigins`. Built once at load. */
export type OriginTest = (origin: string) => boolean;

interface ParsedOrigin {
  scheme: string;
  host: string;
  port: string;
}

const DEFAULT_PORT: Record<string, string> = { http: '80', https: '443' };

/**
 * A host as browsers serialise one in `Origin` (ASCII, IDNs in punycode; an IPv6 literal in brackets): `#`, `?`, `@`,
 * `%` and the like are no host's, and a glob's `*` must not reach across them (ADR 0185).
 */
function parseOrigin(text: string): ParsedOrigin | undefined {
  const m = /^(https?):\/\/([a-z0-9._~-]+|\[[0-9a-f:.]+\])(?::(\d+))?\/?$/i.exec(text.trim());
  if (!m) return undefined;
  const scheme = m[1]!.toLowerCase();
  return { scheme, host: m[2]!.toLowerCase(), port: m[3] ?? DEFAULT_PORT[scheme]! };
}

/** One key per origin however it is spelled: `https://app.example.com` and `HTTPS://App.Example.com:443` are one. */
function originKey(o: ParsedOrigin): string {
  return `${o.scheme}://${o.host}:${o.port}`;
}

/**
 * Compile `allowOrigins`. Scheme and port must match exactly, the host case-insensitively; `*` inside the host
 * is a glob over characters other than `/` and `:`. Returns an error message for an entry that is not an origin.
 * Entries without `*` are one set lookup together, so an unlisted Origin costs the glob entries only, however many
 * exact ones the list has.
 */
export function compileOriginTest(allowOrigins: readonly string[]): OriginTest | string {
  if (allowOrigins.includes('*')) return () => true;
  const exactKeys = new Set<string>();
  const globs: ((o: ParsedOrigin) => boolean)[] = [];
  for (const entry of allowOrigins) {
    const parsed = parseOrigin(entry.replace(/\*/g, 'wildcard-placeholder'));
    if (!parsed) return `\`${entry}\` is not an origin (write \`scheme://host[:port]\` or \`*\`)`;
    if (!entry.includes('*')) {
      exactKeys.add(originKey(parsed));
      continue;
    }
    const hostPattern = new RegExp(
      `^${parsed.host
        .split('wildcard-placeholder')
        .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
        .join('[^/:]*')}$`,
    );
    globs.push((o) => o.scheme === parsed.scheme && o.port === parsed.port && hostPattern.test(o.host));
  }
  // An Origin written exactly as an entry without `*` passes without parsing (a browser sends the same string on
  // every request); any other spelling (case, default port) goes through the parse.
  const exact = new Set(allowOrigins.filter((o) => !o.includes('*')));
  return (origin) => {
    if (exact.has(origin)) return true;
    const parsed = parseOrigin(origin);
    return parsed !== undefined && (exactKeys.has(originKey(parsed)) || globs.some((t) => t(parsed)));
  };
}
