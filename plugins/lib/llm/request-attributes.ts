// The GenAI span's request attributes (OTel `gen_ai.request.*`): the client's sampling settings, read from its body
// in any client format (Chat, Messages, Responses, Gemini's `generationConfig`, embeddings). Read only for a span
// that records (ADR 0180): on the untouched fast path only these top-level members are picked from the bytes.
import type { SpanAttributes } from 'switchyard/sdk';
import { isObj } from './json.ts';
import type { Obj } from './json.ts';
import { pickTopLevel } from './top-level.ts';

/** The top-level members the attributes come from (picked from a body that was not parsed whole). */
export const REQUEST_ATTRIBUTE_MEMBERS: readonly string[] = Object.freeze([
  'max_completion_tokens',
  'max_tokens',
  'max_output_tokens',
  'temperature',
  'top_p',
  'top_k',
  'frequency_penalty',
  'presence_penalty',
  'stop',
  'stop_sequences',
  'seed',
  'n',
  'encoding_format',
  'generationConfig',
]);

/** Stop sequences are the client's strings: the first few, each cut, so a body does not size the span (ADR 0171). */
const MAX_STOPS = 10;
const MAX_STOP_LENGTH = 256;

const num = (...vs: unknown[]): number | undefined => {
  for (const v of vs) if (typeof v === 'number' && Number.isFinite(v)) return v;
  return undefined;
};

function stops(...vs: unknown[]): string[] | undefined {
  for (const v of vs) {
    if (typeof v === 'string') return [v.slice(0, MAX_STOP_LENGTH)];
    if (Array.isArray(v)) return v.filter((s): s is string => typeof s === 'string').slice(0, MAX_STOPS).map((s) => s.slice(0, MAX_STOP_LENGTH));
  }
  return undefined;
}

/**
 * `gen_ai.request.*` of a client request: each only when the client (or the route's policy) set it. The choice count
 * only when it is not 1, as the conventions ask.
 */
export function genAiRequestAttributes(body: Obj): SpanAttributes {
  const g = isObj(body.generationConfig) ? body.generationConfig : {};
  const count = num(body.n, g.candidateCount);
  return {
    'gen_ai.request.max_tokens': num(body.max_completion_tokens, body.max_tokens, body.max_output_tokens, g.maxOutputTokens),
    'gen_ai.request.temperature': num(body.temperature, g.temperature),
    'gen_ai.request.top_p': num(body.top_p, g.topP),
    'gen_ai.request.top_k': num(body.top_k, g.topK),
    'gen_ai.request.frequency_penalty': num(body.frequency_penalty, g.frequencyPenalty),
    'gen_ai.request.presence_penalty': num(body.presence_penalty, g.presencePenalty),
    'gen_ai.request.stop_sequences': stops(body.stop, body.stop_sequences, g.stopSequences),
    'gen_ai.request.seed': num(body.seed, g.seed),
    'gen_ai.request.choice.count': count !== 1 ? count : undefined,
    'gen_ai.request.encoding_formats': typeof body.encoding_format === 'string' ? [body.encoding_format.slice(0, MAX_STOP_LENGTH)] : undefined,
  };
}

/** The members the attributes come from, out of a request's bytes (a JSON object text) that were not parsed whole. */
export function requestAttributeMembers(raw: Buffer): Obj {
  return pickTopLevel(raw, REQUEST_ATTRIBUTE_MEMBERS) ?? (JSON.parse(raw.toString('utf8')) as Obj);
}
