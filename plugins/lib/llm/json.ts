/** Loose JSON object shapes used by the format translators (bodies come from clients and providers). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Obj = Record<string, any>;

export function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The text of an OpenAI `content` (string, or array of parts of which the `text` ones count). */
export function textOf(content: unknown, sep = ''): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  const parts: string[] = [];
  for (const p of content) {
    if (typeof p === 'string') parts.push(p);
    else if (isObj(p) && typeof p.text === 'string') parts.push(p.text);
  }
  return parts.join(sep);
}

/** Parse tool-call arguments; a malformed string is kept whole rather than lost. */
export function parseArguments(args: unknown): Obj {
  if (isObj(args)) return args;
  if (typeof args !== 'string' || args.trim() === '') return {};
  try {
    const v = JSON.parse(args) as unknown;
    return isObj(v) ? v : { value: v };
  } catch {
    return { arguments: args };
  }
}

/** Copy `from[key]` to `to[as]` when it is set. */
export function copy(from: Obj, key: string, to: Obj, as = key): void {
  if (from[key] !== undefined && from[key] !== null) to[as] = from[key];
}

export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

/**
 * `data:<media>;base64,<data>` split, or undefined for any other URL. The scheme and `base64` are matched in any case
 * (RFC 2397); the media type is as written.
 */
export function parseDataUrl(url: string): { mediaType: string; data: string } | undefined {
  const m = /^data:([^;,]+);base64,(.*)$/is.exec(url);
  return m ? { mediaType: m[1]!, data: m[2]! } : undefined;
}
