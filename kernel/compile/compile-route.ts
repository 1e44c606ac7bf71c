import type { BackendInstance, BackendSelector, ConfigPath, RouteBackend } from '../sdk/index.ts';
import { RetryBudget } from '../exchange/upstream-plan.ts';
import type { FailoverPlan, UpstreamPlan } from '../exchange/upstream-plan.ts';
import { BackendHealth, RouteHealth } from './backend-health.ts';
import { HealthChecker } from './health-checker.ts';
import { compileHostnameTest, compileMatch } from './matchers.ts';
import type { MatchConfig } from './matchers.ts';
import { LayeredPolicySet } from './policy-set.ts';
import type { CompiledPolicySet, PolicyEntry } from './policy-set.ts';
import type { CompiledBackendRef, CompiledRoute } from './snapshot.ts';
import type { LoadCompiler } from './load-compiler.ts';
import { ownerOf } from './plugin-owner.ts';
import { boundedBackend, boundedSelector, ownedHooks } from './run-hooks.ts';
import { errorShaper } from './error-shaper.ts';
import { unreachableMatchPaths } from './match-path-check.ts';

type Obj = Record<string, unknown>;

/** One route of a listener: its policies, matches, backends (each with its own policies and upstream plan). */
export async function compileRoute(c: LoadCompiler, route: Obj, path: ConfigPath, index: number, listener: string, bind: number, repeat = 0): Promise<CompiledRoute | undefined> {
  const name = (route.name as string | undefined) ?? `route${index}`;
  // JSON, not joined with a separator: names may hold any character, and two routes must never share a key.
  const stateKey = JSON.stringify([bind, listener, name, repeat]);
  const routeSet = await c.policySet('routePolicies', route.policies as Obj | undefined, [...path, 'policies'], stateKey, name);
  // Keys read after the compile: it renamed aliases to the plugins' own keys.
  c.loadedRoutes.push(Object.freeze({ name, path, policies: Object.freeze(Object.keys((route.policies as Obj | undefined) ?? {})) }));
  const matches = (route.matches as MatchConfig[] | undefined)?.map((m) => compileMatch(m)) ?? null;
  for (const unreachable of unreachableMatchPaths(route.matches, c.staticConfig.paths, [...path, 'matches'])) c.warn(unreachable.path, unreachable.message);
  const refs: CompiledBackendRef[] = [];
  const list = (route.backends ?? []) as Obj[];
  const key = `${bind}/${listener}/${name}`;
  // A third-party hook's deadline (ADR 0144), unless the route's `timeout` policy bounds the whole request.
  const hookDeadlineMs = routeSet.facets.requestTimeoutMs ? 0 : c.staticConfig.defaultTimeouts.backendRequestMs;
  for (let i = 0; i < list.length; i++) {
    const ref = await backendRef(c, list[i]!, [...path, 'backends', i], routeSet, refs.length, list.length, { name, stateKey }, hookDeadlineMs);
    if (ref) refs.push(ref);
  }
  checkBackendProtocols(c, routeSet.entries, refs.map((r) => r.instance));
  const selectBackends = await backendSelector(c, routeSet.entries, refs, [...path, 'policies'], hookDeadlineMs);
  const health = refs.some((r) => r.health)
    ? new RouteHealth(refs, name, c.deps.logger, c.ejections())
    : null;
  // Third-party hooks behind their wrappers, made here once (ADR 0155); the distribution's called as they are.
  const logger = c.deps.logger;
  const requestHooks = ownedHooks(routeSet.requestHooks(), 'request', hookDeadlineMs);
  const responseHooks = ownedHooks(routeSet.responseHooks(), 'response', logger);
  const logHooks = ownedHooks(routeSet.logHooks(), 'log', logger);
  const shaper = refs.find((r) => r.instance.shapeError)?.instance;
  return {
    info: Object.freeze({ name, key, listener, bind, namespace: route.namespace as string | undefined, ruleName: route.ruleName as string | undefined }),
    hostnameTest: Array.isArray(route.hostnames) && route.hostnames.length ? compileHostnameTest(route.hostnames as string[]) : null,
    matches,
    requestHooks,
    responseHooks: responseHooks.length ? responseHooks : null,
    logHooks: logHooks.length ? logHooks : null,
    backends: refs,
    totalWeight: refs.reduce((sum, r) => sum + r.weight, 0),
    selectBackends,
    cooling: refs.some((r) => r.cooldown !== null),
    kernelOnly: refs.length > 0 && refs.every((r) => r.forwardsDirect && r.requestHooks === null && r.logHooks === null && r.responseHooks === null) && requestHooks === null && selectBackends === null && health === null,
    // Everything the lean side needs is known here (ADR 0093): `forwardsDirect` already rules out failover, retry,
    // upstream hooks and an attempt timeout; the target must be one that forwards into a response (the kernel's).
    leanSafe:
      refs.length > 0 &&
      refs.every((r) => r.forwardsDirect && r.requestStreamFree && forwardsInto(r.instance.target)) &&
      routeSet.requestStreamFree &&
      selectBackends === null &&
      health === null &&
      shaper === undefined,
    health,
    shapeError: shaper ? errorShaper(shaper, logger) : null,
    requestTimeoutMs: routeSet.facets.requestTimeoutMs ?? 0,
    metrics: c.deps.metrics.route(String(bind), listener, name),
  };
}

