import type { Environment } from '@marcbachmann/cel-js';
import { ConfigError, ErrorCode, presentHeaders, withheldCredentials } from '../sdk/index.ts';
import type { CompiledExpression, ConfigPath, Exchange, ExpressionCompiler } from '../sdk/index.ts';
import { exchangeAttributes, exchangeState } from '../exchange/kernel-exchange.ts';
import type { VerifiedClientCertificate } from '../exchange/client-certificate.ts';
import { meterComprehensions, startBudget } from './cel-budget.ts';
import { celLib } from './cel-lib.ts';
import { checkOverflow, findIntegerLiteralProblem } from './cel-overflow.ts';
import { readAt } from './cel-reads.ts';
import { displaySignature, NAMESPACE_TYPES, NAMESPACES, registerGatewayFunctions } from './cel-library.ts';
import { findNameProblem } from './cel-names.ts';
import type { CelNames } from './cel-names.ts';

/** A field of a variable, as documented. */
export interface CelFieldInfo {
  readonly name: string;
  readonly type: string;
  readonly description: string;
}

/** A variable expressions may read. */
export interface CelVariableInfo {
  readonly name: string;
  readonly type: string;
  readonly description: string;
  /** `gateway`: always present; `attribute`: published by a policy (its manifest's `celVariables`). */
  readonly origin: 'gateway' | 'attribute';
  readonly fields?: readonly CelFieldInfo[];
}

/** A function (or receiver method) expressions may call. */
export interface CelFunctionInfo {
  /** `cidr`, `net.CIDR.containsIP`, `base64.encode`, `string.startsWith`, ... */
  readonly name: string;
  /** As documented: `net.CIDR.containsIP(string): bool`. */
  readonly signature: string;
  readonly description: string;
  /** `gateway`: added by Switchyard; `standard`: the CEL standard library of the engine. */
  readonly origin: 'gateway' | 'standard';
}

/** Everything the environment declares. */
export interface CelDefinitions {
  readonly variables: readonly CelVariableInfo[];
  readonly functions: readonly CelFunctionInfo[];
}

/** The variables every expression may use, with their fields (kept in step with `celActivation`). */
const BASE_VARIABLES: readonly CelVariableInfo[] = [
  {
    name: 'request',
    type: 'map',
    origin: 'gateway',
    description: 'The client request as the policy sees it (after earlier rewrites).',
    fields: [
      { name: 'method', type: 'string', description: 'HTTP method (`GET`).' },
      { name: 'path', type: 'string', description: 'Path without the query string (`/v1/items`).' },
      { name: 'host', type: 'string', description: 'Host header without port, lower-case.' },
      { name: 'scheme', type: 'string', description: '`http` or `https` (of the listener).' },
      { name: 'uri', type: 'string', description: 'Path and query (`/v1/items?a=1`).' },
      { name: 'pathAndQuery', type: 'string', description: 'Path and query, as `uri` (the reference gateway\'s name for it).' },
      { name: 'version', type: 'string', description: 'HTTP version as the reference writes it: `HTTP/1.0`, `HTTP/1.1` or `HTTP/2.0`.' },
      { name: 'headers', type: 'map(string, string)', description: 'Request headers by lower-case name; repeated headers are joined with `, ` (`set-cookie` is a list).' },
      { name: 'query', type: 'map(string, string)', description: 'Query parameters by name (the first value of a repeated parameter).' },
    ],
  },
  {
    name: 'source',
    type: 'map',
    origin: 'gateway',
    description: 'The client connection.',
    fields: [
      { name: 'address', type: 'string', description: 'Client IP address (`127.0.0.1`, `::1`; IPv4 clients of dual-stack binds without the `::ffff:` prefix).' },
      { name: 'port', type: 'int', description: 'Client port.' },
      { name: 'rawAddress', type: 'string', description: 'The TCP peer\'s address, even when `address` is one a trusted proxy forwarded.' },
      { name: 'rawPort', type: 'int', description: 'The TCP peer\'s port (as `port`).' },
      { name: 'subject', type: 'string', description: 'Mutual TLS only: the verified client certificate\'s subject (`O=Agents, CN=agent-1`, the certificate\'s order).' },
      { name: 'subjectCn', type: 'string', description: 'Mutual TLS only: the subject\'s common name (`agent-1`).' },
      { name: 'issuer', type: 'string', description: 'Mutual TLS only: the certificate\'s issuer (`CN=Agents CA`).' },
      { name: 'subjectAltNames', type: 'list(string)', description: 'Mutual TLS only: the subject alternative names\' values (DNS names, URIs, IP addresses, emails).' },
      { name: 'spiffeId', type: 'string', description: 'Mutual TLS only: the first `spiffe://` URI SAN; absent without one.' },
      { name: 'certificate', type: 'string', description: 'Mutual TLS only: the verified leaf certificate in PEM.' },
    ],
  },
  {
    name: 'response',
    type: 'map',
    origin: 'gateway',
    description: 'The response sent to the client: only in `config.logging` expressions (evaluated when the line is written); elsewhere reading it is a config error at load.',
    fields: [
      { name: 'code', type: 'int', description: 'HTTP status sent to the client (499 when it went away first).' },
      { name: 'headers', type: 'map(string, string)', description: 'Response headers by lower-case name; sensitive ones (`set-cookie`, tokens, keys) read `<redacted>`.' },
      { name: 'grpcStatus', type: 'int', description: 'A gRPC call\'s status (0 OK, 5 NOT_FOUND, 14 UNAVAILABLE, ...) from the answer\'s trailers or trailers-only head (HTTP/2 clients), or of a gateway-made error answered to a gRPC client (any HTTP version); absent for any other answer.' },
    ],
  },
];

