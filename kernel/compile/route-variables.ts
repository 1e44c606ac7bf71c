import type { ConfigPath, ExpressionCompiler } from '../sdk/index.ts';
import type { PluginRegistry } from '../registry/registry.ts';

type Obj = Record<string, unknown>;

const SLOT = 'routePolicies';

/** `a`, `a or b`, `a, b or c`, each in backticks. */
function either(keys: readonly string[]): string {
  const quoted = keys.map((k) => `\`${k}\``);
  return quoted.length < 2 ? quoted.join('') : `${quoted.slice(0, -1).join(', ')} or ${quoted.at(-1)}`;
}

/**
 * CEL variables that only a route's own policies set (ADR 0179): `jwt` (`jwtAuth`, `mcpAuthentication`), `apiKey`,
 * `key` (`virtualKeys`), `basicAuth`, and a third-party policy's like them. Each is published (`celVariables`) by
 * policies that attach to `routePolicies` only, so on a route without one of them an expression reading it (an
 * `authorization` rule, a transformation, a rate-limit descriptor, in the route's policies or its backends') fails
 * on every request: a load error, as ADR 0176's `unavailable` names. A variable any other plugin publishes (a
 * backend's `llm`, `mcp` of a policy that also attaches to backends) is not judged here.
 */
export class RouteVariables {
  /** Variable -> the route policies that set it. */
  private readonly setters = new Map<string, string[]>();
  private readonly perRoute = new WeakMap<object, Readonly<Record<string, string>>>();
  private readonly config: Obj;
  private readonly registry: PluginRegistry;

  constructor(registry: PluginRegistry, config: Obj) {
    this.registry = registry;
    this.config = config;
    const elsewhere = new Set<string>();
    for (const { plugin } of registry.plugins()) {
      if (plugin.kind === 'slot') continue;
      const routeOnly = plugin.kind === 'policy' && plugin.attach.length === 1 && plugin.attach[0] === SLOT;
      for (const variable of plugin.celVariables ?? []) {
        const name = typeof variable === 'string' ? variable : variable.name;
        if (!routeOnly) elsewhere.add(name);
        else this.setters.set(name, [...(this.setters.get(name) ?? []), plugin.key]);
      }
    }
    for (const name of elsewhere) this.setters.delete(name);
    for (const keys of this.setters.values()) keys.sort();
  }

  /** The route a config path lies in (`binds[b].listeners[l].routes[r]...`), if it does. */
  private routeAt(path: ConfigPath): Obj | undefined {
    if (path[0] !== 'binds' || path[2] !== 'listeners' || path[4] !== 'routes') return undefined;
    const binds = this.config.binds as Obj[] | undefined;
    const listener = (binds?.[path[1] as number]?.listeners as Obj[] | undefined)?.[path[3] as number];
    const route = (listener?.routes as Obj[] | undefined)?.[path[5] as number];
    return route && typeof route === 'object' ? route : undefined;
  }

  /** The variables never set on the route `path` lies in, each with why and what the route does set. */
  unsetAt(path: ConfigPath): Readonly<Record<string, string>> {
    const route = this.routeAt(path);
    if (!route || this.setters.size === 0) return {};
    let unset = this.perRoute.get(route);
    if (unset) return unset;
    const present = new Set<string>();
    for (const key of Object.keys((route.policies as Obj | undefined) ?? {})) {
      const plugin = this.registry.lookup(SLOT, key)?.plugin;
      if (plugin && plugin.kind !== 'slot') present.add(plugin.key);
    }
    const set = [...this.setters].filter(([, keys]) => keys.some((k) => present.has(k)));
    const out: Record<string, string> = {};
    for (const [name, keys] of this.setters) {
      if (keys.some((k) => present.has(k))) continue;
      const hint = set.length ? `; did you mean ${either(set.map(([n]) => n))}, which its ${either(set.flatMap(([, k]) => k.filter((x) => present.has(x))))} policy sets?` : '';
      out[name] = `on this route: only a ${either(keys)} policy of the route sets it, and the route has none${hint}`;
    }
    unset = Object.freeze(out);
    this.perRoute.set(route, unset);
    return unset;
  }

  /** `compiler` with the variables unset at `path` refused, besides what each call names (those reasons win). */
  compilerAt(compiler: ExpressionCompiler, path: ConfigPath): ExpressionCompiler {
    const unset = this.unsetAt(path);
    if (Object.keys(unset).length === 0) return compiler;
    return { compile: (source, sub, unavailable) => compiler.compile(source, sub, { ...unset, ...unavailable }) };
  }
}
