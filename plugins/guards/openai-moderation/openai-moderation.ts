import type { CompileContext } from 'switchyard/sdk';
import { guardConnection } from '../../lib/llm-guard/guard-http.ts';
import type { GuardInstance, GuardVerdict } from '../../lib/llm/contract.ts';

export interface ModerationGuardConfig {
  model?: string;
  policies?: Record<string, unknown>;
  host?: string;
}

export const DEFAULT_MODERATION_MODEL = 'omni-moderation-latest';
const OPENAI_ORIGIN = 'https://api.openai.com';

/** `flagged` of any result of a moderation answer; throws when the answer has no `results` list. */
export function moderationFlagged(answer: unknown): boolean {
  const results = (answer as { results?: unknown } | null)?.results;
  if (!Array.isArray(results)) throw new Error('the moderation answer has no `results` list');
  return results.some((r) => (r as { flagged?: unknown } | null)?.flagged === true);
}

/**
 * `openAIModeration` (BEHAVIOUR.md §2.9): `POST /v1/moderations` `{"input":[<texts>],"model":...}` to
 * `https://api.openai.com` (or `host`), authenticated by the guard's `policies.backendAuth` (`key`). Any flagged
 * result rejects with the entry's `rejection`. Works on responses too (the reference checks requests only).
 */
export async function compileModerationGuard(config: ModerationGuardConfig, ctx: CompileContext): Promise<GuardInstance> {
  if (!config.policies || !Object.hasOwn(config.policies, 'backendAuth')) {
    ctx.warn('no `policies.backendAuth`: moderation requests carry no API key (set `backendAuth: {key: \u2026}`)', ['policies']);
  }
  const connection = await guardConnection(ctx, config.host ?? OPENAI_ORIGIN, config.policies, undefined, 'the moderation endpoint');
  const model = config.model ?? DEFAULT_MODERATION_MODEL;
  return {
    async check(ex, _phase, messages): Promise<GuardVerdict> {
      const answer = await connection.postJson(ex, '/v1/moderations', { input: messages.map((m) => m.content), model }, 'the moderation endpoint');
      return moderationFlagged(answer) ? { action: 'reject', reason: 'flagged by moderation' } : { action: 'pass' };
    },
  };
}
