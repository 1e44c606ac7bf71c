/**
 * Names a client may send that become span names or metric labels (ADR 0130): a method outside the protocol's list,
 * a tool no server declared, a model no provider answered for. Each is kept only when known, else it is `_OTHER`, the
 * value OpenTelemetry semantic conventions give an unknown method (`http.request.method`, `rpc.method`), so a client
 * cannot add span names or metric series by inventing names.
 */

/** The name of anything not known. */
export const OTHER = '_OTHER';

/** `name` when `known` has it, else `_OTHER`. */
export function knownOrOther(known: ReadonlySet<string>, name: string): string {
  return known.has(name) ? name : OTHER;
}

/**
 * Longest client-chosen name kept on a log line, a span or a label (a metric label is cut there anyway): a name can
 * be as long as the request body that carries it. MCP names tools in 128 characters; model ids and A2A methods are
 * shorter still.
 */
export const MAX_NAME = 256;

/** `value` when it is a string of at most `max` characters (MAX_NAME), else undefined. */
export function boundedName(value: unknown, max = MAX_NAME): string | undefined {
  return typeof value === 'string' && value.length <= max ? value : undefined;
}

/**
 * Names an upstream vouched for: declared in its list (MCP `tools/list`), or answered successfully (an LLM provider
 * for a model). At most `max` are kept, of at most MAX_NAME characters; others stay `_OTHER`, so a permissive
 * upstream is bounded too.
 */
export class VouchedNames {
  private readonly names = new Set<string>();
  private readonly max: number;

  constructor(max: number, seed: Iterable<string> = []) {
    this.max = max;
    for (const name of seed) this.vouch(name);
  }

  vouch(name: string): void {
    if (this.names.size < this.max && name.length <= MAX_NAME) this.names.add(name);
  }

  has(name: string): boolean {
    return this.names.has(name);
  }

  /** `name` once vouched for, else `_OTHER`. */
  label(name: string): string {
    return this.names.has(name) ? name : OTHER;
  }
}
