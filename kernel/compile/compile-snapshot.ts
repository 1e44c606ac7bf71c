import { compileAccessLogRules } from '../telemetry/access-log-rules.ts';
import { loadTracingTls } from '../telemetry/tracing-config.ts';
import type { RawLoggingRules } from '../telemetry/access-log-rules.ts';
import { ConfigError } from '../sdk/index.ts';
import { NO_FETCHES } from '../sdk/read-file.ts';
import { LayeredPolicySet } from './policy-set.ts';
import { Snapshot, disposeAll } from './snapshot.ts';
import { ownerOf } from './plugin-owner.ts';
import type { CompiledBind, StaticConfig } from './snapshot.ts';
import { resolveStaticConfig } from './static-config.ts';
import { resolveFrontendHttp2 } from './frontend-http.ts';
import { LoadCompiler } from './load-compiler.ts';
import { RouteVariables } from './route-variables.ts';
import type { CompileDeps } from './load-compiler.ts';
import { compileBind } from './compile-bind.ts';

export type { CompileDeps } from './load-compiler.ts';

type Obj = Record<string, unknown>;

/**
 * Compile a validated config into a Snapshot, running every plugin's `compile` once. Throws ConfigError (paths, not
 * positions) when plugins refuse it. The parts: `load-compiler.ts` (the load's state, policy sets, backends),
 * `plugin-context.ts` (a plugin's `ctx`), `compile-bind.ts` (ports, listeners, TLS), `compile-route.ts` (routes,
 * backend references, upstream plans, health).
 */
export function compileSnapshot(config: Obj, deps: CompileDeps): Promise<Snapshot> {
  return compile(new LoadCompiler(deps), config, deps);
}

async function compile(c: LoadCompiler, config: Obj, deps: CompileDeps): Promise<Snapshot> {
  const resolved = resolveStaticConfig(config.config as never, deps.env);
  const rawLogging = (config.config as { logging?: RawLoggingRules } | undefined)?.logging;
  // The trace collector's PEM files are read here, so a wrong one fails the load rather than every export. They are
  // files the config names (ADR 0184); a paste reads none (ADR 0131).
  const tracing = await loadTracingTls(resolved.tracing, deps.cwd, deps.checkOnly ? NO_FETCHES : c.namedFiles, (issue) => c.issues.push(issue));
  // Export headers are credentials wherever they came from: those of OTEL_EXPORTER_OTLP_HEADERS join the log's
  // scrubber as the config's do (a collector's refusal may quote one). A paste reads no environment.
  if (tracing && !deps.checkOnly) for (const v of Object.values(tracing.headers)) deps.hideInLog?.(v);
  // A load warning like the plugins': a paste's goes to its answer, not the gateway's log (ADR 0131, 0194).
  if (tracing?.tls?.insecure) c.warn(['config', 'tracing', 'tls', 'insecure'], "`insecure: true` turns off all verification of the trace collector's certificate; use `root` and `hostname` instead outside tests");
  const staticConfig: StaticConfig = {
    ...resolved,
    tracing,
    logging: { ...resolved.logging, rules: compileAccessLogRules(rawLogging, deps.expressions) },
    frontendHttp2: resolveFrontendHttp2(config.frontendPolicies),
  };
  c.resolveSections(config.config as Obj | undefined);
  c.staticConfig = staticConfig;
  c.routeVariables = new RouteVariables(deps.registry, config);
  const namedList = (config.backends ?? []) as Obj[];
  namedList.forEach((b, i) => {
    const name = b.name as string;
    if (c.named.has(name)) c.issue(['backends', i, 'name'], `backend name \`${name}\` is used twice`);
    else c.named.set(name, { value: b, path: ['backends', i] });
  });
  // Compile every named backend once on its own, so a broken unused one is still reported.
  for (const spec of c.named.values()) {
    const policies = await c.policySet('backendPolicies', spec.value.policies as Obj | undefined, [...spec.path, 'policies']);
    await c.backendValue(spec.value, spec.path, new LayeredPolicySet([policies]));
    await c.breathe();
  }
  const binds = new Map<number, CompiledBind>();
  const bindList = (config.binds ?? []) as Obj[];
  for (let i = 0; i < bindList.length; i++) {
    const bind = bindList[i]!;
    const port = bind.port as number;
    if (binds.has(port)) {
      c.issue(['binds', i, 'port'], `port ${port} is bound twice`);
      continue;
    }
    const compiled = await compileBind(c, bind, ['binds', i]);
    if (compiled) binds.set(port, compiled);
  }
  // Checks of names defined elsewhere in the config (a route a declared key lists), now that all are known (ADR 0196).
  c.runAfterLoad();
  // A dispose() that throws is a warn line naming the plugin, for a failed load and for a retired snapshot (ADR 0154).
  const disposeFailed = (d: object, err: unknown): void => deps.logger.warn('plugin dispose failed', { ...ownerOf(d), error: (err as Error)?.message ?? String(err) });
  if (c.issues.length > 0) {
    disposeAll(c.disposables, disposeFailed);
    throw new ConfigError(c.issues);
  }
  const snapshot = new Snapshot(deps.generation, binds, staticConfig, config, c.disposables, c.adminRoutes, disposeFailed);
  snapshot.namedFiles = c.namedFiles.stamps;
  return snapshot;
}
