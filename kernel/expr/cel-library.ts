import type { Environment } from '@marcbachmann/cel-js';
import { EXPRESSION_STOPPED } from '../sdk/expr.ts';
import { compileUserRegex } from '../sdk/regex.ts';
import { registerReferenceFunctions } from './cel-reference-ext.ts';
import {
  CelCIDR,
  CelIP,
  isGlobalUnicast,
  isLinkLocalMulticast,
  isLinkLocalUnicast,
  isLoopback,
  isUnspecified,
  parseCIDR,
  parseIP,
} from './cel-ip.ts';
// Not `import ... from 'node:crypto'`: an ES import builds crypto's namespace, which reads its lazy `webcrypto` getter and
// so loads Node's WebCrypto for every gateway (docs/perf.md "Memory, session 10b").
const { randomUUID } = process.getBuiltinModule('node:crypto');

/**
 * The functions Switchyard adds to the standard CEL library (BEHAVIOUR.md §10: the Kubernetes IP/CIDR library and
 * the cheap helpers of the reference gateway). Each carries a description; docs/cel.md lists them and a test
 * checks the two agree.
 */

/** Namespace objects: `base64.encode(...)` is a receiver call on a constant of this type. */
class Base64Namespace {}
class UrlNamespace {}

/** Display names of namespace types in signatures (`Base64Namespace.encode` is documented as `base64.encode`). */
export const NAMESPACES: Readonly<Record<string, string>> = { Base64Namespace: 'base64', UrlNamespace: 'url' };

function toIP(text: string): CelIP {
  const ip = parseIP(text);
  if (!ip) throw new Error(`invalid IP address: ${JSON.stringify(text)}`);
  return ip;
}

// `cidr("10.0.0.0/8")` with a literal runs per request; remember the parsed ranges (bounded).
const cidrCache = new Map<string, CelCIDR>();

function toCIDR(text: string): CelCIDR {
  let c = cidrCache.get(text);
  if (c) return c;
  c = parseCIDR(text);
  if (!c) throw new Error(`invalid CIDR: ${JSON.stringify(text)}`);
  if (cidrCache.size >= 1024) cidrCache.clear();
  cidrCache.set(text, c);
  return c;
}

// Patterns computed per request (`x.matches(request.headers["p"])`) are compiled once each (bounded); literal
// patterns are compiled when the expression is (regexMacro).
const regexCache = new Map<string, RegExp | string>();

function toRegex(pattern: string, global: boolean): RegExp {
  const key = global ? `g${pattern}` : ` ${pattern}`;
  let re = regexCache.get(key);
  if (re === undefined) {
    re = compileUserRegex(pattern, { global });
    if (regexCache.size >= 256) regexCache.clear();
    regexCache.set(key, re);
  }
  if (typeof re === 'string') throw new Error(re);
  return re;
}

/**
 * Longest text a replacement may produce: twice its input, or 1 MiB. A client's header as both the text and the
 * replacement (`path.replace("/", request.headers["x"])`) would otherwise multiply their sizes.
 */
function replacedLimit(s: string): number {
  return Math.max(2 * s.length, 1 << 20);
}

function tooLong(limit: number): Error {
  return new Error(`replacement result longer than ${limit} characters`);
}

function replaceAll(s: string, from: string, to: string): string {
  if (to.length > from.length) {
    const count = from === '' ? s.length + 1 : s.split(from).length - 1;
    const limit = replacedLimit(s);
    if (s.length + count * (to.length - from.length) > limit) throw tooLong(limit);
  }
  return s.replaceAll(from, to);
}

// The reference's replacement syntax (Rust regex): `$$`, `${name}`, `$name` with the longest [_0-9A-Za-z] run.
const REPLACEMENT_REF = /\$(?:\$|\{([^}]*)\}|([_0-9A-Za-z]+))/g;

/** Every match of `re` (global) replaced by `to` as the reference expands it; a missing group is empty. */
function regexReplaceAll(s: string, re: RegExp, to: string): string {
  const limit = replacedLimit(s);
  let produced = s.length;
  return s.replace(re, (...args: unknown[]) => {
    const named = typeof args[args.length - 1] === 'object' ? (args[args.length - 1] as Record<string, string | undefined>) : undefined;
    const groups = args.slice(0, named === undefined ? -2 : -3) as (string | undefined)[];
    const out = to.replace(REPLACEMENT_REF, (ref: string, braced: string | undefined, bare: string | undefined) => {
      const name = braced ?? bare;
      if (name === undefined) return '$';
      return (/^\d+$/.test(name) ? groups[Number(name)] : named?.[name]) ?? '';
    });
    produced += out.length - (groups[0]?.length ?? 0);
    if (produced > limit) throw tooLong(limit);
    return out;
  });
}

