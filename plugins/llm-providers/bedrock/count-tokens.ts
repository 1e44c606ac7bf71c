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
