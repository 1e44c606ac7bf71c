import { CEL_NOT_SET_BEFORE_BACKEND, defineAttribute, jsonErrorReply, localReply, settleWithin } from 'switchyard/sdk';
import type { CompileContext, Exchange, HeaderMap, Logger, PolicyInstance, Reply } from 'switchyard/sdk';
import { applyHeaderModifier, compileHeaderModifier, framingEdit, framingMessage } from '../../lib/header-modifier/header-modifier.ts';
import type { HeaderModifierConfig } from '../../lib/header-modifier/header-modifier.ts';
import { GUARD_TIMEOUT_MS } from '../../lib/llm-guard/guard-http.ts';
import { guardMessages, requestSlots, responseSlots, writeBack } from '../../lib/llm-guard/messages.ts';
import type { TextSlot } from '../../lib/llm-guard/messages.ts';
import { requestImages } from '../../lib/llm-guard/images.ts';
import { applyAnthropicCacheMarkers, promptCachingSettings } from '../../lib/llm-guard/prompt-caching.ts';
import type { PromptCachingConfig, PromptCachingSettings } from '../../lib/llm-guard/prompt-caching.ts';
import { AI_POLICY } from '../../lib/llm/contract.ts';
import { formatOf } from '../../lib/llm/formats/index.ts';
import { guardSlot } from '../../lib/slots/ai.ts';
import type { AiPolicyRuntime, GuardInstance, GuardVerdict, LlmRouteType } from '../../lib/llm/contract.ts';
import { applyMutations, applyPrompts, compileModelAliases, resolveModelAlias } from './body.ts';
import type { BodyMutations, ModelAliases, PromptMessage } from './body.ts';
import { compileVirtualModels } from './virtual-models.ts';
import type { VirtualModelConfig } from './virtual-models.ts';

export interface RejectionConfig {
  status?: number;
  body?: string;
  headers?: HeaderModifierConfig;
}

/** A `promptGuard` list item: one guard key plus an optional `rejection`. */
export type GuardEntryConfig = Record<string, unknown> & { rejection?: RejectionConfig };

export interface AiPolicyConfig {
  prompts?: { prepend?: PromptMessage[]; append?: PromptMessage[] };
  routes?: Record<string, LlmRouteType>;
  defaults?: Record<string, unknown>;
  overrides?: Record<string, unknown>;
  transformations?: Record<string, string>;
  modelAliases?: Record<string, string>;
  virtualModels?: Record<string, VirtualModelConfig>;
  promptCaching?: PromptCachingConfig | null;
  promptGuard?: { request?: GuardEntryConfig[]; response?: GuardEntryConfig[]; streaming?: 'Disabled' | 'Enabled' };
}

/** BEHAVIOUR.md §2.9 defaults of `rejection`. */
export const DEFAULT_REJECTION_STATUS = 403;
export const DEFAULT_REJECTION_BODY = 'The request was rejected due to inappropriate content';
/** What a client gets when a guard cannot decide (its service failed) and fails closed. */
export const GUARD_FAILURE_STATUS = 503;
export const GUARD_FAILURE_BODY = 'failed to process LLM request: prompt guard failed';

interface CompiledGuard {
  /** The guard type's key (`regex`, `webhook`, `openAIModeration`, ...), for logs. */
  readonly key: string;
  /** A third-party guard's package (`name@version`), named beside the key when it fails. */
  readonly package: string | undefined;
  readonly instance: GuardInstance;
  readonly status: number;
  readonly body: string;
  /** The rejection's headers (`rejection.headers` applied to none), built at load; copied per reply. */
  readonly headers: HeaderMap;
  /** `switchyard_guardrail_checks_total` by this guard's verdicts (ADR 0171), resolved at load. */
  readonly checks: Readonly<Record<'pass' | 'mask' | 'reject' | 'error', { inc(): void }>>;
}

/** The `type` of the guard-failure error (the JSON body on a route whose backend does not re-shape errors). */
export const GUARD_FAILURE_TYPE = 'prompt_guard_failed';

/**
 * The gateway's answer when a guard service failed: 503 with the reference's message (BEHAVIOUR.md §2.9, §4.6), as a
 * gateway-made error, so the `ai` backend answers it in the client API's error shape (DECIDED 4).
 */
