import { CEL_NOT_SET_BEFORE_BACKEND, CEL_NOT_SET_HERE, celLlmBeforeCall, didYouMean, jsonErrorReply } from 'switchyard/sdk';
import type { BackendChoice, BackendSelector, CompileContext, CompiledExpression, Exchange, RouteBackend } from 'switchyard/sdk';
import { decodeBody } from '../../lib/llm/body.ts';
import { AI_BACKEND_MODELS, LLM_CLIENT_FORMAT, LLM_VIRTUAL_MODEL } from '../../lib/llm/contract.ts';
import type { AiBackendModels, AiPolicyRuntime, LlmRouteType, VirtualModelChoice } from '../../lib/llm/contract.ts';
import { estimatePromptTokens } from '../../lib/llm/estimate.ts';
import { parseGeminiPath } from '../../lib/llm/gemini/paths.ts';
import { isObj } from '../../lib/llm/json.ts';
import type { Obj } from '../../lib/llm/json.ts';
import { jsonToCel } from './body.ts';

/**
 * `ai.virtualModels` (ADR 0045): a model name clients send, mapped to some of the route's `ai` backends. The policy
 * gives the kernel a backend selector (`PolicyInstance.selectBackends`): it reads the body, and for a virtual name
 * answers the targets to try in order; the kernel's failover (ADR 0039) moves along that order. The chosen backend
 * learns the model to send from the `LLM_VIRTUAL_MODEL` attribute.
 */

export interface VirtualTargetConfig {
  backend: string;
  model?: string;
  weight?: number;
  when?: string;
}

export interface VirtualModelConfig {
  strategy?: 'ordered' | 'weighted';
  targets: VirtualTargetConfig[];
}

/** Same cap as the `ai` backend's (BEHAVIOUR.md §8.3): the backend reads the same buffered body. */
const REQUEST_LIMIT = 2 * 1024 * 1024;

/** Route types whose JSON body names the model (passthrough and realtime bodies are not read; `models` has none). */
const BODY_TYPES: ReadonlySet<LlmRouteType> = new Set(['completions', 'messages', 'responses', 'embeddings', 'anthropicTokenCount', 'generateContent', 'geminiCountTokens', 'detect']);

interface Target {
  readonly index: number;
  readonly weight: number;
  readonly when: CompiledExpression | undefined;
}

/** One virtual model resolved against the route's backends. */
class VirtualModel {
  private readonly name: string;
  private readonly weighted: boolean;
  private readonly targets: readonly Target[];
  /** Without conditions under `ordered`, every request gets the same order (no allocation). */
  private readonly fixed: readonly number[] | undefined;
  private readonly needsPromptTokens: boolean;
  readonly choice: VirtualModelChoice;

  constructor(name: string, weighted: boolean, targets: readonly Target[], models: ReadonlyMap<object, string>) {
    this.name = name;
    this.weighted = weighted;
    this.targets = targets;
    this.fixed = !weighted && targets.every((t) => t.when === undefined) ? targets.map((t) => t.index) : undefined;
    this.needsPromptTokens = targets.some((t) => t.when?.source.includes('promptTokens'));
    this.choice = { name, models };
  }

  choose(ex: Exchange, body: Obj, format: LlmRouteType): BackendChoice {
    ex.set(LLM_VIRTUAL_MODEL, this.choice);
    if (this.fixed) return this.fixed;
    let eligible: Target[] = [];
    let vars: Record<string, unknown> | undefined;
    for (const t of this.targets) {
      if (t.when !== undefined) {
        vars ??= { llmRequest: jsonToCel(body), llm: { requestModel: this.name, ...(this.needsPromptTokens ? { promptTokens: BigInt(estimatePromptTokens(body)) } : {}) } };
        let ok = false;
        try {
          ok = t.when.evaluate(ex, vars) === true;
        } catch {
          // A condition that cannot be evaluated (a claim absent without jwtAuth) leaves its target out.
        }
        if (!ok) continue;
      }
      eligible.push(t);
    }
    if (eligible.length === 0) {
      if (format !== 'detect') ex.set(LLM_CLIENT_FORMAT, format);
      return jsonErrorReply(400, 'invalid_request_error', `no target of virtual model \`${this.name}\` accepts this request`);
    }
    if (this.weighted) eligible = weightedOrder(eligible);
    return eligible.map((t) => t.index);
  }
}

/** A weighted draw without replacement over the positive weights, then the weight-0 targets in config order. */
function weightedOrder(list: Target[]): Target[] {
  const out: Target[] = [];
  const left = list.filter((t) => t.weight > 0);
  let total = left.reduce((sum, t) => sum + t.weight, 0);
  while (left.length > 0) {
    let r = Math.random() * total;
    let k = 0;
    while (k < left.length - 1 && (r -= left[k]!.weight) >= 0) k++;
    const t = left.splice(k, 1)[0]!;
    total -= t.weight;
    out.push(t);
  }
  for (const t of list) if (t.weight === 0) out.push(t);
  return out;
}