async function backendRef(c: LoadCompiler, ref: Obj, path: ConfigPath, routeSet: CompiledPolicySet, index: number, siblings: number, route: { name: string; stateKey: string }, hookDeadlineMs: number): Promise<CompiledBackendRef | undefined> {
  const rawRef = JSON.stringify(ref);
  let policyValue = ref.policies as Obj | undefined;
  const named = typeof ref.backend === 'string' ? c.named.get(ref.backend) : undefined;
  // A reference to a named backend brings that backend's policies; the reference's own win per key.
  if (typeof ref.backend === 'string') {
    const spec = named;
    if (spec?.value.policies) policyValue = { ...(spec.value.policies as Obj), ...(policyValue ?? {}) };
  }
  const backendSet = await c.policySet('backendPolicies', policyValue, [...path, 'policies']);
  const layered = new LayeredPolicySet([routeSet, backendSet]);
  const instance = await c.backendValue(ref, path, layered);
  if (!instance) return undefined;
  checkBackendProtocols(c, backendSet.entries, [instance]);
  const facets = layered.facets;
  // A `timeout` policy anywhere on the way (route or backend) replaces the default response deadline (ADR 0019).
  const defaults = c.staticConfig.defaultTimeouts;
  const ownDeadline = facets.attemptTimeoutMs !== undefined || facets.requestTimeoutMs !== undefined;
  const retry: FailoverPlan | null = facets.retry
    ? { attempts: facets.retry.attempts, codes: new Set(facets.retry.codes), backoffMs: facets.retry.backoffMs ?? 0, budget: new RetryBudget() }
    : null;
  // With other backends on the route, retries go to another backend (the pipeline's loop, ADR 0023); the
  // forwarder tries once but still buffers the body so it can be sent again.
  // Without one, a backend that asks for failover (`ai`) gets it on a route with others: each tried once (ADR 0039).
  const failover =
    retry && siblings > 1 && retry.attempts > 0
      ? retry
      : !retry && siblings > 1 && instance.failover
        ? { attempts: siblings - 1, codes: new Set(instance.failover.codes), backoffMs: 0, once: true }
        : null;
  const headersTimeoutMs = ownDeadline ? 0 : (instance.responseDeadlineMs ?? facets.responseDeadlineMs ?? defaults.backendRequestMs);
  const plan: UpstreamPlan = {
    attemptTimeoutMs: facets.attemptTimeoutMs ?? 0,
    headersTimeoutMs,
    idleTimeoutMs: facets.streamIdleTimeoutMs ?? defaults.streamIdleMs,
    retry: failover ? { attempts: 0, codes: failover.codes, backoffMs: 0, failoverAttempts: failover.attempts } : retry,
    // A third-party `onUpstream` is bounded by the attempt's response deadline (ADR 0144).
    upstreamHooks: ownedHooks(layered.upstreamHooks(), 'upstream', headersTimeoutMs),
  };
  const outlier = facets.outlierDetection ?? null;
  const check = facets.healthCheck ?? null;
  const label = typeof ref.backend === 'string' ? ref.backend : (instance.label ?? `backends[${index}]`);
  // Same route, same place, same backend config (a named one's included): the state survives the reload. The route
  // is its state key, name and rank among that name (ADR 0173): two routes of one name never share a backend's health.
  const identity = `${route.stateKey}:${index}:${rawRef}:${named ? JSON.stringify(named.value) : ''}`;
  // In shared memory: every worker of the gateway counts into, and ejects from, the same state (ADR 0047).
  const health = outlier || check ? c.resourceView.get(`health:${identity}`, () => new BackendHealth(c.sharedState(`health:${identity}`, 6))) : null;
  if (check && health) {
    const target = instance.target;
    if (!target) {
      c.issue([...path, 'policies', 'healthCheck'], '`healthCheck` needs a backend that forwards to one address (`host`, a named `host` backend, `ai`)');
    } else if (!c.deps.checkOnly) {
      // The validator starts no probes (ADR 0131); a reload's verdict does not wait for them either.
      const key = `healthcheck:${identity}:${JSON.stringify(check)}`;
      c.resourceView.get(
        key,
        () => {
          const cell = c.sharedState(key, 4);
          const checker = new HealthChecker(target, check, health, { route: route.name, backend: label }, c.deps.logger, c.ejections(), cell);
          checker.start();
          return checker;
        },
        (checker) => checker.dispose(),
      );
    }
  }
  const responseHooks = ownedHooks([...backendSet.responseHooks(), ...routeSet.responseHooks()], 'response', c.deps.logger);
  const logHooks = ownedHooks([...backendSet.logHooks(), ...routeSet.logHooks()], 'log', c.deps.logger);
  const requestHooks = ownedHooks(backendSet.requestHooks(), 'request', hookDeadlineMs);
  // A third-party backend's failures name it, and its answer is bounded by the response deadline (ADR 0144).
  const owner = ownerOf(instance);
  return {
    weight: (ref.weight as number | undefined) ?? 1,
    instance: owner?.package === undefined ? instance : boundedBackend(instance, owner, plan.retry === null ? plan.headersTimeoutMs : 0),
    requestHooks,
    responseHooks: responseHooks.length ? responseHooks : null,
    logHooks: logHooks.length ? logHooks : null,
    plan,
    index,
    health,
    outlier,
    label,
    failover,
    // A backend that asks for failover (`ai`) cools down after a failure, also when a `retry` policy drives the
    // failover (then only a route policy's chosen order, `selectBackends`, tries each backend once and cools it).
    cooldown: failover?.once || (failover !== null && instance.failover) ? { until: 0 } : null,
    forwardsDirect:
      instance.forwardsToTarget === true &&
      // Response hooks that can edit the raw answer headers keep the direct path (ADR 0071).
      responseHooks.every((h) => h.onResponseHeaders !== undefined) &&
      failover === null &&
      plan.retry === null &&
      plan.upstreamHooks === null &&
      plan.attemptTimeoutMs === 0,
    requestStreamFree: layered.requestStreamFree,
  };
}