/** Names the gateway itself gives expressions (its variables and function namespaces): no plugin may declare them. */
export function gatewayCelNames(): ReadonlySet<string> {
  return new Set([...BASE_VARIABLES.map((v) => v.name), ...Object.values(NAMESPACES)]);
}

function queryMap(query: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (query.length > 1) for (const [k, v] of new URLSearchParams(query.slice(1))) if (!(k in out)) out[k] = v;
  return out;
}

const NO_QUERY: Readonly<Record<string, string>> = Object.freeze({});

/**
 * The request headers CEL sees: the live object, not a copy (CEL cannot mutate it, and evaluation is synchronous),
 * unless credential headers were withheld, which leaves them `undefined` (withhold-credentials.ts): then a copy
 * without them, so `size()`, `exists()` and iteration see no withheld name.
 */
function celHeaders(ex: Exchange): Exchange['headers'] {
  const h = ex.headers;
  return ex.get(withheldCredentials) === undefined ? h : presentHeaders(h);
}

const HTTP_VERSIONS: Readonly<Record<string, string>> = { '1.1': 'HTTP/1.1', '2.0': 'HTTP/2.0', '1.0': 'HTTP/1.0' };

/** `HTTP/1.1`, `HTTP/2.0`: the reference's spelling of the request's version (absent for a stand-in exchange without one). */
function httpVersion(ex: Exchange): string | undefined {
  const v = (ex.req as Exchange['req'] | undefined)?.httpVersion;
  return v === undefined ? undefined : (HTTP_VERSIONS[v] ?? `HTTP/${v}`);
}

/** The `request` map. cel-js reads map fields only when they are own properties, so `query` is an own getter. */
function requestMap(ex: Exchange): Record<string, unknown> {
  const headers = celHeaders(ex);
  // A literal with a getter is built the slow way: only requests with a query string pay for it.
  if (ex.query.length <= 1) {
    const uri = ex.path + ex.query;
    return { method: ex.method, path: ex.path, host: ex.hostname, scheme: ex.scheme, uri, pathAndQuery: uri, version: httpVersion(ex), headers, query: NO_QUERY };
  }
  return {
    method: ex.method,
    path: ex.path,
    host: ex.hostname,
    scheme: ex.scheme,
    uri: ex.path + ex.query,
    pathAndQuery: ex.path + ex.query,
    version: httpVersion(ex),
    headers,
    get query() {
      return queryMap(ex.query);
    },
  };
}

/**
 * The CEL activation of one request. cel-js reads a variable as `activation[name]`, so `request` and `source` are
 * getters built on first read: a rule on `jwt` claims alone never builds them (they were a third of the cost of
 * an `authorization` rule, docs/perf.md "Policy and jwt routes, session 5"). Attributes and `extra` are own
 * properties. Made per evaluation: policies earlier in the chain may have changed the request.
 */
class Activation {
  readonly #ex: Exchange;
  #request: Record<string, unknown> | undefined = undefined;
  #source: Record<string, unknown> | undefined = undefined;
  [name: string]: unknown;

  constructor(ex: Exchange, extra: Record<string, unknown> | undefined) {
    this.#ex = ex;
    const attrs = exchangeAttributes(ex);
    if (attrs !== undefined) attrs.forEach((value, name) => put(this, name, value));
    if (extra !== undefined) for (const name in extra) put(this, name, extra[name]);
  }

