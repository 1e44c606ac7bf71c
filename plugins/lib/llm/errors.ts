import { localReply } from 'switchyard/sdk';
import type { Reply } from 'switchyard/sdk';
import { anthropicErrorType, openAiErrorType } from './completions-messages.ts';
import { isObj } from './json.ts';

/** A gateway-made LLM error (BEHAVIOUR.md §4.6): text/plain `failed to process LLM request: …`. */
export function llmRequestError(status: number, detail: string): Reply {
  return localReply(status, `failed to process LLM request: ${detail}`, { 'content-type': 'text/plain' });
}

/** A gateway-made LLM error about the provider's answer: text/plain `failed to process LLM response: …`. */
export function llmResponseError(status: number, detail: string): Reply {
  return localReply(status, `failed to process LLM response: ${detail}`, { 'content-type': 'text/plain' });
}

/** The `type` and `message` of an error body in any provider's shape (OpenAI, Anthropic, AWS, Google). */
export function parseUpstreamError(text: string, headers?: Record<string, unknown>): { type?: string; message: string } {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return { message: text.trim() || 'upstream error' };
  }
  if (Array.isArray(v)) v = v[0]; // Google's compatibility API sometimes wraps the error in a list
  if (isObj(v)) {
    const e = isObj(v.error) ? v.error : v;
    const message = typeof e.message === 'string' ? e.message : typeof e.Message === 'string' ? e.Message : typeof v.message === 'string' ? v.message : text;
    let type = typeof e.type === 'string' ? e.type : typeof e.status === 'string' ? e.status : undefined;
    const awsType = headers?.['x-amzn-errortype'];
    if (type === undefined && typeof awsType === 'string') type = awsType.split(':')[0];
    return { type, message };
  }
  return { message: text.trim() || 'upstream error' };
}

/** An error body in the client's API shape. */
export function clientErrorBody(family: 'openai' | 'anthropic', status: number, info: { type?: string; message: string }): string {
  if (family === 'anthropic') return JSON.stringify({ type: 'error', error: { type: info.type ?? anthropicErrorType(status), message: info.message } });
  return JSON.stringify({ error: { message: info.message, type: info.type ?? openAiErrorType(status), param: null, code: null } });
}