export function guardFailureReply(): Reply {
  return jsonErrorReply(GUARD_FAILURE_STATUS, GUARD_FAILURE_TYPE, GUARD_FAILURE_BODY);
}

/**
 * A guard's rejection: the configured (or webhook-given) status, body and headers, as the user wrote them (SPEC 2.9;
 * the reference sets no content-type). Not a gateway-made error, so it is not re-shaped for the client's API.
 */
function rejectionReply(g: CompiledGuard, status?: number, body?: string): Reply {
  // A webhook's own rejection replaces the entry's (status and body only, as the reference does).
  if (status !== undefined || body !== undefined) return localReply(status ?? g.status, body ?? g.body, {});
  return localReply(g.status, g.body, { ...g.headers });
}

const VERDICTS: ReadonlySet<unknown> = new Set(['pass', 'mask', 'reject']);

/** One guard's verdict as CEL reads it: `{guard, action}` (ADR 0181). */
interface GuardVerdictView {
  readonly guard: string;
  readonly action: string;
}

/**
 * Every guard verdict of the exchange so far, per phase in the order the guards ran (ADR 0181): the CEL variable
 * `llmGuards` (`llmGuards.request`, `llmGuards.response`: lists, a phase whose guards did not run absent; a CEL
 * variable published by a plugin is a map), and the access log's `llm.guard`.
 */
const LLM_GUARDS = defineAttribute<Partial<Record<'request' | 'response', GuardVerdictView[]>>>('llmGuards');

/** Add one guard's verdict to `llmGuards` and the access log's `llm.guard` (`<phase>:<action>:<guard>`, comma-separated). */
function logVerdict(ex: Exchange, phase: 'request' | 'response', action: string, guard: string): void {
  let verdicts = ex.get(LLM_GUARDS);
  if (verdicts === undefined) ex.set(LLM_GUARDS, (verdicts = {}));
  (verdicts[phase] ??= []).push({ guard, action });
  const line = (p: 'request' | 'response') => (verdicts[p] ?? []).map((v) => `${p}:${v.action}:${v.guard}`);
  ex.logField('llm.guard', [...line('request'), ...line('response')].join(','));
}

/**
 * A guard's verdict: a check that answers later has a guard service's time (GUARD_TIMEOUT_MS), and anything but a
 * `pass`, `mask` or `reject` verdict throws. A third-party guard that hangs or answers something else fails closed
 * (503) instead of holding the request or letting it through (ADR 0144).
 */
async function verdictOf(g: CompiledGuard, ex: Exchange, phase: 'request' | 'response', slots: readonly TextSlot[], images: readonly string[]): Promise<GuardVerdict> {
  const pending = g.instance.seesImages ? g.instance.check(ex, phase, guardMessages(slots), images) : g.instance.check(ex, phase, guardMessages(slots));
  const verdict = typeof (pending as PromiseLike<GuardVerdict> | undefined)?.then === 'function'
    ? await settleWithin(pending as PromiseLike<GuardVerdict>, GUARD_TIMEOUT_MS, () => new Error(`no verdict within ${GUARD_TIMEOUT_MS / 1000}s`))
    : (pending as GuardVerdict);
  const action = (verdict as { action?: unknown } | undefined)?.action;
  if (!VERDICTS.has(action)) throw new Error(`the verdict's action ${JSON.stringify(action) ?? 'undefined'} is not \`pass\`, \`mask\` or \`reject\``);
  return verdict;
}

/**
 * Run one guard list over the slots: in order; the first rejection answers; a mask rewrites the slots (the body) and
 * the next guard sees the masked text. A guard that throws (its service failed, or answered something unusable)
 * ends the list with 503.
 */
async function runGuards(ex: Exchange, phase: 'request' | 'response', guards: readonly CompiledGuard[], slots: readonly TextSlot[], log: Logger, images: readonly string[] = []): Promise<Reply | undefined> {
  if (guards.length === 0 || (slots.length === 0 && images.length === 0)) return undefined;
  for (const g of guards) {
    // A request with images only: the guards that judge no images have nothing to see.
    if (slots.length === 0 && !g.instance.seesImages) continue;
    let verdict;
    try {
      verdict = await verdictOf(g, ex, phase, slots, images);
      if (verdict.action === 'mask') writeBack(slots, verdict.messages);
    } catch (err) {
      log.warn('prompt guard failed', { guard: g.key, ...(g.package === undefined ? {} : { package: g.package }), phase, error: (err as Error)?.message ?? String(err) });
      logVerdict(ex, phase, 'error', g.key);
      g.checks.error.inc();
      return guardFailureReply();
    }
    g.checks[verdict.action].inc();
    logVerdict(ex, phase, verdict.action, g.key);
    if (verdict.action === 'reject') return rejectionReply(g, verdict.status, verdict.body);
  }
  return undefined;
}