  get request(): Record<string, unknown> {
    return (this.#request ??= requestMap(this.#ex));
  }

  get source(): Record<string, unknown> {
    if (this.#source === undefined) {
      const state = exchangeState(this.#ex);
      const client = state?.clientCertificate;
      const port = BigInt(this.#ex.sourcePort);
      const base = { address: unmapped(this.#ex.sourceAddress), port, rawAddress: unmapped(state?.peerAddress ?? this.#ex.sourceAddress), rawPort: port };
      this.#source = client === undefined ? base : withClientCertificate(base, client);
    }
    return this.#source;
  }
}

/**
 * `source` of a mutual-TLS connection: the verified certificate's fields as own getters (cel-js reads own properties;
 * one that reads undefined is absent to `has()`), parsed only when an expression reads one (client-certificate.ts).
 */
function withClientCertificate(base: Record<string, unknown>, client: VerifiedClientCertificate): Record<string, unknown> {
  return Object.defineProperties(base, {
    subject: { get: () => client.subject, enumerable: true },
    subjectCn: { get: () => client.subjectCn, enumerable: true },
    issuer: { get: () => client.issuer, enumerable: true },
    subjectAltNames: { get: () => client.subjectAltNames, enumerable: true },
    spiffeId: { get: () => client.spiffeId, enumerable: true },
    certificate: { get: () => client.pem, enumerable: true },
  });
}

/** IPv4 clients of dual-stack binds without the `::ffff:` prefix. */
function unmapped(address: string): string {
  return address.startsWith('::ffff:') ? address.slice(7) : address;
}

/** An attribute or extra variable; one named `request` or `source` hides the gateway's (as assignment did). */
function put(activation: Activation, name: string, value: unknown): void {
  if (name === 'request' || name === 'source') Object.defineProperty(activation, name, { value, writable: true, enumerable: true, configurable: true });
  else activation[name] = value;
}

/** The CEL activation of one request (lazy `request` and `source`; see `Activation`). */
export function celActivation(ex: Exchange, extra?: Record<string, unknown>): Record<string, unknown> {
  return new Activation(ex, extra);
}

/** A compiled expression; `type` is the checked result type (`bool`, `string`, `dyn`, ...). */
export interface CheckedExpression extends CompiledExpression {
  readonly type: string;
  /** Evaluate against a prepared activation (the access log shares one between its expressions). */
  evaluateIn(activation: Record<string, unknown>): unknown;
}

/**
 * The CEL facade (ARCHITECTURE.md §7: @marcbachmann/cel-js behind kernel/expr, docs/adr/0005). One
 * environment per process; expressions are parsed and type-checked at load, evaluated per request.
 */
export class CelExpressions {
  /** Built on first use (cel-lib.ts): a config without expressions never loads the CEL engine. */
  private built: Built | undefined;
  private readonly variableInfo: readonly CelVariableInfo[];

  /**
   * `extraVariables`: the attribute names plugins publish (their manifests' `celVariables`), or `{name, description}`;
   * the first description given for a name is kept.
   */
  constructor(extraVariables: Iterable<string | { name: string; description?: string }> = []) {
    const base = new Set(BASE_VARIABLES.map((v) => v.name));
    const published = new Map<string, string | undefined>();
    for (const extra of extraVariables) {
      const name = typeof extra === 'string' ? extra : extra.name;
      if (base.has(name)) continue;
      if (published.get(name) === undefined) published.set(name, typeof extra === 'string' ? undefined : extra.description);
    }
    const infos: CelVariableInfo[] = [...BASE_VARIABLES];
    for (const [name, description] of published) {
      infos.push({ name, type: 'map', origin: 'attribute', description: description ?? `Attribute \`${name}\` published by a policy.` });
    }
    this.variableInfo = infos;
    this.variables = infos.map((v) => v.name);
  }

  /** Names of the declared variables (documented in docs/cel.md). */
  readonly variables: readonly string[];

  private environment(): Built {
    if (this.built) return this.built;
    const { Environment } = celLib();
    const env = new Environment({ enableOptionalTypes: true, homogeneousAggregateLiterals: false, limits: { maxAstNodes: MAX_AST_NODES, maxDepth: MAX_DEPTH } });
    const gatewayFunctions = registerGatewayFunctions(env);
    for (const v of this.variableInfo) env.registerVariable(v.name, v.type, { description: v.description });
    return (this.built = { env, gatewayFunctions, names: declaredNames(env, this.variableInfo) });
  }

  /** Every variable and function the environment declares, with signatures and descriptions (docs/cel.md). */
  definitions(): CelDefinitions {
    const { env, gatewayFunctions } = this.environment();
    const defs = env.getDefinitions();
    const declared = new Map(this.variableInfo.map((v) => [v.name, v]));
    const variables = defs.variables.filter((v) => declared.has(v.name)).map((v) => declared.get(v.name)!);
    const namespaceTypeOf = /^type\((\w+)\): type$/;
    const functions = defs.functions
      // The method macros stand in for the documented `string.matches`, `string.regexReplace`, `list<string>.join`.
      .filter((f) => !NAMESPACE_TYPES.has(namespaceTypeOf.exec(f.signature)?.[1] ?? '') && !f.signature.startsWith('MacroMethods.'))
      .map((f): CelFunctionInfo => {
        const signature = displaySignature(f.signature);
        return {
          name: signature.slice(0, signature.indexOf('(')),
          signature,
          description: f.description ?? '',
          origin: gatewayFunctions.has(f.signature) ? 'gateway' : 'standard',
        };
      });
    return { variables, functions };
  }

  /** A compiler bound to one config path, for a plugin's CompileContext. */
  compilerAt(path: ConfigPath): ExpressionCompiler {
    return { compile: (source, sub = [], unavailable) => this.compile(source, [...path, ...sub], false, unavailable) };
  }

  /**
   * `allowResponse`: the expression is evaluated once the response is known (`config.logging`); anywhere else a
   * reference to `response` would always evaluate as an error, so it is refused at load; so is one to a name in
   * `unavailable` (name -> why).
   */
  compile(source: string, path: ConfigPath, allowResponse = false, unavailable: Readonly<Record<string, string>> = {}): CheckedExpression {
    let program: Program;
    let type: string;
    const { env, names } = this.environment();
    const invalid = (detail: string, valueOffset?: number): ConfigError =>
      new ConfigError({ code: ErrorCode.configInvalid, path, message: `invalid CEL expression \`${source}\`: ${detail}`, valueOffset });
    try {
      program = env.parse(source) as unknown as Program;
      const problem = findNameProblem(program.ast, names) ?? findIntegerLiteralProblem(program.ast, source);
      if (problem) throw invalid(problem.message, problem.offset);
      if (!allowResponse && readAt(program.ast, 'response') !== undefined) {
        throw invalid('`response` is only available in `config.logging` expressions (fields.add, filter), evaluated once the response is sent; here it is not known yet');
      }
      for (const [name, why] of Object.entries(unavailable)) {
        // `llm.inputTokens`: that field of the variable only (ADR 0179); `llm`: any read of it.
        const at = readAt(program.ast, name);
        if (at !== undefined) throw invalid(`\`${name}\` is not available ${why}`, at);
      }
      // The program's own tree is checked (not a second parse), so evaluation runs it without checking again.
      const checked = program.check();
      if (!checked.valid) throw checked.error ?? new Error('type error');
      type = checked.type ?? 'dyn';
      meterComprehensions(program.ast);
      checkOverflow(program.ast);
    } catch (err) {
      if (err instanceof ConfigError) throw err;
      // cel-js errors carry the summary apart from the highlighted copy, and where in the expression they are.
      const e = err as { summary?: unknown; message?: unknown; range?: { start?: unknown } };
      const detail = String(e.summary ?? e.message ?? err).split('\n')[0]!;
      throw invalid(detail, typeof e.range?.start === 'number' ? e.range.start : undefined);
    }
    const ast = program.ast;
    return {
      source,
      type,
      reads: (name) => readAt(ast, name) !== undefined,
      evaluate: (ex, extra) => {
        startBudget();
        return program(celActivation(ex, extra));
      },
      evaluateIn: (activation) => {
        startBudget();
        return program(activation);
      },
    };
  }
}

/** Limits on the expression itself: node count and nesting (a positioned config error past them). */
const MAX_AST_NODES = 5000;
const MAX_DEPTH = 64;

/** A parsed cel-js program: callable with an activation, its tree, and a check of that same tree. */
interface Program {
  (ctx: Record<string, unknown>): unknown;
  readonly ast: unknown;
  check(): { valid: boolean; type?: string; error?: Error };
}

interface Built {
  readonly env: Environment;
  readonly gatewayFunctions: ReadonlySet<string>;
  readonly names: CelNames;
}

/** The names the environment declares, for the load-time name check (cel-names.ts). */
function declaredNames(env: Environment, variables: readonly CelVariableInfo[]): CelNames {
  const defs = env.getDefinitions();
  const namespaceOf = new Map<string, string>([...Object.entries(NAMESPACES), ['OptionalNamespace', 'optional'], ['CelNamespace', 'cel']]);
  const globals = new Set<string>();
  const methods = new Set<string>();
  const namespaced = new Set<string>();
  for (const f of defs.functions) {
    const name = f.signature.slice(0, f.signature.indexOf('('));
    const dot = name.lastIndexOf('.');
    if (dot < 0) globals.add(name);
    else if (namespaceOf.has(name.slice(0, dot))) namespaced.add(`${namespaceOf.get(name.slice(0, dot))}.${name.slice(dot + 1)}`);
    else methods.add(name.slice(dot + 1));
  }
  const fields = new Map<string, ReadonlySet<string>>();
  for (const v of variables) if (v.origin === 'gateway' && v.fields) fields.set(v.name, new Set(v.fields.map((f) => f.name)));
  return { variables: new Set(defs.variables.map((v) => v.name)), globals, methods, namespaced, fields };
}