interface MacroNode {
  readonly args: readonly unknown[];
  readonly receiver?: unknown;
}
interface MacroChecker {
  check(node: unknown, ctx: unknown): { name: string };
  getType(name: string): unknown;
  createError?(code: string, message: string, node: unknown): Error;
}
interface MacroEvaluator {
  run(node: unknown, ctx: unknown): unknown;
}

/** An evaluation stopped by the budget (cel-budget.ts) is not a missing value: it must not become the fallback. */
function rethrowStopped(err: unknown): void {
  if ((err as Error | undefined)?.name === EXPRESSION_STOPPED) throw err;
}

/** `default(expr, fallback)`: the value of `expr`, or `fallback` when `expr` fails (a missing key) or is null. */
function defaultMacro({ args }: MacroNode): unknown {
  return {
    args,
    async: false,
    typeCheck(checker: MacroChecker, macro: MacroNode, ctx: unknown) {
      const a = checker.check(macro.args[0], ctx);
      const b = checker.check(macro.args[1], ctx);
      return a.name === b.name ? a : checker.getType('dyn');
    },
    evaluate(ev: MacroEvaluator, macro: MacroNode, ctx: unknown) {
      let value: unknown;
      try {
        value = ev.run(macro.args[0], ctx);
      } catch (err) {
        rethrowStopped(err);
        return ev.run(macro.args[1], ctx);
      }
      if (value instanceof Promise) {
        return value.then(
          (v: unknown) => (v == null ? ev.run(macro.args[1], ctx) : v),
          (err: unknown) => {
            rethrowStopped(err);
            return ev.run(macro.args[1], ctx);
          },
        );
      }
      return value == null ? ev.run(macro.args[1], ctx) : value;
    },
  };
}

/** The receiver type of the method macros: never a value, so the macros overlap no real overload. */
class MacroMethods {}

/**
 * `s.matches(re)` and `s.regexReplace(re, to)` as macros, so every call goes through `compileUserRegex` (linear
 * time, docs/adr/0021) instead of the engine's `new RegExp` per evaluation: a literal pattern is compiled and
 * checked when the expression is (an unsupported one is a config error), a computed one on first use (an
 * unsupported one fails the evaluation).
 */
function regexMacro(replace: boolean) {
  return ({ args, receiver }: MacroNode): unknown => {
    const patternNode = args[0] as { op?: string; args?: unknown };
    const literal = patternNode.op === 'value' && typeof patternNode.args === 'string' ? compileUserRegex(patternNode.args, { global: replace }) : undefined;
    if (typeof literal === 'string') throw new Error(literal);
    const apply = (s: unknown, pattern: unknown, to: unknown): unknown => {
      if (typeof s !== 'string' || typeof pattern !== 'string' || (replace && typeof to !== 'string')) {
        throw new Error(`no such overload: ${replace ? 'regexReplace(string, string)' : 'matches(string)'} on ${typeof s}`);
      }
      const re = literal ?? toRegex(pattern, replace);
      return replace ? regexReplaceAll(s, re, to as string) : re.test(s);
    };
    return {
      args,
      async: false,
      typeCheck(checker: MacroChecker, _macro: MacroNode, ctx: unknown) {
        for (const node of [receiver, ...args]) {
          const t = checker.check(node, ctx).name;
          if (t !== 'string' && t !== 'dyn') {
            const message = `found no matching overload for '${replace ? 'regexReplace' : 'matches'}' with an argument of type ${t}`;
            throw checker.createError ? checker.createError('no_matching_overload', message, node) : new Error(message);
          }
        }
        return checker.getType(replace ? 'string' : 'bool');
      },
      evaluate(ev: MacroEvaluator, _macro: MacroNode, ctx: unknown) {
        const values = [receiver, ...args].map((node) => ev.run(node, ctx));
        if (values.some((v) => v instanceof Promise)) return Promise.all(values).then(([s, p, to]) => apply(s, p, to));
        return apply(values[0], values[1], values[2]);
      },
    };
  };
}

/** Longest text `join` produces: a client's list of a client's strings would otherwise multiply their sizes. */
export const MAX_JOINED_CHARS = 16 * 1024 * 1024;