/** Route suffixes, longest first, `*` kept apart. */
function compileRoutes(routes: Record<string, LlmRouteType>): { suffixes: [string, LlmRouteType][]; fallback: LlmRouteType | undefined } {
  const suffixes = Object.entries(routes)
    .filter(([k]) => k !== '*')
    .sort(([a], [b]) => b.length - a.length || (a < b ? -1 : a > b ? 1 : 0));
  return { suffixes, fallback: routes['*'] };
}

/** A path segment's text (`%2F` and the like decoded); as sent when it is not valid percent-encoding. */
function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** Formats whose body is JSON the policy may change (passthrough and realtime are forwarded as they are). */
const MUTABLE: ReadonlySet<LlmRouteType> = new Set(['completions', 'messages', 'responses', 'embeddings', 'anthropicTokenCount', 'generateContent', 'detect']);

/** The compiled `ai` policy: what the `ai` backend calls (plugins/lib/llm/contract.ts `AiPolicyRuntime`). */
export class AiRuntime implements AiPolicyRuntime {
  readonly hasResponseGuards: boolean;
  readonly guardStreams: boolean;
  readonly promptCaching: PromptCachingSettings | undefined;
  readonly modelAliasNames: readonly string[];
  readonly virtualModelNames: readonly string[];
  private readonly suffixes: readonly [string, LlmRouteType][];
  /** The suffixes mapped to `models`: a path one segment below one asks for one model (chosen at load). */
  private readonly modelsSuffixes: readonly string[];
  private readonly fallback: LlmRouteType | undefined;
  private readonly prepend: readonly PromptMessage[];
  private readonly append: readonly PromptMessage[];
  private readonly mutations: BodyMutations | undefined;
  private readonly aliases: ModelAliases | undefined;
  private readonly requestGuards: readonly CompiledGuard[];
  private readonly responseGuards: readonly CompiledGuard[];
  /** Some request guard judges images. */
  private readonly requestImages: boolean;
  private readonly log: Logger;

  constructor(parts: {
    routes: Record<string, LlmRouteType>;
    prepend: readonly PromptMessage[];
    append: readonly PromptMessage[];
    mutations: BodyMutations | undefined;
    aliases: ModelAliases | undefined;
    modelAliasNames: readonly string[];
    virtualModelNames: readonly string[];
    promptCaching: PromptCachingSettings | undefined;
    requestGuards: readonly CompiledGuard[];
    responseGuards: readonly CompiledGuard[];
    guardStreams: boolean;
    log: Logger;
  }) {
    const { suffixes, fallback } = compileRoutes(parts.routes);
    this.suffixes = suffixes;
    this.modelsSuffixes = suffixes.filter(([, type]) => type === 'models').map(([suffix]) => suffix);
    this.fallback = fallback;
    this.prepend = parts.prepend;
    this.append = parts.append;
    this.mutations = parts.mutations;
    this.aliases = parts.aliases;
    this.modelAliasNames = parts.modelAliasNames;
    this.virtualModelNames = parts.virtualModelNames;
    this.promptCaching = parts.promptCaching;
    this.requestGuards = parts.requestGuards;
    this.responseGuards = parts.responseGuards;
    this.requestImages = parts.requestGuards.some((g) => g.instance.seesImages === true);
    this.hasResponseGuards = parts.responseGuards.length > 0;
    this.guardStreams = parts.guardStreams;
    this.log = parts.log;
  }

  routeType(path: string): LlmRouteType | undefined {
    for (const [suffix, type] of this.suffixes) if (path.endsWith(suffix)) return type;
    return this.modelAsked(path) !== undefined ? 'models' : this.fallback;
  }

