import { Environment } from '@marcbachmann/cel-js';
import { ConfigError, ErrorCode } from '../sdk/index.ts';
import type { CompiledExpression, ConfigPath, Exchange, ExpressionCompiler } from '../sdk/index.ts';
import type { ExchangeImpl } from '../runtime/exchange-impl.ts';

/** Variables every expression may use; policies declare the attributes they publish (`celVariables`). */
const BASE_VARIABLES = ['request', 'source'];

function queryMap(query: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (query.length > 1) for (const [k, v] of new URLSearchParams(query.slice(1))) if (!(k in out)) out[k] = v;
  return out;
}

/** The CEL activation of one request. Built per evaluation: policies earlier in the chain may have changed it. */
export function celActivation(exchange: Exchange, extra?: Record<string, unknown>): Record<string, unknown> {
  const ex = exchange as ExchangeImpl;
  const activation: Record<string, unknown> = {
    request: {
      method: ex.method,
      path: ex.path,
      host: ex.hostname,
      scheme: ex.scheme,
      uri: ex.path + ex.query,
      headers: { ...ex.headers },
      get query() {
        return queryMap(ex.query);
      },
    },
    source: { address: ex.sourceAddress.replace(/^::ffff:/, ''), port: ex.sourcePort },
  };
  const attrs = ex.attributes();
  if (attrs) for (const [name, value] of attrs) activation[name] = value;
  if (extra) Object.assign(activation, extra);
  return activation;
}

/**
 * The CEL facade (ARCHITECTURE.md §7: @marcbachmann/cel-js behind kernel/expr, docs/adr/0005). One
 * environment per process; expressions are parsed and type-checked at load, evaluated per request.
 */
export class CelExpressions {
  private readonly env: Environment;

  constructor(extraVariables: Iterable<string> = []) {
    const env = new Environment({ enableOptionalTypes: true, homogeneousAggregateLiterals: false, limits: { maxAstNodes: 5000, maxDepth: 64 } });
    for (const name of new Set([...BASE_VARIABLES, ...extraVariables])) env.registerVariable(name, 'map');
    this.env = env;
    this.variables = [...new Set([...BASE_VARIABLES, ...extraVariables])];
  }

  /** Names of the declared variables (documented in docs/cel.md). */
  readonly variables: readonly string[];

  /** A compiler bound to one config path, for a plugin's CompileContext. */
  compilerAt(path: ConfigPath): ExpressionCompiler {
    return { compile: (source, sub = []) => this.compile(source, [...path, ...sub]) };
  }

  compile(source: string, path: ConfigPath): CompiledExpression {
    let program: (ctx: Record<string, unknown>) => unknown;
    try {
      program = this.env.parse(source) as unknown as (ctx: Record<string, unknown>) => unknown;
      const checked = this.env.check(source) as { valid: boolean; error?: Error };
      if (!checked.valid) throw checked.error ?? new Error('type error');
    } catch (err) {
      const detail = ((err as Error).message ?? String(err)).split('\n')[0];
      throw new ConfigError({ code: ErrorCode.configInvalid, path, message: `invalid CEL expression \`${source}\`: ${detail}` });
    }
    return {
      source,
      evaluate: (ex, extra) => program(celActivation(ex, extra)),
    };
  }
}
