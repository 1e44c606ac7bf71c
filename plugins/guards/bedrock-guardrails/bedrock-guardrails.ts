import { parseUpstreamAddress } from 'switchyard/sdk';
import type { CompileContext } from 'switchyard/sdk';
import { guardConnection } from '../../lib/llm-guard/guard-http.ts';
import { checkImageCount } from '../../lib/llm-guard/images.ts';
import { guardVerdictCache } from '../../lib/llm-guard/verdict-cache.ts';
import type { GuardCacheConfig } from '../../lib/llm-guard/verdict-cache.ts';
import type { GuardInstance, GuardMessage, GuardVerdict } from '../../lib/llm/contract.ts';
import { isObj, parseDataUrl } from '../../lib/llm/json.ts';

export interface BedrockGuardrailsConfig {
  guardrailIdentifier: string;
  guardrailVersion: string;
  region: string;
  policies?: Record<string, unknown>;
  host?: string;
  cache?: GuardCacheConfig;
}

/** True when an assessment anywhere says `"action": "BLOCKED"`. */
function blocked(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(blocked);
  if (!isObj(value)) return false;
  if (value.action === 'BLOCKED') return true;
  return Object.values(value).some(blocked);
}

/**
 * Read an ApplyGuardrail answer: `GUARDRAIL_INTERVENED` with a `BLOCKED` assessment rejects; intervened otherwise
 * (anonymized) masks with the returned `outputs[].text`, in order; `NONE` passes. Another action, or an intervention
 * with neither a block nor an output text, throws (the guard fails closed).
 */
export function guardrailVerdict(answer: unknown, messages: readonly GuardMessage[]): GuardVerdict {
  if (!isObj(answer) || typeof answer.action !== 'string') throw new Error('the guardrail answer has no `action`');
  if (answer.action === 'NONE') return { action: 'pass' };
  // Anything else decided nothing the gateway can read (ADR 0181): the guard fails closed rather than pass.
  if (answer.action !== 'GUARDRAIL_INTERVENED') throw new Error(`the guardrail answered the unknown action ${JSON.stringify(answer.action.slice(0, 40))}`);
  if (blocked(answer.assessments ?? [])) return { action: 'reject', reason: 'blocked by the guardrail' };
  const outputs = Array.isArray(answer.outputs) ? answer.outputs : [];
  if (!outputs.some((o) => isObj(o) && typeof o.text === 'string')) throw new Error('the guardrail intervened but neither blocked nor masked (no `outputs` text)');
  const masked = messages.map((m, i) => {
    const out = outputs[i];
    return isObj(out) && typeof out.text === 'string' ? { role: m.role, content: out.text } : { role: m.role, content: m.content };
  });
  return { action: 'mask', messages: masked };
}

/** Formats an ApplyGuardrail image block takes (its bytes only: a URL would have the gateway fetch it). */
const GUARDRAIL_IMAGE_FORMATS: ReadonlyMap<string, string> = new Map([
  ['image/png', 'png'],
  ['image/jpeg', 'jpeg'],
  ['image/jpg', 'jpeg'],
]);

/** An image block for a `data:` URL of a PNG or JPEG image; undefined for anything else (ADR 0181). */
function guardrailImage(url: string): { format: string; source: { bytes: string } } | undefined {
  const parts = parseDataUrl(url);
  const format = parts && GUARDRAIL_IMAGE_FORMATS.get(parts.mediaType.toLowerCase());
  return format && parts.data !== '' ? { format, source: { bytes: parts.data } } : undefined;
}

/**
 * `bedrockGuardrails` (BEHAVIOUR.md §2.9): `POST /guardrail/<id>/version/<version>/apply` on
 * `bedrock-runtime.<region>.amazonaws.com` with `{source: INPUT|OUTPUT, content: [{text: {text}}...]}`, SigV4-signed
 * by the guard's `policies.backendAuth`, or by `aws` with the default credential chain when it has none.
 * `AWS_ENDPOINT_URL_BEDROCK_RUNTIME` (then `AWS_ENDPOINT_URL`) replaces the endpoint, as in the AWS SDKs; `host`
 * replaces both. A request's inline PNG and JPEG images go as `image` blocks after the texts (ADR 0181; at most 16);
 * images by URL and of other types are not sent (the API takes PNG or JPEG bytes only). With `cache` (ADR 0188),
 * text blocks passed within the TTL are not sent again: without qualifiers (the gateway sends none) each block is
 * judged on its own, so the new blocks alone decide as the whole list would. Images are always sent.
 */
export async function compileBedrockGuardrails(config: BedrockGuardrailsConfig, ctx: CompileContext): Promise<GuardInstance> {
  const configured = config.host ?? process.env.AWS_ENDPOINT_URL_BEDROCK_RUNTIME ?? process.env.AWS_ENDPOINT_URL;
  const origin = configured === undefined || configured === '' ? `https://bedrock-runtime.${config.region}.amazonaws.com` : configured;
  if (config.host === undefined && origin === configured) {
    // Read here so that a bad value names the environment rather than a `host` the config does not have.
    const parsed = parseUpstreamAddress(origin, { tls: false });
    if ('message' in parsed) return ctx.fail(`the endpoint from the environment: ${parsed.message}`);
  }
  const connection = await guardConnection(
    ctx,
    origin,
    config.policies,
    { aws: { serviceName: 'bedrock', region: config.region } },
    'the Bedrock guardrail endpoint',
  );
  const { cache: cacheConfig, ...identity } = config;
  const cache = guardVerdictCache(ctx, 'bedrockGuardrails', { ...identity, origin }, cacheConfig);
  const path = `/guardrail/${encodeURIComponent(config.guardrailIdentifier)}/version/${encodeURIComponent(config.guardrailVersion)}/apply`;
  return {
    seesImages: true,
    async check(ex, phase, messages, images = []): Promise<GuardVerdict> {
      checkImageCount(images, 'the guardrail');
      const todo = cache?.unjudged(phase, messages);
      const texts = todo ? todo.send : messages;
      // Image blocks after the texts, so `outputs` (texts only) still line up with the messages sent.
      const content: unknown[] = texts.map((m) => ({ text: { text: m.content } }));
      for (const url of images) {
        const image = guardrailImage(url);
        if (image) content.push({ image });
      }
      // Nothing to send (no text, or every text passed within the cache's TTL, and no image it takes).
      if (content.length === 0) return { action: 'pass' };
      const body = { source: phase === 'request' ? 'INPUT' : 'OUTPUT', content };
      const verdict = guardrailVerdict(await connection.postJson(ex, path, body, 'the Bedrock guardrail'), texts);
      if (!todo) return verdict;
      if (verdict.action === 'pass') cache!.passed(todo.keys);
      if (verdict.action !== 'mask') return verdict;
      // The masked texts sent, back in their places among the cached ones (a mask is not cached).
      const all = messages.map((m) => ({ role: m.role, content: m.content }));
      todo.indexes.forEach((at, k) => (all[at] = verdict.messages[k]!));
      return { action: 'mask', messages: all };
    },
  };
}
