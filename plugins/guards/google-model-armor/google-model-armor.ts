import type { CompileContext } from 'switchyard/sdk';
import { guardConnection } from '../../lib/llm-guard/guard-http.ts';
import { guardVerdictCache } from '../../lib/llm-guard/verdict-cache.ts';
import type { GuardCacheConfig } from '../../lib/llm-guard/verdict-cache.ts';
import type { GuardInstance, GuardVerdict } from '../../lib/llm/contract.ts';
import { isObj } from '../../lib/llm/json.ts';

export interface ModelArmorConfig {
  templateId: string;
  projectId: string;
  location?: string;
  policies?: Record<string, unknown>;
  host?: string;
  cache?: GuardCacheConfig;
}

export const DEFAULT_LOCATION = 'us-central1';

/** True when any filter result (at any depth: RAI, jailbreak, malicious URI, CSAM, virus scan, SDP) is `MATCH_FOUND`. */
function matchFound(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(matchFound);
  if (!isObj(value)) return false;
  if (value.matchState === 'MATCH_FOUND' || value.match_state === 'MATCH_FOUND') return true;
  return Object.values(value).some(matchFound);
}

/**
 * Read a sanitize answer: the overall `filterMatchState` or any filter with `MATCH_FOUND` rejects. An answer that
 * is no sanitize result, whose filters all failed to run (`invocationResult: FAILURE`), or that says neither
 * `MATCH_FOUND` nor `NO_MATCH_FOUND`, checked nothing: it throws (the guard fails closed). `PARTIAL` (some filters
 * skipped) is decided by the filters that ran.
 */
export function modelArmorBlocked(answer: unknown): boolean {
  if (!isObj(answer)) throw new Error('the Model Armor answer is not a JSON object');
  const result = answer.sanitizationResult ?? answer.sanitization_result;
  if (!isObj(result)) throw new Error('the Model Armor answer has no `sanitizationResult`');
  const state = result.filterMatchState ?? result.filter_match_state;
  if (state === 'MATCH_FOUND') return true;
  if (matchFound(result.filterResults ?? result.filter_results)) return true;
  if ((result.invocationResult ?? result.invocation_result) === 'FAILURE') throw new Error('Model Armor ran none of the filters (invocationResult FAILURE)');
  // Only an explicit NO_MATCH_FOUND passes: a missing or unspecified state decided nothing (ADR 0181).
  if (state !== 'NO_MATCH_FOUND') throw new Error('the Model Armor answer has no `filterMatchState`');
  return false;
}

/**
 * `googleModelArmor` (BEHAVIOUR.md §2.9): `POST /v1/projects/<p>/locations/<loc>/templates/<t>:sanitizeUserPrompt`
 * (requests, `{userPromptData: {text}}`) or `:sanitizeModelResponse` (responses, `{modelResponseData: {text}}`) on
 * `modelarmor.<loc>.rep.googleapis.com`, the texts joined by newlines, with a Google access token from the guard's
 * `policies.backendAuth` (default: `gcp`, Application Default Credentials). Any `MATCH_FOUND` filter rejects.
 * The filters read the joined text as one prompt (a jailbreak may span turns), so the texts are never split: `cache`
 * (ADR 0188) remembers the pass of a whole list of texts, which a retried or repeated request hits.
 */
export async function compileModelArmor(config: ModelArmorConfig, ctx: CompileContext): Promise<GuardInstance> {
  const location = config.location ?? DEFAULT_LOCATION;
  const origin = config.host ?? `https://modelarmor.${location}.rep.googleapis.com`;
  const connection = await guardConnection(ctx, origin, config.policies, { gcp: {} }, 'Model Armor');
  const { cache: cacheConfig, ...identity } = config;
  const cache = guardVerdictCache(ctx, 'googleModelArmor', { ...identity, location, origin }, cacheConfig);
  const base = `/v1/projects/${encodeURIComponent(config.projectId)}/locations/${encodeURIComponent(location)}/templates/${encodeURIComponent(config.templateId)}`;
  return {
    async check(ex, phase, messages): Promise<GuardVerdict> {
      const key = cache?.keyOfAll(phase, messages);
      if (key !== undefined && cache!.lookup(phase, key)) return { action: 'pass' };
      const text = messages.map((m) => m.content).join('\n');
      const body = phase === 'request' ? { userPromptData: { text } } : { modelResponseData: { text } };
      const answer = await connection.postJson(ex, `${base}:${phase === 'request' ? 'sanitizeUserPrompt' : 'sanitizeModelResponse'}`, body, 'Model Armor');
      if (modelArmorBlocked(answer)) return { action: 'reject', reason: 'Model Armor filter match' };
      if (key !== undefined) cache!.passed([key]);
      return { action: 'pass' };
    },
  };
}
