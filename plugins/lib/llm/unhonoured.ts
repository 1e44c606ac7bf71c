// Request fields a translated request cannot carry that change what the client gets back (ADR 0135): asked of a
// provider whose API has no equivalent, they would be dropped and the answer would silently lack them.
import { isObj } from './json.ts';
import type { Obj } from './json.ts';

/** Wire formats a JSON answer format reaches (Gemini's `responseMimeType`/`responseSchema`, OpenAI's own). */
const JSON_FORMATS: ReadonlySet<string> = new Set(['completions', 'responses', 'geminiNative']);

/** What each refused field asks for, as the refusal says it. */
const ASKS: Readonly<Record<string, string>> = {
  n: 'several choices',
  logprobs: 'log probabilities',
  top_logprobs: 'log probabilities',
  include: 'log probabilities',
  audio: 'an audio answer',
  modalities: 'an audio answer',
  response_format: 'a JSON answer format',
  'text.format': 'a JSON answer format',
};

const positive = (v: unknown): boolean => typeof v === 'number' && v > 0;
const jsonFormat = (f: unknown): boolean => isObj(f) && f.type !== undefined && f.type !== 'text';

/**
 * The fields of a `client` request translated to `wire` that the translation cannot carry and that ask for more than
 * the default answer (`n: 1`, `logprobs: false`, `response_format: {type: "text"}` ask for nothing and pass), in
 * request order of checking.
 */
export function unhonouredFields(client: string, wire: string, body: Obj): string[] {
  const out: string[] = [];
  if (client === 'completions') {
    if (typeof body.n === 'number' && body.n > 1) out.push('n');
    if (body.logprobs === true) out.push('logprobs');
    if (positive(body.top_logprobs)) out.push('top_logprobs');
    if (Array.isArray(body.modalities) && body.modalities.includes('audio')) out.push('modalities');
    if (isObj(body.audio)) out.push('audio');
    if (jsonFormat(body.response_format) && !JSON_FORMATS.has(wire)) out.push('response_format');
  } else if (client === 'responses') {
    if (positive(body.top_logprobs)) out.push('top_logprobs');
    if (Array.isArray(body.include) && body.include.includes('message.output_text.logprobs')) out.push('include');
    if (isObj(body.text) && jsonFormat(body.text.format) && !JSON_FORMATS.has(wire)) out.push('text.format');
  }
  return out;
}

/** The refusal's text: each field named, with what it asks for. */
export function unhonouredMessage(provider: string, fields: readonly string[]): string {
  const named = fields.map((f) => `\`${f}\` (${ASKS[f] ?? 'unsupported'})`).join(', ');
  return `the ${provider} provider's API has no equivalent of ${named}; send the request without ${fields.length > 1 ? 'them' : 'it'}, or set \`dropUnsupportedParams\` on the \`ai\` backend to drop such fields`;
}