/** `list.join(sep?)` as a macro, so the length is known before the text is built (the engine's own has no bound). */
function joinMacro({ args, receiver }: MacroNode): unknown {
  const join = (list: unknown, sep: unknown): string => {
    if (!Array.isArray(list) || typeof sep !== 'string') throw new Error('no such overload: join() needs a list of strings');
    let total = sep.length * Math.max(0, list.length - 1);
    for (const item of list) {
      if (typeof item !== 'string') throw new Error('join(): the list must contain only strings');
      total += item.length;
    }
    if (total > MAX_JOINED_CHARS) throw new Error(`join(): result longer than ${MAX_JOINED_CHARS} characters`);
    return list.join(sep);
  };
  return {
    args,
    async: false,
    typeCheck(checker: MacroChecker, _macro: MacroNode, ctx: unknown) {
      const list = checker.check(receiver, ctx).name;
      if (list !== 'list<string>' && list !== 'list<dyn>' && list !== 'list' && list !== 'dyn') {
        const message = `found no matching overload for '${list}.join'`;
        throw checker.createError ? checker.createError('no_matching_overload', message, receiver) : new Error(message);
      }
      const sep = args[0] === undefined ? 'string' : checker.check(args[0], ctx).name;
      if (sep !== 'string' && sep !== 'dyn') {
        const message = `found no matching overload for 'join' with a separator of type ${sep}`;
        throw checker.createError ? checker.createError('no_matching_overload', message, args[0]) : new Error(message);
      }
      return checker.getType('string');
    },
    evaluate(ev: MacroEvaluator, _macro: MacroNode, ctx: unknown) {
      return join(ev.run(receiver, ctx), args[0] === undefined ? '' : ev.run(args[0], ctx));
    },
  };
}

// Standard or URL-safe alphabet, padding optional; Buffer alone skips any other character without a word.
const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

function decodeBase64(s: string): Uint8Array {
  if (!BASE64.test(s) || s.replace(/=+$/, '').length % 4 === 1) throw new Error('base64.decode(): invalid base64 text');
  return new Uint8Array(Buffer.from(s, 'base64'));
}

type Fn = (...args: never[]) => unknown;

/** [signature, handler, description] of every function added to the environment. */
const FUNCTIONS: readonly (readonly [string, Fn, string])[] = [
  // IP addresses and CIDR ranges.
  ['ip(string): net.IP', toIP, 'Parse an IPv4 or IPv6 address (an IPv4-mapped IPv6 address becomes IPv4); an invalid address is an error.'],
  ['isIP(string): bool', (s: string) => parseIP(s) !== undefined, 'Whether the string is a valid IPv4 or IPv6 address.'],
  ['string(net.IP): string', (ip: CelIP) => ip.toString(), 'The canonical text of an address (RFC 5952 for IPv6).'],
  ['net.IP.family(): int', (ip: CelIP) => BigInt(ip.family), 'The address family: 4 or 6.'],
  ['net.IP.isLoopback(): bool', isLoopback, 'Whether the address is a loopback address (127.0.0.0/8, ::1).'],
  ['net.IP.isUnspecified(): bool', isUnspecified, 'Whether the address is 0.0.0.0 or ::.'],
  ['net.IP.isLinkLocalUnicast(): bool', isLinkLocalUnicast, 'Whether the address is link-local unicast (169.254.0.0/16, fe80::/10).'],
  ['net.IP.isLinkLocalMulticast(): bool', isLinkLocalMulticast, 'Whether the address is link-local multicast (224.0.0.0/24, ff02::/16).'],
  ['net.IP.isGlobalUnicast(): bool', isGlobalUnicast, 'Whether the address is global unicast (not unspecified, loopback, link-local, multicast or broadcast).'],
  ['cidr(string): net.CIDR', toCIDR, 'Parse a CIDR range (`10.0.0.0/8`, `2001:db8::/32`); an invalid range is an error.'],
  ['isCIDR(string): bool', (s: string) => parseCIDR(s) !== undefined, 'Whether the string is a valid CIDR range.'],
  ['string(net.CIDR): string', (c: CelCIDR) => c.toString(), 'The text of a range, as parsed (`masked()` first to clear host bits).'],
  ['net.CIDR.containsIP(string): bool', (c: CelCIDR, s: string) => c.containsIP(toIP(s)), 'Whether the range contains the address (an invalid address is an error).'],
  ['net.CIDR.containsIP(net.IP): bool', (c: CelCIDR, ip: CelIP) => c.containsIP(ip), 'Whether the range contains the address.'],
  ['net.CIDR.containsCIDR(string): bool', (c: CelCIDR, s: string) => c.containsCIDR(toCIDR(s)), 'Whether the range contains the whole other range.'],
  ['net.CIDR.containsCIDR(net.CIDR): bool', (c: CelCIDR, o: CelCIDR) => c.containsCIDR(o), 'Whether the range contains the whole other range.'],
  ['net.CIDR.ip(): net.IP', (c: CelCIDR) => c.ip, 'The address part of the range, host bits as written.'],
  ['net.CIDR.masked(): net.CIDR', (c: CelCIDR) => c.masked(), 'The range with its host bits cleared (`10.1.2.3/8` \u2192 `10.0.0.0/8`).'],
  ['net.CIDR.prefixLength(): int', (c: CelCIDR) => BigInt(c.prefix), 'The prefix length in bits.'],
  // Helpers.
  ['base64.encode(string): string', (_: unknown, s: string) => Buffer.from(s, 'utf8').toString('base64'), 'Standard base64 of the UTF-8 bytes of a string.'],
  ['base64.encode(bytes): string', (_: unknown, b: Uint8Array) => Buffer.from(b).toString('base64'), 'Standard base64 of bytes.'],
  ['base64.decode(string): bytes', (_: unknown, s: string) => decodeBase64(s), 'Decode standard or URL-safe base64 into bytes (`string(\u2026)` turns them into text).'],
  ['url.encode(string): string', (_: unknown, s: string) => encodeURIComponent(s), 'Percent-encode a string for use in a URL path segment or query value.'],
  ['url.decode(string): string', (_: unknown, s: string) => decodeURIComponent(s), 'Decode a percent-encoded string; malformed input is an error.'],
  ['string.replace(string, string): string', replaceAll, 'Replace every occurrence of a substring.'],
  // Declared for type information and docs; calls are expanded by regexMacro.
  ['string.regexReplace(string, string): string', (s: string, pattern: string, to: string) => regexReplaceAll(s, toRegex(pattern, true), to), 'Replace every match of a regular expression; in the replacement `$1`/`${1}` is a group, `$0` the match, `${name}` a named group, `$$` a dollar.'],
  ['uuid(): string', () => randomUUID(), 'A random (version 4) UUID.'],
  ['random(): double', () => Math.random(), 'A random number in [0, 1).'],
  [
    'fail(string): dyn',
    (message: string) => {
      throw new Error(message);
    },
    'Fail the evaluation with a message (an authorization rule that fails counts as false).',
  ],
];

