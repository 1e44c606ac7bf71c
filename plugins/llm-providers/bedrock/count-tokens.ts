// Anthropic `count_tokens` on Bedrock's CountTokens API (`POST /model/<id>/count-tokens`, ADR 0157): the Messages
// body goes as the InvokeModel body Bedrock's Claude models take, the count comes back in Anthropic's terms.
import { isObj } from '../../lib/llm/json.ts';
import type { Obj } from '../../lib/llm/json.ts';
import type { LlmFormat } from '../../lib/slots/ai.ts';

/** The Anthropic API version Bedrock's InvokeModel takes in the body of Claude requests. */
export const BEDROCK_ANTHROPIC_VERSION = 'bedrock-2023-05-31';

/** Geographies of Bedrock's system-defined inference profiles (`us.anthropic.claude-...`). */
const PROFILE_GEO = /^(?:us|us-gov|eu|apac|jp|au|ca|global)\.(?=[^.]+\.)/;

/**
 * The model id CountTokens takes: foundation-model ids, not inference profiles. A system-defined profile (its id, or
 * its ARN) counts as the model it routes to (the tokenizer is the model's); other ids and ARNs are sent as they are.
 */
export function countTokensModel(model: string): string {
  const profile = /^arn:aws[\w-]*:bedrock:[^:]*:\d*:inference-profile\/(.+)$/.exec(model);
  return (profile ? profile[1]! : model).replace(PROFILE_GEO, '');
}

/**
 * Whether a Bedrock model id names an Anthropic model: a foundation model (`anthropic.claude-...`), a system-defined
 * inference profile (`us.anthropic.claude-...`), or the ARN of either. An application inference profile or a
 * provisioned model's ARN does not say which model it serves: not one.
 */
export function isAnthropicModel(model: string): boolean {
  return model.slice(model.lastIndexOf('/') + 1).replace(PROFILE_GEO, '').startsWith('anthropic.');
}

/** Whether a Bedrock model id (or profile, or their ARN) names an Amazon Nova 2 model, which reasons when asked. */
export function isNova2Model(model: string): boolean {
  return model.slice(model.lastIndexOf('/') + 1).replace(PROFILE_GEO, '').startsWith('amazon.nova-2-');
}

/**
 * The betas Bedrock documents for Claude. It refuses a request naming any other (400 `invalid beta flag`), and
 * Anthropic's SDKs and Claude Code send betas of Anthropic's own API (`token-counting-...`, `oauth-...`) on every call:
 * those are dropped, as the whole header was before (ADR 0164).
 */
const BEDROCK_BETAS: ReadonlySet<string> = new Set([
  'computer-use-2024-10-22',
  'computer-use-2025-01-24',
  'token-efficient-tools-2025-02-19',
  'interleaved-thinking-2025-05-14',
  'output-128k-2025-02-19',
  'dev-full-thinking-2025-05-14',
  'context-1m-2025-08-07',
  'context-management-2025-06-27',
  'effort-2025-11-24',
  'tool-search-tool-2025-10-19',
  'tool-examples-2025-10-29',
]);

/** The betas an Anthropic client asked for (`anthropic-beta: a,b`, possibly repeated) that Bedrock takes, once each. */
export function anthropicBetas(header: string | string[] | undefined): string[] {
  if (header === undefined) return [];
  const out: string[] = [];
  for (const value of Array.isArray(header) ? header : [header]) {
    for (const part of value.split(',')) {
      const beta = part.trim();
      if (BEDROCK_BETAS.has(beta) && !out.includes(beta)) out.push(beta);
    }
  }
  return out;
}

/**
 * A count request's InvokeModel body with the client's betas: InvokeModel takes them in the body (`anthropic_beta`),
 * not as a header. Spliced in front of the text `countRequest` made (a JSON object it serialised), not parsed again,
 * unless the client's body named betas itself (merged then, so the member is not sent twice).
 */
export function withCountBetas(body: Record<string, unknown>, betas: readonly string[]): void {
  const invoke = (body.input as { invokeModel?: { body?: unknown } } | undefined)?.invokeModel;
  if (invoke === undefined || typeof invoke.body !== 'string' || !invoke.body.startsWith('{')) return;
  if (!invoke.body.includes('"anthropic_beta"')) {
    invoke.body = `{"anthropic_beta":${JSON.stringify(betas)},${invoke.body.slice(1)}`;
    return;
  }
  const request = JSON.parse(invoke.body) as Record<string, unknown>;
  const own = Array.isArray(request.anthropic_beta) ? request.anthropic_beta : [];
  request.anthropic_beta = [...new Set([...own, ...betas])];
  invoke.body = JSON.stringify(request);
}

/**
 * A `count_tokens` body as CountTokens' `invokeModel` input: the body without `model` (named in the path), with
 * the version Bedrock wants and the `max_tokens` InvokeModel requires (the count does not depend on it; above a
 * thinking budget, which must be smaller), serialised as a string.
 */
function countRequest(body: Obj): Obj {
  const { model: _model, ...rest } = body;
  const budget = isObj(rest.thinking) && typeof rest.thinking.budget_tokens === 'number' ? rest.thinking.budget_tokens : 0;
  const request = { anthropic_version: BEDROCK_ANTHROPIC_VERSION, max_tokens: budget + 1, ...rest };
  return { input: { invokeModel: { body: JSON.stringify(request) } } };
}

/** CountTokens' `{inputTokens}` as Anthropic's `{input_tokens}`. */
function countResponse(body: Obj): Obj {
  return { input_tokens: typeof body.inputTokens === 'number' ? body.inputTokens : 0 };
}

export const countTokensFormat: LlmFormat = {
  name: 'bedrockCountTokens',
  family: 'aws',
  operation: 'count_tokens',
  from: { anthropicTokenCount: { request: countRequest, response: countResponse } },
};
