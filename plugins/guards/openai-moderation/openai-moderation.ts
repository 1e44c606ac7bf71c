import type { CompileContext, Exchange } from 'switchyard/sdk';
import { GUARD_TIMEOUT_MS, guardConnection } from '../../lib/llm-guard/guard-http.ts';
import { checkImageCount } from '../../lib/llm-guard/images.ts';
import { guardVerdictCache } from '../../lib/llm-guard/verdict-cache.ts';
import type { GuardCacheConfig } from '../../lib/llm-guard/verdict-cache.ts';
import type { GuardInstance, GuardVerdict } from '../../lib/llm/contract.ts';

export interface ModerationGuardConfig {
  model?: string;
  policies?: Record<string, unknown>;
  host?: string;
  cache?: GuardCacheConfig;
}

export const DEFAULT_MODERATION_MODEL = 'omni-moderation-latest';
const OPENAI_ORIGIN = 'https://api.openai.com';

/**
 * `flagged` of any result of a moderation answer. An answer that decides nothing throws (the guard fails closed,
 * ADR 0181): no `results` list, an empty one, or a result without a boolean `flagged` (a proxy's or a stand-in's
 * answer). The count is not checked: OpenAI answers one result per input string, some compatible services one for
 * all of them.
 */
export function moderationFlagged(answer: unknown): boolean {
  const results = (answer as { results?: unknown } | null)?.results;
  if (!Array.isArray(results)) throw new Error('the moderation answer has no `results` list');
  if (results.length === 0) throw new Error('the moderation answer has no results');
  let flagged = false;
  for (const r of results) {
    const f = (r as { flagged?: unknown } | null)?.flagged;
    if (typeof f !== 'boolean') throw new Error('a moderation result has no boolean `flagged`');
    flagged ||= f;
  }
  return flagged;
}

/** Moderation calls for one request's images in flight at once. */
const IMAGE_CALLS_AT_ONCE = 4;

/**
 * `openAIModeration` (BEHAVIOUR.md §2.9): `POST /v1/moderations` `{"input":[<texts>],"model":...}` to
 * `https://api.openai.com` (or `host`), authenticated by the guard's `policies.backendAuth` (`key`). Any flagged
 * result rejects with the entry's `rejection`. Works on responses too (the reference checks requests only).
 * An `omni-moderation` model also judges a request's images (ADR 0181): one call per image, as the endpoint takes
 * one image per request (`too_many_images`), `{"input":[{"type":"image_url","image_url":{"url":...}}]}`; an image the
 * service cannot read (a URL it cannot fetch) is its error, so the guard fails (503). With `cache` (ADR 0188), texts
 * passed within the TTL are not sent again: the endpoint judges each input string on its own (one result each), so
 * a call with the new texts only decides as the whole list would. Images are always sent.
 */
export async function compileModerationGuard(config: ModerationGuardConfig, ctx: CompileContext): Promise<GuardInstance> {
  if (!config.policies || !Object.hasOwn(config.policies, 'backendAuth')) {
    ctx.warn('no `policies.backendAuth`: moderation requests carry no API key (set `backendAuth: {key: \u2026}`)', ['policies']);
  }
  const connection = await guardConnection(ctx, config.host ?? OPENAI_ORIGIN, config.policies, undefined, 'the moderation endpoint');
  const model = config.model ?? DEFAULT_MODERATION_MODEL;
  const { cache: cacheConfig, ...identity } = config;
  const cache = guardVerdictCache(ctx, 'openAIModeration', { ...identity, model, host: config.host ?? OPENAI_ORIGIN }, cacheConfig);
  const moderate = async (ex: Exchange, input: unknown[]): Promise<boolean> => moderationFlagged(await connection.postJson(ex, '/v1/moderations', { input, model }, 'the moderation endpoint'));
  return {
    // The text-only models (`text-moderation-*`) take no images.
    seesImages: model.startsWith('omni-moderation'),
    async check(ex, phase, messages, images = []): Promise<GuardVerdict> {
      checkImageCount(images, 'moderation');
      const todo = cache?.unjudged(phase, messages);
      const texts = todo ? todo.send : messages;
      const calls: (() => Promise<boolean>)[] = images.map((url) => () => moderate(ex, [{ type: 'image_url', image_url: { url } }]));
      if (texts.length > 0) calls.unshift(() => moderate(ex, texts.map((m) => m.content)));
      const flagged = await anyOf(calls, IMAGE_CALLS_AT_ONCE);
      if (flagged) return { action: 'reject', reason: 'flagged by moderation' };
      // Every text and image passed: the texts are remembered (a rejection is not, whichever input it was for).
      if (todo) cache!.passed(todo.keys);
      return { action: 'pass' };
    },
  };
}

/**
 * Run the calls, `atOnce` at a time; true as soon as one says true (the rest are not started), or false. A failed
 * call stops the rest from starting too (each is paid for), but a flag found by a call in flight still decides: the
 * error is thrown only once every call started has settled without one. None is started after the guard's time (the
 * policy gave up on the verdict by then): that throws, as a timeout.
 */
async function anyOf(calls: readonly (() => Promise<boolean>)[], atOnce: number): Promise<boolean> {
  const deadline = performance.now() + GUARD_TIMEOUT_MS;
  let next = 0;
  let found = false;
  let failed = false;
  let failure: unknown;
  const worker = async (): Promise<void> => {
    try {
      while (!found && !failed && next < calls.length) {
        if (performance.now() > deadline) throw new Error(`moderation did not judge every input within ${GUARD_TIMEOUT_MS / 1000}s`);
        if (await calls[next++]!()) found = true;
      }
    } catch (err) {
      if (!failed) failure = err;
      failed = true;
    }
  };
  await Promise.all(Array.from({ length: Math.min(atOnce, calls.length) }, worker));
  if (found) return true;
  if (failed) throw failure;
  return false;
}
