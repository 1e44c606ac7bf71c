import { defineFacet, headerListAdd, headerListRemove, headerListSet, headerMapAdd } from 'switchyard/sdk';
import type { Exchange } from 'switchyard/sdk';
/** Config shape shared by `requestHeaderModifier` and `responseHeaderModifier`. */
export interface HeaderModifierConfig {
  add?: Record<string, string>;
  set?: Record<string, string>;
  remove?: string[];
}

type Headers = Record<string, string | string[] | number | undefined>;

/** A compiled header modifier: names lower-cased once, applied add -> set -> remove. */
export interface HeaderModifier {
  readonly add: readonly (readonly [string, string])[];
  readonly set: readonly (readonly [string, string])[];
  readonly remove: readonly string[];
}

/**
 * Provided by a `requestHeaderModifier` that adds or sets `Cookie`: a backend that withholds the client's cookies
 * (`ai`, ADR 0195) sends the header as the policies left it. Only such a modifier provides it, so a closer one
 * editing other headers does not hide it.
 */
export const SETS_COOKIE = defineFacet<true>('requestHeaderModifier.setsCookie');

const VALID_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** Any character of a string that is not Latin-1. */
const BEYOND_LATIN1 = /[^\x00-\xff]/;

/**
 * A value computed per request (a CEL result) as it can be sent in a header: undefined when it holds CR, LF or another
 * control character (no header can carry it), else as Latin-1 text whose bytes are the value's UTF-8 when it has
 * characters beyond Latin-1 (what Envoy sends). node:http and undici refuse both: the answer became a 500, the
 * request a 502 blamed on the upstream.
 */
export function sendableHeaderValue(value: string): string | undefined {
  if (!BEYOND_LATIN1.test(value)) return VALID_VALUE.test(value) ? value : undefined;
  const bytes = Buffer.from(value, 'utf8').toString('latin1');
  return VALID_VALUE.test(bytes) ? bytes : undefined;
}

/** Compile; returns an error message for values that cannot be sent in HTTP. */
export function compileHeaderModifier(config: HeaderModifierConfig): HeaderModifier | string {
  const pairs = (map: Record<string, string> | undefined): [string, string][] => Object.entries(map ?? {}).map(([k, v]) => [k.toLowerCase(), String(v)]);
  const add = pairs(config.add);
  const set = pairs(config.set);
  for (const [name, value] of [...add, ...set]) {
    if (!VALID_VALUE.test(value)) return `the value of header \`${name}\` contains characters not allowed in HTTP headers (CR, LF or control characters)`;
  }
  return { add, set, remove: (config.remove ?? []).map((n) => n.toLowerCase()) };
}

/**
 * The first `add` or `set` of a header edit naming `Content-Length`, as `[kind, name as written]`: the gateway frames
 * each message by the body it sends. On a response any other length left the rest of the body on a kept-alive
 * connection, read by the client (or a proxy in front) as the next answer; on a request a small one made every
 * larger upload a 413 (the body is read first up to that size).
 */
export function framingEdit(config: { add?: Record<string, string>; set?: Record<string, string> }): ['add' | 'set', string] | undefined {
  for (const kind of ['add', 'set'] as const) {
    for (const name of Object.keys(config[kind] ?? {})) if (name.toLowerCase() === 'content-length') return [kind, name];
  }
  return undefined;
}

/** The load error of `framingEdit`. */
export function framingMessage(name: string, side: 'request' | 'response'): string {
  return `\`${name}\` is the gateway's to set on a ${side} (the length of the body it sends)`;
}

/**
 * After a request edit that sets or adds `host` (only then: a backend's edit of other headers undid the route's
 * `urlRewrite` authority): an authority rewrite (BEHAVIOUR.md 2.4), the last value (an added one) winning. The
 * client's Host, first in the list, was taken before and an added one ignored.
 */
export function hostToAuthority(ex: Exchange): void {
  const host = ex.headers.host;
  if (host === undefined) return;
  const last = Array.isArray(host) ? host[host.length - 1]! : host;
  if (last !== ex.authority) ex.authority = last;
}

/** Apply to a header object in place: `add` appends a value, `set` replaces all values, `remove` drops them. */
export function applyHeaderModifier(m: HeaderModifier, headers: Headers): void {
  // Indexed loops: `for...of` with destructuring left an iterator and its results on the heap per request (~0.1 KiB
  // per modifier on the bench's policies route, docs/perf.md "Session 12, polcost").
  const { add, set, remove } = m;
  for (let i = 0; i < add.length; i++) headerMapAdd(headers, add[i]![0], add[i]![1]);
  for (let i = 0; i < set.length; i++) headers[set[i]![0]] = set[i]![1];
  // `delete` of an absent name still calls into the runtime; a load that misses does not.
  for (let i = 0; i < remove.length; i++) if (headers[remove[i]!] !== undefined) delete headers[remove[i]!];
}

/**
 * Apply to a forwarded answer's raw header list (`onResponseHeaders`, ADR 0071), as `applyHeaderModifier` changes a
 * header object: `add` after the name's last value, `set` where the name first appears, `remove` every value.
 */
export function applyHeaderModifierToList(m: HeaderModifier, list: string[]): void {
  // Indexed loops, as in `applyHeaderModifier`.
  const { add, set, remove } = m;
  for (let i = 0; i < add.length; i++) headerListAdd(list, add[i]![0], add[i]![1]);
  for (let i = 0; i < set.length; i++) headerListSet(list, set[i]![0], set[i]![1]);
  for (let i = 0; i < remove.length; i++) headerListRemove(list, remove[i]!);
}

/** A name-to-value map of `add` or `set` (values hidden as secrets). */
function headerValuesSchema(what: string): Record<string, unknown> {
  return {
    type: 'object',
    description: `Header name to value; ${what}. Values of sensitive headers are hidden in \`/config_dump\` and error messages.`,
    'x-secret': 'headers',
    propertyNames: { $ref: 'switchyard:defs#/$defs/headerName' },
    additionalProperties: { type: 'string' },
  };
}

/** JSON Schema of the modifier object, shared by both policies. */
export function headerModifierSchema(side: 'request' | 'response'): Record<string, unknown> {
  const target = side === 'request' ? 'the request sent upstream' : 'the response sent to the client (local replies and errors included)';
  return {
    type: 'object',
    description: `Change headers of ${target}: \`add\`, then \`set\`, then \`remove\`.`,
    properties: {
      add: headerValuesSchema('appended, existing values are kept'),
      set: headerValuesSchema('replaces any existing values'),
      remove: {
        type: 'array',
        description: 'Header names to remove.',
        items: { $ref: 'switchyard:defs#/$defs/headerName' },
      },
    },
    additionalProperties: false,
  };
}