/** Engine type names -> the names users write (namespaces by their constant, well-known types by their CEL name). */
const DISPLAY_NAMES: readonly (readonly [RegExp, string])[] = [
  [/\bBase64Namespace\b/g, 'base64'],
  [/\bUrlNamespace\b/g, 'url'],
  [/\bOptionalNamespace\b/g, 'optional'],
  [/\bCelNamespace\b/g, 'cel'],
  [/\bgoogle\.protobuf\.Timestamp\b/g, 'timestamp'],
  [/\bgoogle\.protobuf\.Duration\b/g, 'duration'],
  [/\bast\b/g, 'expr'],
];

/** Types that only host namespace functions: `type(<namespace>)` is not worth documenting. */
export const NAMESPACE_TYPES: ReadonlySet<string> = new Set(['Base64Namespace', 'UrlNamespace', 'OptionalNamespace', 'CelNamespace', 'MacroMethods']);

/** Signature as cel-js spells it -> as documented (`Base64Namespace.encode(string)` -> `base64.encode(string)`). */
export function displaySignature(signature: string): string {
  let out = signature;
  for (const [re, name] of DISPLAY_NAMES) out = out.replace(re, name);
  return out;
}

/** Register the gateway's functions. Returns their signatures as cel-js spells them. */
export function registerGatewayFunctions(env: Environment): Set<string> {
  const registered = new Set<string>();
  env.registerType('net.IP', CelIP as never);
  env.registerType('net.CIDR', CelCIDR as never);
  env.registerOperator('net.IP == net.IP', (a: CelIP, b: CelIP) => a.equals(b));
  env.registerOperator('net.CIDR == net.CIDR', (a: CelCIDR, b: CelCIDR) => a.equals(b));
  for (const [type, name] of Object.entries(NAMESPACES)) {
    const ctor = type === 'Base64Namespace' ? Base64Namespace : UrlNamespace;
    env.registerType(type, ctor as never);
    env.registerConstant(name, type, new ctor());
  }
  for (const [display, handler, description] of FUNCTIONS) {
    const signature = display.replace(/^(base64|url)\./, (_m, ns: string) => `${Object.entries(NAMESPACES).find(([, n]) => n === ns)![0]}.`);
    env.registerFunction(signature, handler as never, { description });
    registered.add(signature);
  }
  env.registerType('MacroMethods', MacroMethods as never);
  env.registerFunction('MacroMethods.matches(ast): bool', regexMacro(false) as never);
  env.registerFunction('MacroMethods.regexReplace(ast, ast): string', regexMacro(true) as never);
  env.registerFunction('MacroMethods.join(): string', joinMacro as never);
  env.registerFunction('MacroMethods.join(ast): string', joinMacro as never);
  const macro = 'default(ast, ast): dyn';
  env.registerFunction(macro, defaultMacro as never, {
    description: 'The value of the first expression, or the second when the first fails (a missing key or header) or is null.',
  });
  registered.add(macro);
  for (const signature of registerReferenceFunctions(env)) registered.add(signature);
  return registered;
}
