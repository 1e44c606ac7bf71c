import { didYouMean } from '../sdk/did-you-mean.ts';

/**
 * Names an expression uses, checked at load (docs/adr/0145): a misspelt variable, field of `request`/`source`/
 * `response` or function is a config error with a suggestion, and a name of the reference gateway's CEL that
 * Switchyard does not provide says so, instead of the engine's "no matching overload" or, for a field, a rule that
 * silently never holds.
 */

/** What the environment declares. */
export interface CelNames {
  /** Variables and constants (`request`, `jwt`, `base64`, type names). */
  readonly variables: ReadonlySet<string>;
  /** Global functions (`size`, `cidr`). */
  readonly globals: ReadonlySet<string>;
  /** Receiver methods, whatever the receiver (`startsWith`, `containsIP`). */
  readonly methods: ReadonlySet<string>;
  /** Functions of a namespace constant (`base64.encode`, `cel.bind`). */
  readonly namespaced: ReadonlySet<string>;
  /** The fixed fields of the gateway's own variables. */
  readonly fields: ReadonlyMap<string, ReadonlySet<string>>;
}

export interface NameProblem {
  readonly message: string;
  /** Where in the expression (0-based). */
  readonly offset: number;
}

// BEHAVIOUR.md §10: the reference's names Switchyard does not provide (docs/cel.md#not-available).
const ABSENT_VARIABLES = new Set(['destination', 'backend', 'proxy', 'env', 'extauthz', 'extproc', 'mcpGuardrails', 'metadata']);
const ABSENT_FIELDS: Readonly<Record<string, readonly string[]>> = {
  request: ['body', 'bodyPrefix', 'startTime', 'endTime'],
  source: ['identity', 'unverifiedWorkload', 'connectHeaders'],
  response: ['body', 'bodyPrefix'],
};
const ABSENT_GLOBALS = new Set(['variables', 'unvalidatedJwtPayload', 'flatten', 'flattenRecursive', 'coalesce', 'regexReplace']);
const ABSENT_NAMESPACES = new Set(['sha1', 'sha256', 'md5', 'form', 'math', 'strings', 'lists', 'sets', 'regex']);
const ABSENT_METHODS = new Set(['raw', 'redacted', 'unredacted', 'cookie', 'query', 'addQuery', 'setQuery', 'format', 'quote', 'reverse', 'sortBy', 'distinct', 'slice', 'transformList', 'transformMap', 'transformMapEntry']);
const NOT_AVAILABLE = 'of the reference gateway that Switchyard does not provide (docs/cel.md#not-available)';

/** Methods whose first argument names a variable bound in the others. */
const BINDERS = new Set(['all', 'exists', 'exists_one', 'map', 'filter', 'with', 'filterKeys', 'removeKeys', 'mapValues']);
const QUANTIFIERS = new Set(['all', 'exists', 'exists_one']);

interface Node {
  readonly op: string;
  readonly args: unknown;
  readonly pos?: number;
  readonly start?: number;
  readonly end?: number;
  readonly input?: string;
}

function isNode(x: unknown): x is Node {
  return x !== null && typeof x === 'object' && !Array.isArray(x) && typeof (x as { op?: unknown }).op === 'string';
}

const suggest = (word: string, candidates: Iterable<string>): string => {
  // A one- or two-letter name is close to too much to suggest anything.
  const near = word.length < 3 ? undefined : didYouMean(word, candidates);
  return near !== undefined && near !== word ? `; did you mean \`${near}\`?` : '';
};