  modelAsked(path: string): string | undefined {
    // `<models suffix>/<id>` (GET /v1/models/gpt-4o: the SDKs' `models.retrieve`); an id is one path segment. A
    // chat route without a `models` entry pays nothing for it.
    if (this.modelsSuffixes.length === 0) return undefined;
    const slash = path.lastIndexOf('/');
    if (slash <= 0 || slash === path.length - 1) return undefined;
    const parent = path.slice(0, slash);
    for (const suffix of this.modelsSuffixes) if (parent.endsWith(suffix)) return decodeSegment(path.slice(slash + 1));
    return undefined;
  }

  applyRequest(ex: Exchange, format: LlmRouteType, body: Record<string, unknown>): void {
    if (!MUTABLE.has(format)) return;
    // Gemini bodies keep generation settings in `generationConfig` (its format module says where each field goes).
    if (this.mutations) applyMutations(ex, body, this.mutations, formatOf(format)?.bodyFields);
    if (this.aliases && typeof body.model === 'string') {
      const to = resolveModelAlias(this.aliases, body.model);
      if (to !== undefined) body.model = to;
    }
    applyPrompts(format, body, this.prepend, this.append);
    if (this.promptCaching && format === 'messages') applyAnthropicCacheMarkers(body, this.promptCaching);
  }

  guardRequest(ex: Exchange, format: LlmRouteType, body: Record<string, unknown>): Promise<Reply | undefined> {
    // Token counting sends nothing to a model (the reference skips guards there too).
    if (this.requestGuards.length === 0 || format === 'anthropicTokenCount') return Promise.resolve(undefined);
    // Images are collected only for a guard whose service judges them (ADR 0181).
    const images = this.requestImages ? requestImages(body) : undefined;
    return runGuards(ex, 'request', this.requestGuards, requestSlots(format, body), this.log, images);
  }

  guardResponse(ex: Exchange, format: LlmRouteType, body: Record<string, unknown>): Promise<Reply | undefined> {
    if (this.responseGuards.length === 0) return Promise.resolve(undefined);
    return runGuards(ex, 'response', this.responseGuards, responseSlots(format, body), this.log);
  }
}

async function compileGuards(list: GuardEntryConfig[] | undefined, phase: 'request' | 'response', ctx: CompileContext): Promise<CompiledGuard[]> {
  const out: CompiledGuard[] = [];
  for (let i = 0; i < (list ?? []).length; i++) {
    const entry = list![i]!;
    const at = ['promptGuard', phase, i];
    const { key, instance, package: pkg } = await ctx.compileVariant(guardSlot, entry, at);
    const rejection = entry.rejection ?? {};
    const headers: HeaderMap = {};
    if (rejection.headers) {
      const framing = framingEdit(rejection.headers);
      if (framing) ctx.fail(framingMessage(framing[1], 'response'), [...at, 'rejection', 'headers', ...framing]);
      const compiled = compileHeaderModifier(rejection.headers);
      if (typeof compiled === 'string') ctx.fail(compiled, [...at, 'rejection', 'headers']);
      applyHeaderModifier(compiled, headers);
    }
    // Labels from config only: the guard type and the phase (a bounded set, whatever clients send).
    const counter = ctx.counter('switchyard_guardrail_checks_total', 'Prompt guard verdicts, by guard type, phase (request, response) and action (pass, mask, reject, error: the guard failed).');
    const child = (action: string) => counter.child({ guard: key, phase, action });
    const checks = { pass: child('pass'), mask: child('mask'), reject: child('reject'), error: child('error') };
    out.push({ key, package: pkg, instance, status: rejection.status ?? DEFAULT_REJECTION_STATUS, body: rejection.body ?? DEFAULT_REJECTION_BODY, headers, checks });
  }
  return out;
}

// Body transformations see `llmRequest`; they run before the backend's call sets `llm` (ADR 0176).
const { llmRequest: _body, ...NOT_SET } = CEL_NOT_SET_BEFORE_BACKEND;

