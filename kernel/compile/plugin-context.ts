import { ConfigError, ErrorCode, connectUpstream } from '../sdk/index.ts';
import type { BackendCompileContext, ConfigPath, ConfigSection, PolicySet, SlotPlugin } from '../sdk/index.ts';
import { NO_FETCHES } from '../sdk/read-file.ts';
import { didYouMean } from '../config/did-you-mean.ts';
import { formatPath } from '../config/config-source.ts';
import { configSectionPath } from '../config/assemble-schema.ts';
import type { LoadCompiler } from './load-compiler.ts';
import { ADMIN_OWN_PREFIXES, boundedAdminHandler } from './admin-handler.ts';
import type { PluginOwner } from './plugin-owner.ts';

type Obj = Record<string, unknown>;

/** The `ctx` the plugin `owner`'s `compile` gets at `path`, over the load `c`, with the policies in force there. */
export function pluginContext(c: LoadCompiler, path: ConfigPath, policies: PolicySet, owner?: PluginOwner, stateKey?: string, route?: string): BackendCompileContext {
  const logger = c.deps.logger.child({ config: formatPath(path) });
  const ctx: BackendCompileContext = {
    path,
    ...(stateKey === undefined ? {} : { stateKey }),
    ...(route === undefined ? {} : { route }),
    cwd: c.deps.cwd,
    logger,
    http: c.upstreams,
    resources: c.resourceView,
    sharedCell: (key, initial) => c.sharedCell(key, initial),
    // A paste's compile reads and fetches nothing, even through a plugin unaware of `checkOnly` (ADR 0131).
    sharedFetches: c.deps.checkOnly ? NO_FETCHES : c.namedFiles,
    hideInLog: (secret) => c.deps.hideInLog?.(secret),
    sharedEvents: c.deps.shared.events,
    processes: c.deps.shared.processes,
    expr: c.routeVariables ? c.routeVariables.compilerAt(c.deps.expressions.compilerAt(path), path) : c.deps.expressions.compilerAt(path),
    configSection: <T>(section: ConfigSection<T>): T => {
      const where = configSectionPath(section);
      if (!c.sections.has(where)) throw new Error(`no installed plugin contributes the \`config.${where}\` section`);
      return c.sections.get(where) as T;
    },
    defaultTimeouts: c.staticConfig.defaultTimeouts,
    policies,
    checkOnly: c.deps.checkOnly === true,
    fail: (message, sub = []) => {
      throw new ConfigError({ code: ErrorCode.configInvalid, path: [...path, ...sub], message });
    },
    warn: (message, sub = []) => c.warn([...path, ...sub], message, logger),
    compileBackend: async (value, sub) => {
      const instance = await c.backendValue(value, [...path, ...sub], policies);
      if (!instance) throw new ConfigError([]);
      return instance;
    },
    compileVariant: <T>(slotRef: SlotPlugin<T> | string, value: Obj, sub: ConfigPath) => c.variant(slotRef, value, [...path, ...sub], policies),
    compilePolicies: (slot, value, sub) => c.policySet(typeof slot === 'string' ? slot : slot.name, value, [...path, ...sub]),
    adminRoute: (prefix, handler) => {
      // Config errors at the plugin's key, in the kernel's words (a plain throw would read as the plugin's own failure).
      const refuse = (message: string): never => {
        throw new ConfigError({ code: ErrorCode.configInvalid, path, message });
      };
      if (!/^\/[a-z0-9][a-z0-9_-]*$/.test(prefix)) refuse(`\`${prefix}\` is not a usable admin endpoint prefix`);
      if (ADMIN_OWN_PREFIXES.has(prefix)) refuse(`\`${prefix}\` is served by the admin address itself; choose another prefix`);
      // The same plugin on several routes registers once (the first); another plugin's prefix would be unreachable.
      const holder = c.adminRouteOwners.get(prefix);
      if (holder !== undefined && holder !== owner?.plugin) refuse(`\`${prefix}\` is already served by plugin \`${holder}\``);
      if (holder !== undefined) return;
      c.adminRouteOwners.set(prefix, owner?.plugin ?? '');
      c.adminRoutes.set(prefix, boundedAdminHandler(prefix, handler, owner, logger, c.staticConfig.adminUi.endpointTimeoutMs));
    },
    afterLoad: (check) => c.addAfterLoad(path, owner, check),
    connect: (options) => connectUpstream(ctx, options),
    spans: c.spans,
    loadState: <T>(key: string, create: () => T): T => {
      if (!c.loadStates.has(key)) c.loadStates.set(key, create());
      return c.loadStates.get(key) as T;
    },
    counter: (name, help) => {
      if (!/^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(name)) throw new Error(`\`${name}\` is not a valid metric name`);
      return c.deps.metrics.counter(name, help);
    },
    histogram: (name, help, labelNames, buckets) => {
      if (!/^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(name)) throw new Error(`\`${name}\` is not a valid metric name`);
      return c.deps.metrics.histogram(name, help, labelNames, buckets);
    },
    namedBackend: async (name, sub) => {
      const spec = c.named.get(name);
      if (!spec) {
        const guess = didYouMean(name, c.named.keys());
        throw new ConfigError({
          code: ErrorCode.configInvalid,
          path: [...path, ...sub],
          message: `unknown backend \`${name}\`${guess ? `; did you mean \`${guess}\`?` : c.named.size ? `; named backends: ${[...c.named.keys()].join(', ')}` : ' (the top-level `backends` list is empty)'}`,
        });
      }
      const instance = await c.backendValue(spec.value, spec.path, policies);
      if (!instance) throw new ConfigError([]);
      return instance;
    },
  };
  return ctx;
}
