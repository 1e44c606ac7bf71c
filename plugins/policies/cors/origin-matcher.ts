/** Tests an Origin header against `allowOrigins`. Built once at load. */
export type OriginTest = (origin: string) => boolean;

interface ParsedOrigin {
  scheme: string;
  host: string;
  port: string;
}

const DEFAULT_PORT: Record<string, string> = { http: '80', https: '443' };

function parseOrigin(text: string): ParsedOrigin | undefined {
  const m = /^(https?):\/\/([^/:]+|\[[^\]]+\])(?::(\d+))?\/?$/i.exec(text.trim());
  if (!m) return undefined;
  const scheme = m[1]!.toLowerCase();
  return { scheme, host: m[2]!.toLowerCase(), port: m[3] ?? DEFAULT_PORT[scheme]! };
}

/**
 * Compile `allowOrigins`. Scheme and port must match exactly, the host case-insensitively; `*` inside the host
 * is a glob over characters other than `/` and `:`. Returns an error message for an entry that is not an origin.
 */
export function compileOriginTest(allowOrigins: readonly string[]): OriginTest | string {
  if (allowOrigins.includes('*')) return () => true;
  const tests: ((o: ParsedOrigin) => boolean)[] = [];
  for (const entry of allowOrigins) {
    const parsed = parseOrigin(entry.replace(/\*/g, 'wildcard-placeholder'));
    if (!parsed) return `\`${entry}\` is not an origin (write \`scheme://host[:port]\` or \`*\`)`;
    const hostPattern = new RegExp(
      `^${parsed.host
        .split('wildcard-placeholder')
        .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
        .join('[^/:]*')}$`,
    );
    tests.push((o) => o.scheme === parsed.scheme && o.port === parsed.port && hostPattern.test(o.host));
  }
  // An Origin written exactly as an entry without `*` passes without parsing (a browser sends the same string on
  // every request); any other spelling (case, default port) goes through the parse.
  const exact = new Set(allowOrigins.filter((o) => !o.includes('*')));
  return (origin) => {
    if (exact.has(origin)) return true;
    const parsed = parseOrigin(origin);
    return parsed !== undefined && tests.some((t) => t(parsed));
  };
}