/** Compile the runtime (exported for tests that call it without a gateway). */
export async function compileAiRuntime(config: AiPolicyConfig, ctx: CompileContext): Promise<AiRuntime> {
  const transformations = Object.entries(config.transformations ?? {}).map(([field, source]) => [field, ctx.expr.compile(source, ['transformations', field], NOT_SET)] as const);
  const overrides = Object.entries(config.overrides ?? {});
  const defaults = Object.entries(config.defaults ?? {});
  const mutations = transformations.length || overrides.length || defaults.length ? { overrides, transformations, defaults } : undefined;
  const aliases = config.modelAliases && Object.keys(config.modelAliases).length ? compileModelAliases(config.modelAliases) : undefined;
  const guard = config.promptGuard ?? {};
  const requestGuards = await compileGuards(guard.request, 'request', ctx);
  const responseGuards = await compileGuards(guard.response, 'response', ctx);
  if (requestGuards.length > 0 || responseGuards.length > 0) {
    for (const [suffix, type] of Object.entries(config.routes ?? {})) {
      if (type === 'passthrough' || type === 'realtime') ctx.warn(`prompt guards do not run on \`${type}\` requests: a client reaches them by its path`, ['routes', suffix]);
    }
  }
  if (responseGuards.length > 0 && guard.streaming !== 'Enabled') {
    ctx.warn('response guards do not run on streamed answers (`stream: true`), which any client can ask for; set `streaming: Enabled` to guard them too', ['promptGuard', 'streaming']);
  }
  return new AiRuntime({
    routes: config.routes ?? {},
    prepend: config.prompts?.prepend ?? [],
    append: config.prompts?.append ?? [],
    mutations,
    aliases,
    modelAliasNames: Object.keys(config.modelAliases ?? {}).filter((k) => !k.includes('*')),
    virtualModelNames: Object.keys(config.virtualModels ?? {}),
    promptCaching: config.promptCaching ? promptCachingSettings(config.promptCaching) : undefined,
    requestGuards,
    responseGuards,
    // `streaming: Enabled`: the backend holds streamed responses until they end and runs the response guards on them.
    guardStreams: guard.streaming === 'Enabled',
    log: ctx.logger,
  });
}

/** Where each `ai` policy of this load is, with its prompt guards' config as JSON ('' for none). */
const GUARDS_BY_PATH = 'ai.policy.guardsByPath';

/**
 * A backend's `ai` policy replaces the route's as a whole (per policy key, the backend level wins): guards set on the
 * route do not run on that backend. Said at load, at the backend's policy, unless it lists the same guards (ADR
 * 0165). Route policies compile before their backends' (kernel/compile/compile-route.ts).
 */
function warnReplacedGuards(config: AiPolicyConfig, ctx: CompileContext): void {
  const byPath = ctx.loadState(GUARDS_BY_PATH, () => new Map<string, string>());
  const guard = config.promptGuard;
  const own = guard && ((guard.request?.length ?? 0) > 0 || (guard.response?.length ?? 0) > 0) ? JSON.stringify(guard) : '';
  const path = ctx.path;
  byPath.set(JSON.stringify(path), own);
  const at = path.lastIndexOf('backends');
  if (at < 0 || typeof path[at + 1] !== 'number') return;
  const routePath = [...path.slice(0, at), ...path.slice(at + 2)];
  const routeGuards = byPath.get(JSON.stringify(routePath));
  if (!routeGuards || routeGuards === own) return;
  const where = routePath.map((p, i) => (typeof p === 'number' ? `[${p}]` : i > 0 ? `.${p}` : p)).join('');
  ctx.warn(`this backend's \`ai\` policy replaces the route's (\`${where}\`) as a whole: the route's prompt guards do not run on requests to this backend; list them in this policy too`);
}

/**
 * The `ai` policy: compiles everything once and hands the runtime to the `ai` backend at compile time (the
 * `AI_POLICY` facet); it has no per-request hook. Route and backend level may both provide it; the backend's wins.
 */
export async function compileAiPolicy(config: AiPolicyConfig, ctx: CompileContext): Promise<PolicyInstance> {
  const runtime = await compileAiRuntime(config, ctx);
  warnReplacedGuards(config, ctx);
  const aliases = config.modelAliases && Object.keys(config.modelAliases).length ? compileModelAliases(config.modelAliases) : undefined;
  const alias = aliases ? (model: string): string | undefined => resolveModelAlias(aliases, model) : undefined;
  const virtual = config.virtualModels ? compileVirtualModels(config.virtualModels, ctx, () => runtime, alias) : undefined;
  // Virtual models choose among the route's backends per request, once the body says which model it names.
  if (virtual) return { provides: [AI_POLICY.of(runtime)], selectBackends: (backends) => virtual.selector(backends) };
  return { provides: [AI_POLICY.of(runtime)] };
}