/** The first name problem of a parsed expression (cel-js AST), in source order. */
export function findNameProblem(root: unknown, names: CelNames): NameProblem | undefined {
  const visit = (x: unknown, bound: ReadonlySet<string>): NameProblem | undefined => {
    if (Array.isArray(x)) {
      for (const item of x) {
        const p = visit(item, bound);
        if (p) return p;
      }
      return undefined;
    }
    if (!isNode(x)) return undefined;
    const at = x.pos ?? x.start ?? 0;
    switch (x.op) {
      case 'id': {
        const name = x.args as string;
        if (bound.has(name) || names.variables.has(name)) return undefined;
        if (ABSENT_VARIABLES.has(name)) return { message: `\`${name}\` is a variable ${NOT_AVAILABLE}`, offset: x.start ?? at };
        return { message: `unknown variable \`${name}\`${suggest(name, names.variables)}`, offset: x.start ?? at };
      }
      case '.':
      case '.?': {
        const [obj, field] = x.args as [Node, string];
        const known = obj.op === 'id' && !bound.has(obj.args as string) ? names.fields.get(obj.args as string) : undefined;
        if (known !== undefined && !known.has(field)) {
          const v = obj.args as string;
          if (ABSENT_FIELDS[v]?.includes(field)) return { message: `\`${v}.${field}\` is a field ${NOT_AVAILABLE}`, offset: at };
          return { message: `\`${v}\` has no field \`${field}\`${suggest(field, known)}`, offset: at };
        }
        return visit(obj, bound);
      }
      case 'call': {
        const [name, args] = x.args as [string, Node[]];
        if (!names.globals.has(name)) {
          if (ABSENT_GLOBALS.has(name)) return { message: `\`${name}()\` is a function ${NOT_AVAILABLE}${name === 'regexReplace' ? '; write it as a method: `s.regexReplace(re, to)`' : ''}`, offset: x.start ?? at };
          return { message: `unknown function \`${name}\`${suggest(name, names.globals)}`, offset: x.start ?? at };
        }
        return visit(args, bound);
      }
      case 'rcall':
        return visitMethod(x, bound);
      case '-': {
        // `request.headers.x-user` parses as `request.headers.x - user`: say so rather than "unknown variable `user`".
        const [left, right] = x.args as [Node, Node];
        const name = right.op === 'id' ? (right.args as string) : undefined;
        if (left.op === '.' && name !== undefined && !bound.has(name) && !names.variables.has(name)) {
          const field = `${(left.args as [Node, string])[1]}-${name}`;
          return { message: `\`${field}\` reads as a subtraction; write a name with a dash as an index: \`["${field}"]\``, offset: left.pos ?? at };
        }
        return visit(x.args, bound);
      }
      default:
        return visit(isNode(x.args) ? [x.args] : x.args, bound);
    }
  };

  const visitMethod = (x: Node, bound: ReadonlySet<string>): NameProblem | undefined => {
    const [name, receiver, args] = x.args as [string, Node, Node[]];
    const at = x.input !== undefined && receiver.end !== undefined ? Math.max(0, x.input.indexOf(name, receiver.end)) : (x.pos ?? 0);
    // `base64.encode(...)`: a receiver that is a bare name may be a namespace.
    const ns = receiver.op === 'id' && !bound.has(receiver.args as string) ? (receiver.args as string) : undefined;
    const full = `${ns}.${name}`;
    const namespaced = ns !== undefined && names.namespaced.has(full);
    if (ns !== undefined && !namespaced) {
      if (ABSENT_VARIABLES.has(ns) && !names.variables.has(ns)) return visit(receiver, bound);
      if (ABSENT_NAMESPACES.has(ns)) return { message: `\`${full}()\` is a function ${NOT_AVAILABLE}`, offset: receiver.start ?? at };
      if (!names.variables.has(ns) || [...names.namespaced].some((f) => f.startsWith(`${ns}.`))) {
        return { message: `unknown function \`${full}\`${suggest(full, names.namespaced)}`, offset: receiver.start ?? at };
      }
    }
    if (!namespaced && !names.methods.has(name)) {
      if (ABSENT_METHODS.has(name)) return { message: `\`${name}()\` is a function ${NOT_AVAILABLE}`, offset: at };
      return { message: `unknown function \`${name}\`${suggest(name, names.methods)}`, offset: at };
    }
    const binder = args[0]?.op === 'id' && (BINDERS.has(name) || full === 'cel.bind');
    if (!binder) return visit([receiver, args], bound);
    if (QUANTIFIERS.has(name) && args.length === 3) return { message: `the two-variable form \`${name}(key, value, predicate)\` is a macro ${NOT_AVAILABLE}`, offset: at };
    const inner = new Set(bound).add(args[0]!.args as string);
    // `cel.bind(v, value, body)`: `value` is outside the binding, `body` inside; `list.all(v, p)`: the list outside.
    if (full === 'cel.bind') return visit(args[1], bound) ?? visit(args[2], inner);
    return visit(receiver, bound) ?? visit(args.slice(1), inner);
  };

  return visit(root, new Set());
}
