// `type: tokens` descriptors (BEHAVIOUR.md §8.2, docs/llm.md "Token rate limits", ADR 0024): checked when the `ai`
// backend knows the prompt estimate, with `hits_addend` = the estimate; once the answer has ended, a second call
// adds the rest of the real usage. Linked to the backend through the SDK's `llmTokenLimiters` and `llmCall`.
import { addLlmTokenLimiter, defineAttribute, llmCall } from 'switchyard/sdk';
import type { ConfigPath, Exchange, LlmCallQuote, LlmTokenLimiter, LlmTokenUsage, PolicyInstance, Reply } from 'switchyard/sdk';
import { unaryCall } from '../../lib/envoy-grpc/envoy-grpc.ts';
import { checkLimits } from './check.ts';
import type { RlsCaller } from './check.ts';
import { buildDescriptors } from './rls.ts';
import type { CompiledDescriptor, DescriptorMessage } from './rls.ts';

/** `hits_addend` is a uint32. */
const MAX_ADDEND = 0xffff_ffff;

/** What one request sent at reservation time, for the settling call. */
interface Sent {
  readonly list: DescriptorMessage[];
  readonly hits: number;
}

const SENT = defineAttribute<Sent>('remoteRateLimit.tokensSent');
/** The response headers of the request descriptors' allowed call, held until the token descriptors' call allows. */
const HELD = defineAttribute<[string, string][]>('remoteRateLimit.heldHeaders');

/** The request descriptors' check; `hold` takes the response headers of an allowed call instead of the queue. */
export type RequestCheck = (ex: Exchange, hold?: [string, string][]) => Promise<Reply | undefined> | Reply | undefined;

/**
 * `llm` as token descriptors see it (ADR 0169): the call the backend is about to make, which it publishes only once
 * made. The model is the one the client named (a virtual model's name), as `ai.virtualModels` conditions see it.
 */
function callAboutToBeMade(quote: LlmCallQuote, estimate: number): Record<string, unknown> {
  const requestModel = quote.virtualModel ?? quote.model;
  return { llm: { provider: quote.provider, ...(requestModel === undefined ? {} : { requestModel }), promptTokens: BigInt(Math.max(0, Math.round(estimate))) } };
}

/**
 * The policy instance of a `remoteRateLimit` with token descriptors (and maybe request descriptors, checked in the
 * request hook as before). The token descriptors are evaluated and sent when the backend reserves, in a call of their
 * own, so the request descriptors are not charged the token count.
 */
export function remoteTokenLimits(rls: RlsCaller, descriptors: readonly CompiledDescriptor[], requests: RequestCheck | undefined, typePath: ConfigPath): PolicyInstance {
  const limiter: LlmTokenLimiter = {
    async reserve(ex: Exchange, estimate: number, quote?: LlmCallQuote): Promise<Reply | undefined> {
      // A failover to another backend calls again (ADR 0039): the first reservation stands.
      if (ex.get(SENT)) return undefined;
      const list = buildDescriptors(descriptors, ex, quote && callAboutToBeMade(quote, estimate));
      if (list.length === 0) return undefined;
      const hits = Math.min(MAX_ADDEND, Math.max(0, Math.round(estimate)));
      // The request's hits_addend 0 means one hit; each descriptor's own 0 means "check only" (a token count, an
      // empty prompt: ADR 0173). The request's stays for a service that predates the descriptor's field.
      const checked = list.map((d) => ({ ...d, hits_addend: { value: hits } }));
      const refused = await checkLimits(rls, ex, checked, hits);
      // A refusal's headers are its own, not those the request descriptors' allowed call held.
      if (refused) ex.get(HELD)?.splice(0);
      else ex.set(SENT, { list, hits });
      return refused;
    },
    /**
     * A realtime session's response (ADR 0190): its tokens sent as the descriptors' hits; the service's refusal (the
     * limit reached) ends the session.
     */
    async charge(ex: Exchange, usage: LlmTokenUsage): Promise<Reply | undefined> {
      const sent = ex.get(SENT);
      const used = Math.min(MAX_ADDEND, (usage.inputTokens ?? 0) + (usage.outputTokens ?? 0));
      if (!sent || used === 0) return undefined;
      return checkLimits(rls, ex, sent.list.map((d) => ({ ...d, hits_addend: { value: used } })), used);
    },
  };
  return {
    async onRequest(ex) {
      if (requests) {
        const held: [string, string][] = [];
        const denied = await requests(ex, held);
        if (denied) return denied;
        if (held.length > 0) ex.set(HELD, held);
      }
      addLlmTokenLimiter(ex, limiter);
      return undefined;
    },
    onResponse(ex, reply) {
      // Set on the reply, so the token descriptors' queued headers (their call came later) still replace them.
      const held = ex.get(HELD);
      if (held) for (const [name, value] of held) reply.headers[name] = value;
    },
    onLog(ex) {
      const sent = ex.get(SENT);
      if (!sent) return;
      const usage = ex.get(llmCall)?.usage;
      // The service cannot give hits back: an answer smaller than the estimate settles nothing.
      const rest = (usage?.inputTokens ?? 0) + (usage?.outputTokens ?? 0) - sent.hits;
      if (rest <= 0) return;
      // Fire and forget, after the answer: the client is not waiting, and the request is over (no abort signal).
      unaryCall(rls.client, 'ShouldRateLimit', { domain: rls.domain, descriptors: sent.list, hits_addend: Math.min(MAX_ADDEND, rest) }, rls.timeoutMs).catch((err: unknown) =>
        rls.failures.failed('rate limit service failed to record LLM token usage', { error: (err as Error)?.message ?? String(err) }),
      );
    },
    requiresBackendProtocol: {
      protocol: 'llm',
      message:
        '`type: tokens` counts LLM tokens, which only an `ai` backend reports, and this route has another backend (or none): use `type: requests` here, or put the descriptor on a route whose backends are `ai` backends',
      path: typePath,
    },
  };
}