/** A condition sees `llm` as the call about to be made (`VirtualModel.choose`): the fields set later are refused. */
const NOT_SET_IN_WHEN: Readonly<Record<string, string>> = Object.freeze({
  mcp: CEL_NOT_SET_HERE.mcp!,
  llmGuards: CEL_NOT_SET_BEFORE_BACKEND.llmGuards!,
  ...celLlmBeforeCall('in a `virtualModels` condition', ['requestModel', 'promptTokens']),
});

/** Config compiled at policy load (CEL checked there); resolved against the route's backends by `selector`. */
export interface VirtualModels {
  readonly names: readonly string[];
  selector(backends: readonly RouteBackend[]): BackendSelector;
}

/**
 * `alias`: the policy's `modelAliases` (the model a requested name is sent as, or undefined); a name that is not a
 * virtual model but whose alias is one is served by that virtual model.
 */
export function compileVirtualModels(
  config: Record<string, VirtualModelConfig>,
  ctx: CompileContext,
  runtime: () => AiPolicyRuntime,
  alias?: (model: string) => string | undefined,
): VirtualModels | undefined {
  const entries = Object.entries(config);
  if (entries.length === 0) return undefined;
  if (ctx.path.includes('backends')) ctx.fail('`virtualModels` belongs on a route\'s `ai` policy (it chooses among the route\'s backends), not on a backend\'s', ['virtualModels']);
  const conditions = entries.map(([name, vm]) => vm.targets.map((t, i) => (t.when === undefined ? undefined : ctx.expr.compile(t.when, ['virtualModels', name, 'targets', i, 'when'], NOT_SET_IN_WHEN))));
  return {
    names: entries.map(([name]) => name),
    selector(backends) {
      const byName = new Map(backends.map((b, i) => [b.name, i]));
      const fixedModels = ctx.loadState<AiBackendModels>(AI_BACKEND_MODELS, () => new Map());
      const models = new Map<string, VirtualModel>();
      entries.forEach(([name, vm], v) => {
        const served = new Map<object, string>();
        const targets: Target[] = vm.targets.map((t, i) => {
          const at = ['virtualModels', name, 'targets', i];
          const index = byName.get(t.backend);
          if (index === undefined) {
            const guess = didYouMean(t.backend, byName.keys());
            ctx.fail(`unknown backend \`${t.backend}\`${guess ? `; did you mean \`${guess}\`?` : `; this route's backends: ${[...byName.keys()].join(', ') || 'none'}`}`, [...at, 'backend']);
          }
          const backend = backends[index]!;
          if (backend.instance.protocol !== 'llm') ctx.fail(`backend \`${t.backend}\` is not an \`ai\` backend; virtual model targets must be`, [...at, 'backend']);
          if (served.has(backend.instance)) ctx.fail(`backend \`${t.backend}\` is listed twice in virtual model \`${name}\``, [...at, 'backend']);
          const model = t.model ?? fixedModels.get(backend.instance) ?? undefined;
          if (model === undefined) ctx.fail(`backend \`${t.backend}\` fixes no model (\`provider.<x>.model\`): give this target a \`model\``, at);
          served.set(backend.instance, model);
          return { index, weight: t.weight ?? 1, when: conditions[v]![i] };
        });
        models.set(name, new VirtualModel(name, vm.strategy === 'weighted', targets, served));
      });
      const policy = runtime();
      return async (ex) => {
        const format = policy.routeType(ex.path) ?? 'completions';
        if (!BODY_TYPES.has(format)) return undefined;
        let body: unknown;
        try {
          let raw = await ex.bufferBody(REQUEST_LIMIT);
          if (ex.headers['content-encoding'] !== undefined) raw = await decodeBody(raw, ex.headers['content-encoding'], REQUEST_LIMIT);
          body = JSON.parse(raw.toString('utf8'));
        } catch {
          // The backend reads the body again and answers the error in the client's shape.
          return undefined;
        }
        if (!isObj(body)) return undefined;
        let name = typeof body.model === 'string' ? body.model : undefined;
        if (name === undefined && (format === 'generateContent' || format === 'geminiCountTokens')) name = parseGeminiPath(ex.path).model;
        if (name === undefined) return undefined;
        let vm = models.get(name);
        if (vm === undefined && alias !== undefined) {
          const to = alias(name);
          if (to !== undefined) vm = models.get(to);
        }
        return vm?.choose(ex, body, format);
      };
    },
  };
}