/**
 * Whether a backend's target can forward straight into a response (`DirectForwarder.forwardInto`, the kernel's
 * `PooledTarget`): compile sits below upstream (test/unit/kernel-layers.test.ts), so it asks for the method.
 */
function forwardsInto(target: unknown): boolean {
  return typeof (target as { forwardInto?: unknown } | undefined)?.forwardInto === 'function';
}

/** Policies that act only on one backend protocol (token rate limits: `llm`) are refused in front of others. */
function checkBackendProtocols(c: LoadCompiler, entries: readonly PolicyEntry[], backends: readonly BackendInstance[]): void {
  for (const e of entries) {
    const need = e.instance.requiresBackendProtocol;
    if (need && (backends.length === 0 || backends.some((b) => b.protocol !== need.protocol))) c.issue(need.path, need.message);
  }
}

/**
 * The route policy that chooses backends per request (virtual models), given the route's backends; null when none
 * does. A third-party one is bounded by the route's hook deadline `deadlineMs` (ADR 0154).
 */
async function backendSelector(c: LoadCompiler, entries: readonly PolicyEntry[], refs: readonly CompiledBackendRef[], at: ConfigPath, deadlineMs: number): Promise<BackendSelector | null> {
  let chosen: { key: string; selector: BackendSelector } | undefined;
  for (const e of entries) {
    if (!e.instance.selectBackends) continue;
    const backends: RouteBackend[] = refs.map((r) => ({ name: r.label, instance: r.instance }));
    const selector = await c.guarded([...at, e.key], () => e.instance.selectBackends!(backends));
    if (!selector) continue;
    if (chosen) c.issue([...at, e.key], `\`${e.key}\` and \`${chosen.key}\` both choose this route's backends per request; keep one`);
    else chosen = { key: e.key, selector: boundedSelector(e.instance, selector, deadlineMs) };
  }
  return chosen?.selector ?? null;
}
